"""TensorFlow and Keras for every module that needs them, imported once with TF's load-time notices kept off
stderr (they are printed again if the import fails): `from doom_a3c.quiet_import import tf, keras`.

Nothing else in the package imports TensorFlow, so a bad flag is reported without the seconds its import takes.
"""
from __future__ import annotations

import os
import sys
import tempfile


def import_tensorflow_quietly() -> None:
    """The notices come from C++ before TF's log level is read, so only a file-descriptor redirect hides them."""
    if "tensorflow" in sys.modules:
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    # oneDNN's kernels, which TensorFlow turns on by itself only on CPUs with AVX-512 VNNI, BF16 or AMX: on an AVX2
    # EPYC they make the Atari network's gradient 2.5 times as fast (the 8x8/4 convolution's filter gradient above
    # all; docs/measuring/speed-and-memory.md#onednn-on-every-cpu). A user's own setting wins.
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    sys.stderr.flush()
    saved_fd = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow  # noqa: F401
        except BaseException:
            os.dup2(saved_fd, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved_fd, 2)
            os.close(saved_fd)


import_tensorflow_quietly()

import keras  # noqa: E402  (after TensorFlow: Keras 3 loads it as its backend)
import tensorflow as tf  # noqa: E402

__all__ = ["keras", "tf"]
