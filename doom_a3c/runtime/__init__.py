"""What a run keeps between its parts and across restarts: the run's state and counters, its file names and atomic
writes, and checkpoints. Imports only the base.
"""
