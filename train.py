#!/usr/bin/env python
"""Train an A3C agent: `python train.py --scenario basic.wad` (the same as the installed `doom-a3c-train`)."""
import sys

from doom_a3c.cli import train_main

if __name__ == "__main__":
    sys.exit(train_main())
