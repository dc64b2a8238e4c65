"""Environments behind one interface (interface.py): ViZDoom games (doom/), gymnasium and Atari games (gym/), the
frame stack, and a worker's batch of games, in this process or in child processes under a watchdog. Imports only
the base (config, errors).
"""
