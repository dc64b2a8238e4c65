"""play.py --window (the episodes live, at the game's own speed) and --human (a person hosts a match against
checkpoints in a window), on a virtual display: each real-engine test starts its own Xvfb on a display number Xvfb
picks (-displayfd), gives DISPLAY to play.py alone, and ends it after. Without Xvfb or xdotool (.ci/run installs them
from the system's packages) these tests skip, saying so. Every wait is bounded: a hang fails with a message.

With DOOM_A3C_SCREENSHOTS=DIR the windows' screenshots are also written to DIR (docs/figures/ holds the ones shown in
docs/guide/watch-and-play.md)."""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from doom_a3c.envs.display import display_problem, local_display_number, x_server_listens
from support import (REPO_ROOT, assert_one_line_error, descendants, run_in_process, save_checkpoint, saved_run,
                     finish_play, start_play,
                     wait_for)

DEATHMATCH_SIMPLE_CFG = os.path.join(REPO_ROOT, "tests", "fixtures", "deathmatch_simple", "deathmatch_simple.cfg")
PLAY_SECONDS = 180  # a subprocess's bound: TensorFlow's import, the engines' start and a short episode or match
SCREENSHOTS = os.environ.get("DOOM_A3C_SCREENSHOTS")


# ---- no display: one line, exit 2, before TensorFlow or any engine ---------------------------------------------
def test_display_problem_names_what_is_missing(tmp_path):
    assert "DISPLAY is not set" in display_problem({})
    assert "no X server is running on DISPLAY :4242 (nothing answers on /tmp/.X11-unix/X4242)" in \
        display_problem({"DISPLAY": ":4242"})
    assert display_problem({"DISPLAY": "remote.example:10.0"}) is None  # taken on trust
    assert [local_display_number(name) for name in (":1", ":1.0", "unix:7", "host:3", ":x")] == [1, 1, 7, None, None]


@pytest.mark.parametrize("flags, needle", [
    (["--window"], "--window: no display to open a window on (DISPLAY is not set)"),
    (["--human"], "--human: no display to open a window on (DISPLAY is not set)"),
    (["--window", "--export", "x"], "takes no --window"),
    (["--human", "--export", "x"], "takes no --human"),
])
def test_a_window_without_a_display_or_with_export_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, flags,
                                                                          needle):
    monkeypatch.delenv("DISPLAY", raising=False)
    model = tmp_path / "m"
    model.mkdir()
    (model / "last.ckpt.index").write_text("")
    proc = run_in_process("play.py", capsys, "--model", model / "last.ckpt", "--out", tmp_path / "out", *flags)
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)
    assert not (tmp_path / "out").exists()


def test_window_with_an_opponent_but_no_person_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DISPLAY", "remote.example:10.0")  # a display taken on trust: the flags are what is wrong
    model = tmp_path / "m"
    model.mkdir()
    (model / "last.ckpt.index").write_text("")
    proc = run_in_process("play.py", capsys, "--model", model / "last.ckpt", "--opponent", model / "last.ckpt",
                          "--window", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert_one_line_error(proc, "--window shows single-player episodes", "add --human")


@pytest.mark.slow
def test_window_without_a_display_starts_no_engine_and_no_tensorflow(tmp_path):
    """As a user runs it: one line, exit 2, in well under TensorFlow's import time, no process left."""
    model = tmp_path / "m"
    model.mkdir()
    (model / "last.ckpt.index").write_text("")
    env = {key: value for key, value in os.environ.items() if key != "DISPLAY"}
    started = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "play.py"), "--model", str(model / "last.ckpt"),
                           "--window", "--out", str(tmp_path / "out")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert time.monotonic() - started < 20
    assert proc.returncode == 2
    assert_one_line_error(proc, "--window: no display")
    assert "tensorflow" not in proc.stderr.lower()


