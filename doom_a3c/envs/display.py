"""The screen a game's window goes to: whether there is one, told before any engine starts.

ViZDoom's engine, ale-py and pygame open their windows on the X display that DISPLAY names (a desktop's, or a
virtual one such as Xvfb's). Without one an engine started with a visible window fails late and unclearly, so a
window is refused up front with one line saying why.
"""
from __future__ import annotations

import os
import socket
from typing import Mapping

X_SOCKETS = "/tmp/.X11-unix"  # where a local X server listens: display :N is the socket X<N>


def local_display_number(display: str) -> int | None:
    """N of a local display name (":1", ":1.0", "unix:1"), None for a remote one ("host:10.0") or a bad name."""
    host, _, rest = display.partition(":")
    number = rest.split(".")[0]
    if host not in ("", "unix") or not number.isdigit():
        return None
    return int(number)


def display_problem(environ: Mapping[str, str] | None = None) -> str | None:
    """Why no window can open here (DISPLAY unset, or naming a local X server that takes no connection); None when
    a window can open, as far as a connection to the server's socket tells (a remote display is taken on trust)."""
    environ = os.environ if environ is None else environ
    display = environ.get("DISPLAY", "").strip()
    if not display:
        return "no display to open a window on (DISPLAY is not set): run it on a desktop, or under a virtual " \
               "display (xvfb-run -s '-screen 0 1280x720x24' python play.py ...)"
    number = local_display_number(display)
    if number is not None and not x_server_listens(number):
        return f"no X server is running on DISPLAY {display} (nothing answers on {X_SOCKETS}/X{number})"
    return None


def x_server_listens(number: int, seconds: float = 2.0) -> bool:
    """Whether a local X server takes connections for display :`number`, tried as an X client does: its socket in
    the abstract namespace (Linux), then its socket file."""
    path = os.path.join(X_SOCKETS, f"X{number}")
    for address in ("\0" + path, path):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(seconds)
            try:
                probe.connect(address)
                return True
            except OSError:
                continue
    return False


def show_windows() -> None:
    """Let the games made from now on open real windows. Importing the gymnasium registry sets SDL's dummy video
    driver for this process and the engines it starts (CartPole's rgb_array rendering prints errors without a
    desktop otherwise); a window under it is never shown, and ViZDoom's engine crashes at its start."""
    import doom_a3c.envs.gym.registry  # noqa: F401 - its headless default set now, so that it is taken back below

    if os.environ.get("SDL_VIDEODRIVER") == "dummy":
        del os.environ["SDL_VIDEODRIVER"]
