"""ViZDoom's engines as processes: each starts through engine_leash.sh, which has the kernel kill it when the
process that started it dies, and a game process's whole tree (its engines, and their shared memory) can be killed.
"""
from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path

ENGINE_LEASH = Path(__file__).with_name("engine_leash.sh")
_leash_warned = False


def leash_engine(game, vizdoom_module) -> None:
    """Have `game` start its engine through engine_leash.sh, which arms the kernel's parent-death signal
    (SIGKILL) before becoming the engine: the engine then ends with this process however it ends. Without
    setpriv (util-linux) or an executable leash the engine starts as before, with one warning per process."""
    if prepare_leash(vizdoom_module):
        game.set_vizdoom_path(str(ENGINE_LEASH))


def prepare_leash(vizdoom_module) -> bool:
    """What the leash reads set in this process's environment; False (after one warning) without the leash.
    Call it before engines start side by side in threads (a self-play match): setting the environment while
    another thread starts an engine, which reads it, crashed the process (a segmentation fault, seen in training)."""
    global _leash_warned
    # The engine makes ./_vizdoom/ (its settings) when it starts; engines starting side by side in a folder without
    # one race to make it, and the loser's dies (exit -11, "Failed to create ./_vizdoom/ directory", seen in CI's
    # fresh folder). Made here first, before any engine of this process starts.
    os.makedirs("_vizdoom", exist_ok=True)
    if shutil.which("setpriv") is None or not os.access(ENGINE_LEASH, os.X_OK):
        if not _leash_warned:
            _leash_warned = True
            print(f"warning: setpriv (util-linux) or an executable {ENGINE_LEASH.name} is missing: ViZDoom engines "
                  f"may outlive a killed trainer", file=sys.stderr, flush=True)
        return False
    leash = {"DOOM_A3C_VIZDOOM": os.path.join(os.path.dirname(vizdoom_module.__file__), "vizdoom"),
             "DOOM_A3C_ENGINE_PARENT": str(os.getpid())}  # this process's: a game process or Ray worker sets its own
    for name, value in leash.items():
        if os.environ.get(name) != value:  # set once per process, not by every thread that restarts a game
            os.environ[name] = value
    return True


def quiet_engines() -> None:
    """Engines this process starts from now on send their own output to /dev/null (engine_leash.sh): a network
    game's engines print every step of their handshake."""
    os.environ["DOOM_A3C_ENGINE_QUIET"] = "1"


def descendants(pid: int) -> list[int]:
    """The running processes under `pid` (a game process's engines), from one scan of /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, frontier = [], [pid]
    while frontier:
        for child in children.get(frontier.pop(), []):
            found.append(child)
            frontier.append(child)
    return found


def process_state(pid: int) -> str | None:
    """The state letter of process `pid` as the kernel shows it (R running, S sleeping, T stopped, Z a zombie...),
    or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def vizdoom_instance_id(pid: int) -> str | None:
    """The `+viz_instance_id` of a ViZDoom engine's command line: it names the engine's shared memory."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            words = handle.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    for flag, value in zip(words, words[1:]):
        if flag == "+viz_instance_id":
            return value
    return None


def kill_process_tree(pid: int) -> None:
    """SIGKILL `pid` and every process under it (a stopped engine too), then remove the shared memory of the
    ViZDoom engines among them: nobody is left to close it (/dev/shm would keep ~100 KB per engine)."""
    tree = descendants(pid)
    instances = [i for i in map(vizdoom_instance_id, tree) if i]
    for victim in [pid, *tree]:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for instance in instances:
        for prefix in ("ViZDoomMQCtr", "ViZDoomMQDoom", "ViZDoomSM"):
            try:
                os.unlink(f"/dev/shm/{prefix}{instance}")
            except OSError:
                pass
