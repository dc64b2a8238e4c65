"""GIFs of episodes, written under a temporary name and renamed into place."""
from __future__ import annotations

import os

import imageio.v3 as iio
import numpy as np


def write_gif(path: str, frames: list[np.ndarray], seconds_per_frame: float) -> str:
    """Write RGB frames [H, W, 3] uint8 as a looping GIF that plays at game speed."""
    if not frames:
        raise ValueError("no frames to write")
    tmp = f"{path}.tmp-{os.getpid()}"
    iio.imwrite(tmp, np.stack(frames), extension=".gif", duration=int(round(seconds_per_frame * 1000)), loop=0)
    os.replace(tmp, path)
    return path
