"""The actor-critic network: conv or dense torso, LSTM, policy heads and value, with its own layers, its fast LSTM
sequence and the choice of precision.
"""
