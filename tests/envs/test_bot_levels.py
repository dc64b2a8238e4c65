"""--bot-curriculum's levels in the games: the ACS difficulty script found in a map's compiled scripts, the commands
an episode starts with at a level (the script, or a share of the bots), the batches that pass a level to their
games, in this process and in child processes, and tag each match with the level it was played at; and on real
engines, that deathmatch_simple's bots enter at the level puked and a map without the script plays fewer bots."""
import os
import shutil
import signal
import struct

import numpy as np
import pytest
import vizdoom

from doom_a3c.envs.batch import EnvBatch
from doom_a3c.envs.doom.bot_levels import bots_at_level, episode_start_commands, has_difficulty_script
from doom_a3c.envs.doom.wad import has_acs_script, wad_lumps, wad_maps
from doom_a3c.envs.interface import Step
from doom_a3c.envs.process_batch import ProcessEnvBatch

from support import REPO_ROOT

MAPS = os.path.join(REPO_ROOT, "tests", "fixtures", "deathmatch_simple")
DEATHMATCH_SIMPLE = os.path.join(MAPS, "deathmatch_simple.wad")


def shipped(wad: str) -> str:
    return os.path.join(vizdoom.scenarios_path, wad)


def write_wad(path, lumps: list[tuple[str, bytes]]) -> str:
    """A PWAD of these (name, data) lumps, in order."""
    data = b"".join(body for _, body in lumps)
    directory, offset = b"", 12
    for name, body in lumps:
        directory += struct.pack("<ii8s", offset, len(body), name.encode())
        offset += len(body)
    path.write_bytes(struct.pack("<4sii", b"PWAD", len(lumps), 12 + len(data)) + data + directory)
    return str(path)


def compiled(*names: str) -> bytes:
    """A BEHAVIOR lump's bytes with these script names among its strings (as ACC's SNAM chunk holds them)."""
    return b"ACSE\0\0\0\0SNAM" + b"".join(name.encode() + b"\0" for name in names)


def test_deathmatch_simple_has_the_difficulty_script_and_shipped_maps_do_not():
    assert wad_maps(DEATHMATCH_SIMPLE) == ["MAP01"]
    assert has_acs_script(DEATHMATCH_SIMPLE, "MAP01", "change_difficulty")
    assert has_acs_script(DEATHMATCH_SIMPLE, "map01", "CHANGE_DIFFICULTY")  # ZDoom's names are of any case
    assert not has_acs_script(DEATHMATCH_SIMPLE, "MAP01", "change_difficult")  # a whole name only
    assert not has_acs_script(DEATHMATCH_SIMPLE, "MAP02", "change_difficulty")  # no such map
    assert has_difficulty_script(DEATHMATCH_SIMPLE, "map01") and has_difficulty_script(DEATHMATCH_SIMPLE, "")
    for wad in ("cig.wad", "multi_deathmatch.wad", "basic.wad"):  # compiled scripts of their own, or none
        assert not has_difficulty_script(shipped(wad), "map01"), wad
    assert not has_difficulty_script("", "map01")  # an IWAD's map: no scenario WAD


def test_only_the_maps_own_compiled_scripts_count(tmp_path):
    """Not its ACS source (deathmatch_simple's SCRIPTS lump names the script too), nor another map's."""
    wad = write_wad(tmp_path / "two.wad", [
        ("MAP01", b""), ("TEXTMAP", b"namespace"), ("BEHAVIOR", compiled("other")),
        ("SCRIPTS", b'script "change_difficulty" (int level) {}'), ("ENDMAP", b""),
        ("MAP02", b""), ("TEXTMAP", b"namespace"), ("BEHAVIOR", compiled("x", "change_difficulty")), ("ENDMAP", b""),
        ("MAP03", b""), ("THINGS", b"\0" * 10)])
    assert wad_lumps(wad)[:3] == ["MAP01", "TEXTMAP", "BEHAVIOR"] and wad_maps(wad) == ["MAP01", "MAP02", "MAP03"]
    assert [has_acs_script(wad, name, "change_difficulty") for name in ("MAP01", "MAP02", "MAP03")] == \
           [False, True, False]