# ---- a virtual display ------------------------------------------------------------------------------------------
class VirtualDisplay:
    """An Xvfb of its own: `env` gives its DISPLAY to the processes a test starts; `close` ends it."""

    def __init__(self, log_path, size: str = "1280x720x24", seconds: float = 20.0, attempts: int = 3):
        missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
        if missing:
            pytest.skip(f"{' and '.join(missing)} not installed (.ci/run installs xvfb and xdotool with apt-get; "
                        f"on Debian or Ubuntu: sudo apt-get install xvfb xdotool)")
        self.log_path = log_path
        self._pipe: int | None = None  # the read end of -displayfd's pipe, open while Xvfb runs
        for _ in range(attempts):  # an Xvfb that exits right after it reported its display is started again
            number = self._start(size, seconds)
            if number is not None and self._serving(number):
                break
            self.close()
        else:
            pytest.fail(f"Xvfb did not serve a display in {attempts} attempts: {log_path.read_text()[-1000:]}")
        self.name = f":{number}"
        self.env = {**os.environ, "DISPLAY": self.name}

    def _serving(self, number: int, seconds: float = 5.0) -> bool:
        """Whether the Xvfb started takes connections on display :`number` within `seconds` (and still runs)."""
        wait_for(lambda: self.proc.poll() is not None or x_server_listens(number), seconds)
        return self.proc.poll() is None and x_server_listens(number)

    def _start(self, size: str, seconds: float) -> int | None:
        """A new Xvfb on a display number it picks (-displayfd); the number, or None if none came. The pipe stays
        open while Xvfb runs: it writes the number and its newline apart, and a closed pipe is a fatal error."""
        read, write = os.pipe()
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", size, "-nolisten", "tcp",
                                          "-noreset"], pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=log,
                                         start_new_session=True)
        os.close(write)
        self._pipe = read
        written, deadline = b"", time.monotonic() + seconds
        while not written.endswith(b"\n") and time.monotonic() < deadline:
            ready, _, _ = select.select([read], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(read, 32) if ready else b""
            if ready and not chunk:
                break  # Xvfb exited
            written += chunk
        number = written.decode().strip()
        return int(number) if number.isdigit() else None

    def xdotool(self, *words) -> str:
        proc = subprocess.run(["xdotool", *map(str, words)], env=self.env, capture_output=True, text=True,
                              timeout=15)
        return proc.stdout

    def window(self, proc, seconds: float) -> tuple[str, dict[str, int]] | None:
        """The first visible window that appears within `seconds` while `proc` runs and whose geometry (X, Y, WIDTH,
        HEIGHT) can be read: SDL may map a window and destroy it before the one that stays, and a window gone by
        the time it is asked about has none."""
        shown: list[tuple[str, dict[str, int]]] = []

        def look() -> bool:
            for window in self.visible_windows():
                geometry = self.geometry(window)
                if len(geometry) == 4:
                    shown.append((window, geometry))
                    return True
            return proc.poll() is not None

        wait_for(look, seconds)
        return shown[0] if shown else None

    def geometry(self, window: str) -> dict[str, int]:
        """X, Y, WIDTH and HEIGHT of `window`; fewer keys when it no longer exists."""
        geometry = {}
        for line in self.xdotool("getwindowgeometry", "--shell", window).splitlines():
            key, _, value = line.partition("=")
            if key in ("X", "Y", "WIDTH", "HEIGHT") and value.strip().lstrip("-").isdigit():
                geometry[key] = int(value)
        return geometry

    def visible_windows(self) -> list[str]:
        """The mapped windows with a name or a class (SDL's, as ale-py's and pygame's, may give xdotool only the
        class to match)."""
        named = self.xdotool("search", "--onlyvisible", "--name", ".").split()
        return named + [w for w in self.xdotool("search", "--onlyvisible", "--class", ".").split() if w not in named]

    def screenshot(self, geometry: dict[str, int]) -> np.ndarray:
        """The window's pixels, [H, W, 3] uint8, read from the X server (not from the game)."""
        from PIL import ImageGrab

        x, y = geometry["X"], geometry["Y"]
        image = ImageGrab.grab(bbox=(x, y, x + geometry["WIDTH"], y + geometry["HEIGHT"]), xdisplay=self.name)
        return np.asarray(image.convert("RGB"))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None


@pytest.fixture
def display(tmp_path):
    screen = VirtualDisplay(tmp_path / "xvfb.log")
    yield screen
    screen.close()
    assert screen.proc.poll() is not None, "Xvfb left running"


def save_screenshot(pixels: np.ndarray, tmp_path, name: str) -> None:
    from PIL import Image

    Image.fromarray(pixels).save(tmp_path / name)
    if SCREENSHOTS:
        os.makedirs(SCREENSHOTS, exist_ok=True)
        Image.fromarray(pixels).save(os.path.join(SCREENSHOTS, name))


def assert_not_blank(pixels: np.ndarray) -> None:
    colours = len(np.unique(pixels.reshape(-1, 3), axis=0))
    assert pixels.std() > 10 and colours > 50, f"a blank window: std {pixels.std():.1f}, {colours} colours"


def start_play_on(tmp_path, display, *flags):
    """play.py on the display (tests/support.py's start_play)."""
    return start_play(tmp_path, "play", *flags, env=display.env)


def finish(proc, seconds=PLAY_SECONDS):
    return finish_play(proc, seconds)


def engines_of(pid: int) -> list[int]:
    """The ViZDoom engines still running under process `pid`."""
    def is_engine(child: int) -> bool:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as handle:
                return os.path.basename(handle.read().split(b"\0")[0]) == b"vizdoom"
        except OSError:
            return False

    return [child for child in descendants(pid) if is_engine(child)]


def left_in_session(session: int) -> list[int]:
    """The processes still running in play.py's session (its engines would be there), zombies not counted."""
    left = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.isdigit() and fields[0] != "Z" and int(fields[3]) == session:
            left.append(int(entry))
    return left


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Untrained checkpoints: basic.wad's (single player), basic_audio's (heard: --audio) and deathmatch_simple's with
    bots (a multiplayer map)."""
    folder = tmp_path_factory.mktemp("checkpoints")
    cwd = os.getcwd()
    os.chdir(folder)  # ViZDoom writes _vizdoom.ini where it runs
    try:
        return {"basic": save_checkpoint(folder / "basic", scenario="basic"),
                "basic_audio": save_checkpoint(folder / "basic_audio", scenario="basic_audio"),
                "deathmatch": save_checkpoint(folder / "deathmatch", scenario=DEATHMATCH_SIMPLE_CFG, bots=1,
                                              frame_size=42)}
    finally:
        os.chdir(cwd)


# ---- --window: the episodes live ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_heard_run_plays_its_sound_on_the_machines_sound_device(checkpoints, tmp_path, display):
    """basic_audio's window plays what the agent hears: SDL's disk driver stands in for a sound card and keeps every
    sample it was given in a file, which fills with the Cacodemon's sound (int16 stereo)."""
    from doom_a3c.envs.doom.audio import openal_problem

    if openal_problem():
        pytest.skip(f"no sound here: {openal_problem()}")
    played = tmp_path / "speaker.raw"
    env = {**display.env, "SDL_AUDIODRIVER": "disk", "SDL_DISKAUDIOFILE": str(played)}
    proc = start_play(tmp_path, "play", "--model", checkpoints["basic_audio"], "--window", "--episodes", 1,
                      "--out", tmp_path / "out", env=env)
    returncode, out, err = finish(proc)
    assert returncode == 0, out[-2000:] + err[-2000:]
    assert "plays silent" not in out
    samples = np.frombuffer(played.read_bytes(), np.int16)
    steps = json.loads((tmp_path / "out" / "results.json").read_text())["episodes"][0]["length"]
    assert len(samples) >= 2 * 315 * 4 * (steps - 1)  # every step's sound reached the device (the last is silence)
    assert np.abs(samples).max() > 1000



@pytest.mark.slow
@pytest.mark.timeout(300)
def test_window_shows_the_game_at_35_tics_a_second(checkpoints, tmp_path, display):
    """basic.wad's window at the run's 160x120, not blank, its episodes at 35 tics a second within 10%, the videos
    and results.json as without the window, and no engine left. (Three episodes: an untrained agent can end one
    early by a lucky shot; together they last at least a few seconds.)"""
    proc = start_play_on(tmp_path, display, "--model", checkpoints["basic"], "--window", "--episodes", 3, "--seed", 1,
                      "--out", tmp_path / "out")
    try:
        shown = display.window(proc, PLAY_SECONDS)
        assert shown is not None, f"{proc.err_path.read_text()[-2000:]} (Xvfb {display.name} running: " \
                                  f"{display.proc.poll() is None})"
        window, geometry = shown
        assert (geometry["WIDTH"], geometry["HEIGHT"]) == (160, 120), geometry
        time.sleep(1)  # the first episode under way
        pixels = display.screenshot(geometry)
        save_screenshot(pixels, tmp_path, "watch-window.png")
        assert_not_blank(pixels)
    finally:
        returncode, out, err = finish(proc)
    assert returncode == 0, out[-2000:] + err[-2000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["window"] is True and len(results["episodes"]) == 3
    assert all(os.path.exists(episode["gif"]) for episode in results["episodes"])
    tics = sum(episode["tics"] for episode in results["episodes"])  # the engine's clock, each episode's start too
    seconds = sum(episode["seconds"] for episode in results["episodes"])
    assert tics >= 100, tics
    assert 35 * 0.9 <= tics / seconds <= 35 * 1.1, f"{tics} tics in {seconds:.2f} s: {tics / seconds:.1f} a second"
    # A frame of the video a tic the agent saw: at most every tic (on a busy machine it may be late for some).
    assert 0.5 * tics <= sum(episode["frames"] for episode in results["episodes"]) <= tics
    assert f"in {results['episodes'][0]['seconds']:.1f} s" in out
    assert wait_for(lambda: left_in_session(proc.pid) == [], 10), left_in_session(proc.pid)


# ---- --human: a person's match against a checkpoint ----------------------------------------------------------------
def moved(display, window, geometry, keys: list[str], seconds: float) -> tuple[float, np.ndarray]:
    """How much of the window changes while `keys` are held for `seconds`: the mean absolute difference of its
    pixels before and after, and the window after (the pointer in the window and the focus on it: with no window
    manager, X sends the keys there)."""
    display.xdotool("mousemove", "--window", window, geometry["WIDTH"] // 2, geometry["HEIGHT"] // 2)
    display.xdotool("windowfocus", window)
    before = display.screenshot(geometry).astype(np.int16)
    for key in keys:
        display.xdotool("keydown", key)
    time.sleep(seconds)
    for key in keys:
        display.xdotool("keyup", key)
    after = display.screenshot(geometry)
    return float(np.abs(after.astype(np.int16) - before).mean()), after


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_person_hosts_a_match_plays_it_with_keys_and_every_players_frags_count(checkpoints, tmp_path, display):
    """deathmatch_simple, the person hosting in a 640x480 window against the checkpoint and a bot: keys sent to the
    window turn and move the person's view, the match ends at its 0.3-minute limit, one line a player, the frags and
    deaths of both players in results.json, and no engine left."""
    proc = start_play_on(tmp_path, display, "--model", checkpoints["deathmatch"], "--human", "--bots", 1,
                      "--match-minutes", 0.3, "--seed", 2, "--out", tmp_path / "out")
    try:
        shown = display.window(proc, PLAY_SECONDS)
        assert shown is not None, proc.err_path.read_text()[-2000:]
        window, geometry = shown
        assert (geometry["WIDTH"], geometry["HEIGHT"]) == (640, 480), geometry
        assert wait_for(lambda: len(engines_of(proc.pid)) == 2, 60), engines_of(proc.pid)
        time.sleep(2)  # the match under way
        changed, pixels = moved(display, window, geometry, ["Left", "Up"], 1.0)
        save_screenshot(pixels, tmp_path, "human-match-window.png")
        assert_not_blank(pixels)
        assert changed > 12, f"the keys did not move the person: the window changed by {changed:.1f} a pixel"
    finally:
        returncode, out, err = finish(proc)
    assert returncode == 0, out[-2000:] + err[-2000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["person"] is True and results["minutes"] == 0.3 and results["bots"] == 1
    (match,) = results["matches"]
    assert match["finished"] is True and match["stopped"] is False and match["error"] is None, match
    person, agent = match["players"]
    assert person["person"] is True and person["checkpoint"] is None
    assert agent["person"] is False and agent["checkpoint"] == checkpoints["deathmatch"]
    for player in (person, agent):
        assert isinstance(player["frags"], int) and isinstance(player["deaths"], int) and player["place"] in (1, 2)
    # 0.3 minutes are 630 tics, a step of the agent's every frame skip tics.
    # On the game's clock an agent that has not decided by its next tic misses it (its first, while TensorFlow
    # builds the step): most steps are played, never more than the tics allow.
    frame_skip = saved_run(checkpoints["deathmatch"]).config["frame_skip"]
    assert 0.8 * 630 / frame_skip <= match["steps"] <= 630 / frame_skip + 1, (match["steps"], frame_skip)
    lines = out.splitlines()
    assert lines[0].startswith("match 1, played to its time limit"), out
    assert lines[1].startswith(f"  you (p1): {person['frags']} frags, {person['deaths']} deaths, place"), out
    assert lines[2].startswith(f"  p2 ({checkpoints['deathmatch']}): {agent['frags']} frags"), out
    assert wait_for(lambda: left_in_session(proc.pid) == [], 10), left_in_session(proc.pid)
    assert display.visible_windows() == [], "a window left open"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_ctrl_c_ends_a_persons_match_against_two_agents_with_every_engine_reaped(checkpoints, tmp_path, display):
    """--model given twice: both checkpoints join the person's match, each in its own engine; Ctrl-C ends it, each
    player is in results.json, and no engine is left."""
    proc = start_play_on(tmp_path, display, "--model", checkpoints["deathmatch"], "--model", checkpoints["deathmatch"],
                         "--human", "--match-minutes", 2, "--out", tmp_path / "out")
    try:
        assert display.window(proc, PLAY_SECONDS) is not None, proc.err_path.read_text()[-2000:]
        assert wait_for(lambda: len(engines_of(proc.pid)) == 3, 60), engines_of(proc.pid)
        engines = engines_of(proc.pid)
        time.sleep(2)
        os.kill(proc.pid, signal.SIGINT)  # what Ctrl-C sends play.py
    finally:
        returncode, out, err = finish(proc, 60)
    assert returncode == 0, out[-2000:] + err[-2000:]
    (match,) = json.loads((tmp_path / "out" / "results.json").read_text())["matches"]
    assert match["stopped"] is True and match["error"] == "stopped by Ctrl-C", match
    assert [(p["name"], p["person"], p["checkpoint"]) for p in match["players"]] == [
        ("p1", True, None), ("p2", False, checkpoints["deathmatch"]), ("p3", False, checkpoints["deathmatch"])]
    assert out.startswith("match 1, stopped by Ctrl-C") and len(out.splitlines()) >= 4, out
    assert wait_for(lambda: left_in_session(proc.pid) == [], 10), left_in_session(proc.pid)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in engines), engines


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_closing_the_persons_window_ends_the_match_with_every_engine_reaped(checkpoints, tmp_path, display):
    """The person's window closed mid-match (xdotool windowkill, as xkill or a window manager's force-close: the X
    server drops the engine's connection and the engine exits, or now and then deadlocks in its exit): the match is
    recorded as ended by the person, with exit 0, one line, and no engine left."""
    proc = start_play_on(tmp_path, display, "--model", checkpoints["deathmatch"], "--human", "--match-minutes", 2,
                         "--out", tmp_path / "out")
    try:
        shown = display.window(proc, PLAY_SECONDS)
        assert shown is not None, proc.err_path.read_text()[-2000:]
        assert wait_for(lambda: len(engines_of(proc.pid)) == 2, 60), engines_of(proc.pid)
        engines = engines_of(proc.pid)
        time.sleep(2)
        display.xdotool("windowkill", shown[0])
    finally:
        returncode, out, err = finish(proc, 60)
    assert returncode == 0, out[-2000:] + err[-2000:]
    (match,) = json.loads((tmp_path / "out" / "results.json").read_text())["matches"]
    # The engine exits (most closes), or deadlocks in its exit and stops answering: either ends the match at once.
    ended = ("you closed the window", "your game stopped answering for 10 s (its window closed?)")
    assert match["stopped"] is True and match["error"] in ended, match
    assert out.startswith("match 1, ") and out.splitlines()[0].split(", ", 1)[1].startswith(ended), out
    assert wait_for(lambda: left_in_session(proc.pid) == [], 10), left_in_session(proc.pid)
    assert not any(os.path.exists(f"/proc/{pid}") for pid in engines), engines


# ---- --window for Atari and a gymnasium env ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def cartpole_checkpoint(tmp_path_factory):
    """A CartPole checkpoint of a few hundred steps (vector observations: gymnasium's own human rendering)."""
    from doom_a3c.run.training import train_from_flags

    folder = tmp_path_factory.mktemp("cartpole")
    assert train_from_flags({"scenario": "CartPole-v1", "model_dir": str(folder), "frames_dir": str(folder / "f"),
                             "max_steps": 300, "gif_every": 0, "evaluate": False, "log_every_seconds": 60.0}) == 0
    return str(folder / "last.ckpt")


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("game", ["atari", "cartpole"])
def test_window_shows_an_atari_game_and_a_gymnasium_env(request, tmp_path, display, game):
    """Breakout in ale-py's window and CartPole in gymnasium's (pygame): a window appears and is not blank, the
    episode's video and results.json are written as without it, and nothing is left running."""
    model = (os.path.join(REPO_ROOT, "tests", "fixtures", "old_atari_checkpoint", "last.ckpt") if game == "atari"
             else request.getfixturevalue("cartpole_checkpoint"))
    proc = start_play_on(tmp_path, display, "--model", model, "--window", "--episodes", 1, "--seed", 3,
                         "--out", tmp_path / "out")
    try:
        shown = display.window(proc, PLAY_SECONDS)
        assert shown is not None, f"exit {proc.poll()}: {proc.err_path.read_text()[-2000:]}"
        window, geometry = shown
        assert geometry["WIDTH"] >= 150 and geometry["HEIGHT"] >= 150, geometry
        deadline = time.monotonic() + 10  # a window mapped before its first frame is drawn is black for a moment
        pixels = display.screenshot(geometry)
        while pixels.std() <= 5 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.25)
            pixels = display.screenshot(geometry)
        save_screenshot(pixels, tmp_path, f"watch-window-{game}.png")
        assert pixels.std() > 5, f"a blank window: std {pixels.std():.1f}"
    finally:
        returncode, out, err = finish(proc)
    assert returncode == 0, out[-2000:] + err[-2000:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    (episode,) = results["episodes"]
    assert results["window"] is True and os.path.exists(episode["gif"]) and episode["length"] > 0, results
    assert wait_for(lambda: left_in_session(proc.pid) == [], 10), left_in_session(proc.pid)
