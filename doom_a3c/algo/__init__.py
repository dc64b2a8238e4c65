"""The A3C algorithm, whatever runs it: the actor-critic model (model/), returns and advantages, losses, gradients,
optimizers, normalisation, schedules, exploration, the rollout, the local copy and the learner. Imports the base,
envs and runtime; never a mode.
"""
