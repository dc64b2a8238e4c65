#!/usr/bin/env python
"""Watch or export a trained agent: `python play.py --model models/last.ckpt --out /tmp/result` (the same as the
installed `doom-a3c-play`)."""
import sys

from doom_a3c.cli import play_main

if __name__ == "__main__":
    sys.exit(play_main())
