"""Gymnasium envs behind the environment interface: the registry of ids and kinds, Atari games, image and vector
envs. Never imports envs/doom/.
"""
