"""Learning-rate annealing: the A3C paper's linear decay to 0 over the training budget."""
from __future__ import annotations


def annealed_learning_rate(base: float, step: int, total_steps: int) -> float:
    """base * (1 - step / total_steps), never below 0; `total_steps` <= 0 means no annealing."""
    if total_steps <= 0:
        return float(base)
    return float(base) * max(0.0, 1.0 - max(step, 0) / total_steps)
