#!/usr/bin/env python
"""Make a play.py GIF small enough for the README's docs/ (about 1 MB): keep every Nth frame, at most S seconds of
play (from the start, or from second T with --start T), shown at the game's own speed (each kept frame lasts N times
as long), each frame scaled to W pixels wide with --width W.

    python benchmarks/tools/shrink_gif.py /tmp/center/episode_001.gif docs/gifs/defend_the_center.gif \
        --every 2 --seconds 20
"""
from __future__ import annotations

import argparse
import os
import sys

import imageio.v3 as iio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("--every", type=int, default=2, help="keep one frame in N")
    parser.add_argument("--seconds", type=float, default=20.0, help="at most this much of the episode")
    parser.add_argument("--start", type=float, default=0.0, help="from this second of the episode")
    parser.add_argument("--width", type=int, default=0, help="scale each frame to this width (0: as played)")
    args = parser.parse_args()
    frames = iio.imread(args.source, index=None)  # [F, H, W, 3]
    frame_ms = iio.immeta(args.source, index=0).get("duration", 114)  # play.py: the game's time per step
    first = int(args.start * 1000 / frame_ms)
    kept = frames[first: first + max(1, int(args.seconds * 1000 / frame_ms))][:: args.every]
    if args.width:
        import cv2

        height = round(kept.shape[1] * args.width / kept.shape[2])
        kept = [cv2.resize(frame, (args.width, height), interpolation=cv2.INTER_AREA) for frame in kept]
    tmp = f"{args.target}.tmp-{os.getpid()}.gif"
    iio.imwrite(tmp, kept, duration=frame_ms * args.every, loop=0)
    os.replace(tmp, args.target)
    print(f"{args.target}: {len(kept)} of {len(frames)} frames, {os.path.getsize(args.target):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
