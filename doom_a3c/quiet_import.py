"""Import TensorFlow with its load-time notices kept off stderr (they are printed again if the import fails)."""
from __future__ import annotations

import os
import sys
import tempfile


def import_tensorflow_quietly() -> None:
    """The notices come from C++ before TF's log level is read, so only a file-descriptor redirect hides them."""
    if "tensorflow" in sys.modules:
        return
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
