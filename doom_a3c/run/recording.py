"""Videos of episodes (GIF, MP4 or both), written under a temporary name and renamed into place.

Small screens are upscaled (nearest neighbour, a whole factor) towards MIN_VIDEO_WIDTH pixels: ViZDoom's
160x120 is a stamp on a modern screen. MP4 goes through imageio's ffmpeg plugin (the `imageio-ffmpeg` package
ships its own ffmpeg binary); a run that hears the game (--audio) gives its MP4 the game's sound as an AAC track,
muxed by that ffmpeg from a WAV of the episode's samples.
"""
from __future__ import annotations

import os
from typing import NamedTuple

import cv2
import imageio.v3 as iio
import numpy as np
from scipy.io import wavfile


class Soundtrack(NamedTuple):
    """An episode's sound: int16 samples [N, 2] (left, right) at `sampling_rate` a second, from the video's first
    frame on."""

    samples: np.ndarray
    sampling_rate: int

    def fitted(self, seconds: float) -> "Soundtrack":
        """Cut or padded with silence to last exactly `seconds` (the video's length)."""
        count = round(seconds * self.sampling_rate)
        samples = self.samples[:count]
        if len(samples) < count:
            samples = np.concatenate([samples, np.zeros((count - len(samples), 2), np.int16)])
        return Soundtrack(np.ascontiguousarray(samples, np.int16), self.sampling_rate)

VIDEO_FORMATS = ("gif", "mp4", "both")
MIN_VIDEO_WIDTH = 320
CAPTION_HEIGHT = 16  # pixels of the band under an upscaled frame that holds its caption


def upscaled(frames: list[np.ndarray], min_width: int = MIN_VIDEO_WIDTH) -> np.ndarray:
    """[N, H, W, 3] uint8 frames, enlarged by the largest whole factor that keeps them at most min_width wide
    (160 -> 320; CartPole's 300 stays, its half-size rendering is there to keep GIFs fast to encode)."""
    stack = np.stack(frames)
    factor = min_width // stack.shape[2]
    if factor <= 1:
        return stack
    return np.stack([cv2.resize(f, (f.shape[1] * factor, f.shape[0] * factor), interpolation=cv2.INTER_NEAREST)
                     for f in stack])


def captioned(stack: np.ndarray, captions: list[str] | None) -> np.ndarray:
    """[N, H, W, 3] frames with a black band of CAPTION_HEIGHT pixels under each holding its caption in white
    (a deathmatch's frags, deaths and place as they stand); the frames themselves untouched. None: no band."""
    if captions is None:
        return stack
    if len(captions) != len(stack):
        raise ValueError(f"{len(captions)} captions for {len(stack)} frames")
    band = np.zeros((len(stack), CAPTION_HEIGHT, stack.shape[2], 3), np.uint8)
    for image, text in zip(band, captions):
        cv2.putText(image, text, (4, CAPTION_HEIGHT - 4), cv2.FONT_HERSHEY_PLAIN, 1.0, (255, 255, 255), 1,
                    cv2.LINE_AA)
    return np.concatenate([stack, band], axis=1)


def write_gif(path: str, frames: list[np.ndarray], seconds_per_frame: float,
              captions: list[str] | None = None) -> str:
    """Write RGB frames [H, W, 3] uint8 as a looping GIF that plays at game speed (as close as GIF's
    10 ms clock allows: Doom's tics at 30 ms instead of 28.6), each frame's caption under it where given."""
    if not frames:
        raise ValueError("no frames to write")
    tmp = f"{path}.tmp-{os.getpid()}"
    # GIF counts in centiseconds (Pillow truncates): a Doom tic's 28.6 ms is written as 30, not 20.
    duration = 10 * max(1, round(seconds_per_frame * 100))
    iio.imwrite(tmp, captioned(upscaled(frames), captions), extension=".gif", duration=duration, loop=0)
    os.replace(tmp, path)
    return path


def write_mp4(path: str, frames: list[np.ndarray], seconds_per_frame: float,
              captions: list[str] | None = None, sound: Soundtrack | None = None) -> str:
    """Write RGB frames [H, W, 3] uint8 as an H.264 MP4 at 1 / seconds_per_frame frames per second, each
    frame's caption under it where given; with `sound`, an AAC track of it, as long as the frames."""
    if not frames:
        raise ValueError("no frames to write")
    stack = captioned(upscaled(frames), captions)
    # H.264 in yuv420p needs even sides: pad by a black row/column rather than let the plugin rescale.
    pad_h, pad_w = stack.shape[1] % 2, stack.shape[2] % 2
    if pad_h or pad_w:
        stack = np.pad(stack, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)))
    tmp = f"{path}.tmp-{os.getpid()}.mp4"  # the plugin picks its container from the extension
    wav = f"{path}.tmp-{os.getpid()}.wav"
    track = {}
    if sound is not None:
        fitted = sound.fitted(len(stack) * seconds_per_frame)
        wavfile.write(wav, fitted.sampling_rate, fitted.samples)
        track = {"audio_path": wav, "audio_codec": "aac"}
    try:
        iio.imwrite(tmp, stack, plugin="FFMPEG", fps=1.0 / seconds_per_frame, codec="libx264", macro_block_size=1,
                    **track)
    finally:
        if track:
            os.remove(wav)
    os.replace(tmp, path)
    return path


def write_video(stem: str, frames: list[np.ndarray], seconds_per_frame: float, video: str = "gif",
                captions: list[str] | None = None, sound: Soundtrack | None = None) -> list[str]:
    """`stem`.gif, `stem`.mp4 or both (`video` one of VIDEO_FORMATS), with a caption under each frame where
    `captions` are given, and the MP4 with `sound` where given (a GIF has none); returns the paths written."""
    if video not in VIDEO_FORMATS:
        raise ValueError(f"video must be one of {VIDEO_FORMATS}, got {video!r}")
    paths = []
    if video in ("gif", "both"):
        paths.append(write_gif(f"{stem}.gif", frames, seconds_per_frame, captions))
    if video in ("mp4", "both"):
        paths.append(write_mp4(f"{stem}.mp4", frames, seconds_per_frame, captions, sound))
    return paths