def test_a_level_is_a_share_of_the_bots_on_a_map_without_the_script():
    assert [bots_at_level(8, level) for level in range(6)] == [1, 3, 4, 5, 7, 8]
    assert [bots_at_level(1, level) for level in range(6)] == [1] * 6  # one bot at least
    assert bots_at_level(0, 0) == 0
    assert episode_start_commands(3, None, scripted=True) == ["addbot"] * 3  # never told a level: the map's own
    assert episode_start_commands(3, 2, scripted=True) == ["addbot"] * 3 + ["pukename change_difficulty 2"]
    assert episode_start_commands(8, 0, scripted=False) == ["addbot"]
    assert episode_start_commands(8, 5, scripted=False) == ["addbot"] * 8


class MatchGame:
    """A deathmatch host's stand-in: matches of `length` steps, each reported with its frags (its number); it
    keeps the level it was told and the level each of its matches started at."""

    num_actions = 2
    action_names = ["a", "b"]
    observation_shape = (1,)
    seconds_per_step = 0.1

    def __init__(self, length=3, fail_at=None):
        self.length, self.fail_at = length, fail_at
        self.level = None
        self.started_at: list = []
        self.steps = 0

    def set_bot_level(self, level):
        self.level = level

    def reset(self):
        self.t = 0
        self.started_at.append(self.level)
        return np.zeros(1, np.uint8)

    def step(self, action):
        self.steps += 1
        if self.fail_at is not None and self.steps >= self.fail_at:
            raise RuntimeError("engine died")
        self.t += 1
        over = self.t >= self.length
        match = {"frags": float(len(self.started_at)), "players": 3.0} if over else None
        return Step(np.zeros(1, np.uint8), 0.0, over, over, match=match)

    def screen(self):
        return np.zeros((2, 2, 3), np.uint8)

    def close(self):
        pass


def matches_of(batch, steps: int) -> list[tuple[int, dict]]:
    """(game, report) of each match that ended within `steps` steps."""
    ended = []
    for _ in range(steps):
        step = batch.step(np.zeros(len(batch), np.int64))
        if step.matches is not None:
            ended += [(int(i), step.matches[i]) for i in np.flatnonzero(step.matches != None)]  # noqa: E711
    return ended


def test_a_batch_tells_its_games_a_level_and_tags_each_match_with_the_level_it_started_at():
    games = [MatchGame(), MatchGame()]
    batch = EnvBatch(games, remake=lambda i, restarts: MatchGame())
    batch.reset()
    assert matches_of(batch, 3) == [(0, {"frags": 1.0, "players": 3.0}), (1, {"frags": 1.0, "players": 3.0})]
    batch.step(np.zeros(2, np.int64))  # the second matches are under way: a level set now is for the third
    batch.set_bot_level(2)
    assert [game.level for game in games] == [2, 2]
    ended = matches_of(batch, 5)
    assert [report.get("bot_level") for _, report in ended] == [None, None, 2.0, 2.0]  # the first ones as begun
    assert [game.started_at for game in games] == [[None, None, 2, 2]] * 2  # the fourth is under way
    batch.close()


def test_a_game_restarted_after_a_crash_plays_at_the_level_set():
    made = []

    def remake(i, restarts):
        made.append(MatchGame())
        return made[-1]

    batch = EnvBatch([MatchGame(fail_at=2), MatchGame()], remake=remake)
    batch.reset()
    batch.set_bot_level(1)
    step = batch.step(np.zeros(2, np.int64))
    step = batch.step(np.zeros(2, np.int64))
    assert step.crashes[0] and len(made) == 1 and made[0].started_at == [1]
    ended = matches_of(batch, 3)
    assert (0, {"frags": 1.0, "players": 3.0, "bot_level": 1.0}) in ended
    batch.close()


