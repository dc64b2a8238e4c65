"""A run from start to end: its config resolved from flags, presets and a saved checkpoint; the coordinator,
training, evaluation during training, summaries and recordings; and a trained checkpoint as an agent, played
or exported. May import every layer below it.
"""
