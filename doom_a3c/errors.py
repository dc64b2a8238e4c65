"""The project's shared exceptions, raised in one layer and caught in another: a bad value (one line on
stderr, exit 2), an unreadable checkpoint, a stopped run, a lost game process.
"""
from __future__ import annotations


class ConfigError(ValueError):
    """A user-facing configuration mistake: printed as one line, never as a traceback."""


def one_line(error: BaseException) -> str:
    """The first line of an error's text, for a one-line message (Ray's errors carry whole remote
    tracebacks, an engine's several lines)."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, BaseException) and cause is not error:
        return one_line(cause)
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:300]


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupt, or made for something else: a one-line user error."""


class Stopped(Exception):
    """The run stopped while this thread was waiting (on a queue, or on a game that does not answer): the thread
    ends without an error."""


class GameProcessLost(RuntimeError):
    """A game process died, or did not answer within the watchdog's bound (a stalled or deadlocked engine): it was
    killed and replaced with all its games (envs/process_batch.py)."""
