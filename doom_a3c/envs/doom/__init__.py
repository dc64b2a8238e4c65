"""ViZDoom: one game behind the environment interface, its action sets, and the .cfg/.wad files a scenario names.
Never imports envs/gym/.
"""
