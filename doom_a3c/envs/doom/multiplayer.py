"""ViZDoom's multiplayer pieces for a match between agents: which maps are multiplayer, a free UDP port per match,
the engine arguments of the host and of each joining player, and the engines of one match found, watched and killed.

A match is one network game: the host engine (`-host P -port PORT -deathmatch +timelimit M`) waits for the P - 1
others (`-join 127.0.0.1 -port PORT`), then all of them advance in lockstep, each engine a tic only once every
player has sent its input for it. Each player's game is an ordinary `DoomEnvironment` whose config's `game_args`
are those given here (and whose `bots` the host adds).
"""
from __future__ import annotations

import os
import shlex
import socket
from typing import NamedTuple

from doom_a3c.envs.engine import descendants, kill_process_tree, process_state

MATCH_HOST = "127.0.0.1"
DEFAULT_MATCH_MINUTES = 10.0  # a match on a map whose scenario sets no +timelimit
CONNECT_TIMEOUT_SECONDS = 30  # +viz_connect_timeout: how long the host waits for the others at the start
# Arguments that say who hosts, joins or names a player, or how long the game lasts: the match sets them itself.
SEAT_ARGUMENTS = {"-host": 1, "-join": 1, "-port": 1, "+timelimit": 1, "+viz_connect_timeout": 1, "+name": 1,
                  "+colorset": 1, "-netmode": 1}
MULTIPLAYER_MARKS = ("-host", "-join", "-deathmatch")


class Seat(NamedTuple):
    """One player's place in a match: `index` 0 hosts."""
    index: int
    players: int  # the agents in the match, the host included (bots are not players here)
    port: int  # the host's UDP port
    minutes: float  # the match's +timelimit


def argument_words(game_args: str) -> list[str]:
    return shlex.split(game_args)


def is_multiplayer(game_args: str) -> bool:
    """Whether a scenario's engine arguments start a multiplayer game (cig's "-host 1 -deathmatch ...", a joining
    player's "-join ..."): the one sign a config holds of a map made for several players. A map played single-player
    (basic, deathmatch.wad's monsters) has none of them."""
    return any(word in MULTIPLAYER_MARKS for word in argument_words(game_args))


def time_limit(game_args: str) -> float | None:
    """The +timelimit (minutes) of a scenario's engine arguments, or None."""
    words = argument_words(game_args)
    for flag, value in zip(words, words[1:]):
        if flag == "+timelimit":
            try:
                return float(value)
            except ValueError:
                return None
    return None


def without_seat_arguments(game_args: str) -> list[str]:
    """The words of `game_args` less the ones a seat sets (-host 1, +timelimit 10, ...)."""
    words, kept, skip = argument_words(game_args), [], 0
    for word in words:
        if skip:
            skip -= 1
        elif word in SEAT_ARGUMENTS:
            skip = SEAT_ARGUMENTS[word]
        else:
            kept.append(word)
    return kept


def seat_game_args(map_game_args: str, seat: Seat) -> str:
    """The engine arguments of one player of a match on a map whose scenario passes `map_game_args`: the host keeps
    the map's game rules (+sv_forcerespawn 1 ...) and hosts all the players for the match's minutes; a joiner only
    joins (the host's rules are the game's). Each player gets a name (p1, p2, ...) and its own colour."""
    if seat.index == 0:
        rules = without_seat_arguments(map_game_args)
        if "-deathmatch" not in rules:
            rules.insert(0, "-deathmatch")
        words = [f"-host {seat.players} -port {seat.port}", *rules, f"+timelimit {seat.minutes:g}"]
    else:
        words = [f"-join {MATCH_HOST} -port {seat.port}"]
    words.append(f"+viz_connect_timeout {CONNECT_TIMEOUT_SECONDS} +name {player_name(seat.index)} "
                 f"+colorset {seat.index % 8}")
    return " ".join(words)


def player_name(index: int) -> str:
    """Seat `index`'s player name in the game (`+name`): p1 hosts, p2, p3, ... join."""
    return f"p{index + 1}"


def free_udp_port(attempts: int = 20) -> int:
    """A UDP port on 127.0.0.1 that nothing holds now: the kernel's choice for a socket bound to port 0. Two matches
    side by side get different ones; another program can still take it before the host does (the match then fails
    to start, and says so)."""
    error: OSError | None = None
    for _ in range(attempts):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.bind((MATCH_HOST, 0))
            return probe.getsockname()[1]
        except OSError as failed:
            error = failed
        finally:
            probe.close()
    raise OSError(f"no free UDP port on {MATCH_HOST}: {error}")


def command_line(pid: int) -> list[str]:
    """Process `pid`'s command line, word by word ([] once it is gone, or a zombie's)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def match_engines(port: int, parent: int | None = None) -> list[int]:
    """The engines under `parent` (this process) that host or join the match on `port`: their command lines, the
    engine's own arguments, carry `-port PORT`."""
    found = []
    for pid in descendants(os.getpid() if parent is None else parent):
        words = command_line(pid)
        if any(flag == "-port" and value == str(port) for flag, value in zip(words, words[1:])):
            found.append(pid)
    return found


def _seat_of(pid: int, port: int) -> int | None:
    """The seat whose engine `pid` is, read from its command line (`-port PORT ... +name pN`); None for any other
    process (another match's engine, a process that reused the pid of an engine gone, a zombie)."""
    words = command_line(pid)
    if not any(flag == "-port" and value == str(port) for flag, value in zip(words, words[1:])):
        return None
    for flag, value in zip(words, words[1:]):
        if flag == "+name" and value.startswith("p") and value[1:].isdigit():
            return int(value[1:]) - 1
    return None


class MatchEngines:
    """The engine of each seat of the match on `port`, found by its command line once it runs under this process,
    and what became of it. An engine that has exited means its player is out, whatever its thread says: its death
    stalls every other player's step too (a network game advances only with every player's input), and its own
    thread may never hear of it (ViZDoom's wait on an engine killed inside its message queue's critical section
    blocks for good, no exception comes: docs/guide/faults.md). A stopped engine (SIGSTOP) stalls every player."""

    def __init__(self, port: int, seats: int):
        self.port = port
        self.seats = seats
        self._pids: dict[int, int] = {}  # seat index -> the pid of its engine, from when it was first seen running

    @property
    def pids(self) -> dict[int, int]:
        """The engines found so far: seat index -> pid."""
        return dict(self._pids)

    def find(self) -> None:
        """Record the engines of the seats not found yet (one scan of /proc; none once every seat's is known)."""
        if len(self._pids) == self.seats:
            return
        for pid in match_engines(self.port):
            seat = _seat_of(pid, self.port)
            if seat is not None and seat not in self._pids and process_state(pid) not in (None, "Z", "X"):
                self._pids[seat] = pid

    def exited(self) -> list[int]:
        """The seats whose engine, once found, has exited since: gone, a zombie, or its pid now another process's."""
        return [seat for seat, pid in sorted(self._pids.items())
                if process_state(pid) in (None, "Z", "X") or _seat_of(pid, self.port) != seat]

    def stopped(self) -> list[int]:
        """The seats whose engine is stopped (SIGSTOP): it answers nobody until continued."""
        return [seat for seat, pid in sorted(self._pids.items()) if process_state(pid) in ("T", "t")]


def kill_match_engines(port: int) -> list[int]:
    """SIGKILL every engine of the match on `port` (and remove their shared memory); returns their pids."""
    engines = match_engines(port)
    for pid in engines:
        kill_process_tree(pid)
    return engines