def test_games_in_child_processes_are_told_the_level_a_replacement_too():
    batch = ProcessEnvBatch([MatchGame, MatchGame], processes=2, remake=lambda i, restarts: MatchGame(), timeout=10)
    try:
        batch.reset()
        batch.set_bot_level(3)
        ended = matches_of(batch, 6)  # the first matches began at full strength, the second at 3
        assert sorted(report.get("bot_level", -1) for _, report in ended) == [-1, -1, 3.0, 3.0]
        os.kill(batch._processes[1].pid, signal.SIGKILL)  # game 1's process dies: a fresh one replaces it
        step = batch.step(np.zeros(2, np.int64))
        assert step.crashes[1] and not step.crashes[0]
        ended = matches_of(batch, 3)
        assert {game for game, _ in ended} == {0, 1} and all(report["bot_level"] == 3.0 for _, report in ended)
    finally:
        batch.close()


def test_games_without_bots_ignore_a_level():
    from support import CountingEnv

    batch = EnvBatch([CountingEnv(0, length=2)])
    batch.reset()
    batch.set_bot_level(0)
    assert batch.step(np.zeros(1, np.int64)).matches is None
    batch.close()


# ---- real engines -------------------------------------------------------------------------------------------
def short_cfg(folder, wad: str, tics: int = 70) -> str:
    """deathmatch_simple.cfg on map `wad` (a path, copied beside it), its matches `tics` long."""
    shutil.copy(wad, folder / os.path.basename(wad))
    text = open(os.path.join(MAPS, "deathmatch_simple.cfg")).read()
    text = text.replace("doom_scenario_path = deathmatch_simple.wad",
                        f"doom_scenario_path = {os.path.basename(wad)}")
    text = text.replace("episode_timeout = 5250", f"episode_timeout = {tics}")
    (folder / "short.cfg").write_text(text)
    return str(folder / "short.cfg")


def host(cfg: str, tmp_path, bots: int, log: str | None = None):
    """A DoomEnvironment hosting `cfg` with `bots` bots, as --bots makes it; `log`: the engine's console in a file."""
    import dataclasses

    from doom_a3c.envs.doom.game import DoomEnvironment
    from doom_a3c.run.resolve import resolve_new_run

    config = resolve_new_run({"scenario": cfg, "bots": bots, "model_dir": str(tmp_path / "m"), "frame_size": 20})
    if log:
        config = dataclasses.replace(config, game_args=f"{config.game_args} +logfile {log}")
    return DoomEnvironment(config, seed=1)


def play_match(env) -> dict:
    env.reset()
    while True:
        step = env.step(0)
        if step.game_over:
            return step.match


@pytest.mark.slow
def test_deathmatch_simples_bots_enter_at_the_level_puked(tmp_path, monkeypatch):
    """The engine's console (+logfile) shows the map's script at work: "Level loaded" at each episode's start,
    "Changing difficulty level to: N" for the puke, and "...for bot!<tid><level>" for the level each bot entered
    (or respawned) at. A game never told a level pukes nothing and its bots enter at the map's own 5."""
    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    log = tmp_path / "console.log"
    env = host(short_cfg(tmp_path, DEATHMATCH_SIMPLE), tmp_path, bots=2, log=str(log))
    try:
        for level in (None, 0, 3):
            env.set_bot_level(level)
            assert play_match(env)["players"] == 3
    finally:
        env.close()
    episodes: list[list[str]] = []
    for line in log.read_text(errors="replace").splitlines():
        if "Level loaded" in line:
            episodes.append([])
        elif "ifficulty" in line and episodes:
            episodes[-1].append(line.strip())
    episodes = [lines for lines in episodes if lines]  # the map loaded by init() before the first episode
    puked = [[line for line in lines if line.startswith("Changing difficulty level to")] for lines in episodes]
    assert puked == [[], ["Changing difficulty level to: 0"], ["Changing difficulty level to: 3"]], episodes
    bot_levels = [sorted({line[-1] for line in lines if "for bot!" in line}) for lines in episodes]
    assert bot_levels == [["5"], ["0"], ["3"]], episodes


@pytest.mark.slow
def test_a_map_without_the_script_plays_a_share_of_its_bots(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = host(short_cfg(tmp_path, shipped("cig.wad")), tmp_path, bots=6)
    try:
        players = []
        for level in (None, 0, 2, 5):
            env.set_bot_level(level)
            players.append(play_match(env)["players"])
    finally:
        env.close()
    assert players == [7, 2, 4, 7]  # the agent and 6, 1, 3 and 6 bots
