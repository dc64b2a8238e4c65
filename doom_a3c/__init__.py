"""doom_a3c: A3C agents that learn ViZDoom, Atari and CartPole from pixels, in TensorFlow 2.

Importing the package imports TensorFlow once, quietly: TF 2.21 writes oneDNN and CPU-feature notices
to stderr while it loads (before its log level applies), and a user error must stay one line on stderr.
"""
import os as _os

_os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from doom_a3c.quiet_import import import_tensorflow_quietly  # noqa: E402

import_tensorflow_quietly()
