"""The files of a run folder, without TensorFlow: their names, the user error for a bad checkpoint, writes that
never leave a half-written file, and the check that a folder can be written. Kept apart from
doom_a3c/runtime/checkpoint.py so that a bad flag or folder is reported before TensorFlow's seconds-long import."""
from __future__ import annotations

import os
from pathlib import Path

from doom_a3c.errors import CheckpointError

LAST = "last.ckpt"


BEST = "best.ckpt"  # the best evaluation's weights (doom_a3c/run/periodic_evaluation.py)


BEST_DIR = "best"  # the numbered checkpoints behind best.ckpt, with their own `checkpoint` state file
EVAL_CSV = "eval.csv"
CONFIG_FILE = "config.json"


def atomic_write_text(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def ensure_writable_dir(path: str, what: str) -> None:
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
        probe = os.path.join(path, f".write-test-{os.getpid()}")
        with open(probe, "w"):
            pass
        os.remove(probe)
    except OSError as error:
        raise CheckpointError(f"{what} {path} is not writable: {error.strerror or error}") from None
