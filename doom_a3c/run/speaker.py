"""The sound the agent hears, played on this machine's sound device while a window shows it play (`play.py --window`
of a run with --audio).

ViZDoom's engine sends its sound to the audio buffer or to the device, never to both, and the agent needs the
buffer: each step's buffer is played here instead, through SDL's mixer (pygame-ce, which ViZDoom depends on), one
step after another on one channel. A machine without a sound device (a server, a container) plays the window silent,
and says so once.
"""
from __future__ import annotations

import os
import time

import numpy as np

from doom_a3c.errors import one_line


class Speaker:
    """Plays [samples, 2] int16 buffers at `sampling_rate` in the order given, each after the one before it."""

    def __init__(self, sampling_rate: int):
        self.problem: str | None = None
        self._channel = None
        self._pending: list[np.ndarray] = []  # steps' sounds not yet handed to the channel
        os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")
        if os.environ.get("SDL_AUDIODRIVER") == "dummy":  # the headless default the gymnasium registry sets
            del os.environ["SDL_AUDIODRIVER"]
        try:
            import pygame

            # allowedchanges=0: SDL converts to the device's own format, so the buffers play at their own rate
            pygame.mixer.init(frequency=sampling_rate, size=-16, channels=2, buffer=512, allowedchanges=0)
            self._pygame = pygame
            self._channel = pygame.mixer.Channel(0)
        except Exception as error:  # noqa: BLE001 - pygame.error, or no pygame: the window plays silent
            self.problem = one_line(error)

    @property
    def playing(self) -> bool:
        """Whether a sound device took the sound."""
        return self._channel is not None

    def play(self, samples: np.ndarray) -> None:
        """Play one step's sound after what is playing: queued at once where the channel has room for it, else kept
        to go with the next step's (the channel queues one sound at a time)."""
        if self._channel is None:
            return
        self._pending.append(np.ascontiguousarray(samples, np.int16))
        if self._channel.get_queue() is None:
            self._send()

    def _send(self) -> None:
        sound = self._pygame.mixer.Sound(buffer=np.concatenate(self._pending).tobytes())
        self._pending = []
        if self._channel.get_busy():
            self._channel.queue(sound)
        else:
            self._channel.play(sound)

    def close(self, seconds: float = 2.0) -> None:
        """Let what is kept and queued play out (at most `seconds`), then release the device."""
        if self._channel is None:
            return
        deadline = time.monotonic() + seconds
        while (self._pending or self._channel.get_busy()) and time.monotonic() < deadline:
            if self._pending and self._channel.get_queue() is None:
                self._send()
            time.sleep(0.02)
        self._pygame.mixer.quit()
        self._channel = None
