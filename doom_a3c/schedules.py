"""Learning-rate annealing: the A3C paper's linear decay to 0 over the training budget."""
from __future__ import annotations


def annealed_learning_rate(base: float, step: int, total_steps: int) -> float:
    """base * (1 - step / total_steps), never below 0; `total_steps` <= 0 means no annealing."""
    if total_steps <= 0:
        return float(base)
    return float(base) * max(0.0, 1.0 - max(step, 0) / total_steps)


def learning_rate_at(config, env_steps: int) -> float:
    """The learning rate a TrainConfig asks for after `env_steps` steps: --learning-rate, annealed to 0
    over --max-steps with --lr-schedule linear. One rule for the threaded and the Ray trainers."""
    if config.lr_schedule == "linear":
        return annealed_learning_rate(config.learning_rate, env_steps, config.max_steps)
    return float(config.learning_rate)
