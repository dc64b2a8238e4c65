"""A user's own deathmatch map with --bots, on real engines: a .cfg as a user copies one (ViZDoom's multi.cfg
renamed: no episode_timeout, death_penalty = 1, mode = ASYNC_PLAYER, nine buttons with two delta buttons) trains as
its .cfg says. The host respawns the player after every death and the match goes on, the host's time limit (or the
default one) ends it, the score is the game's own frags, and a map whose script ends the match at a death (multi.cfg's
own duel map) never leaves a step without a state."""
import dataclasses
import os
import re
import shutil

import numpy as np
import pytest
import vizdoom

from doom_a3c.envs.doom import game as game_module
from doom_a3c.envs.doom.game import DoomEnvironment
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.training import train_from_flags

from support import read_rows

BOTS = 7
TICS_PER_MINUTE = 35 * 60


def users_cfg(folder, wad: str) -> str:
    """multi.cfg copied and renamed as a user would, its map `wad` (copied beside it)."""
    text = (open(os.path.join(vizdoom.scenarios_path, "multi.cfg")).read()
            .replace("multi_deathmatch.wad", wad))
    shutil.copy(os.path.join(vizdoom.scenarios_path, wad), folder / wad)
    (folder / "my_dm.cfg").write_text(text)
    return str(folder / "my_dm.cfg")


@pytest.fixture
def arena(tmp_path):
    """The .cfg on cig.wad's arena: room for the agent and 7 bots, and no script that ends a match."""
    return users_cfg(tmp_path, "cig.wad")


@pytest.fixture
def duel(tmp_path):
    """The .cfg on its own map, multi_deathmatch.wad: a duel whose script gives every player 15 health and exits the
    map (Exit_Normal) at the death of the first player or of the second, when its special is set."""
    return users_cfg(tmp_path, "multi_deathmatch.wad")


def host_config(cfg: str, tmp_path, **given):
    return resolve_new_run({"scenario": cfg, "bots": BOTS, "model_dir": str(tmp_path / "m"), **given})


def with_time_limit(config, minutes: float | None):
    """The config's host arguments with +timelimit set to `minutes` (None: taken out)."""
    args = re.sub(r"\+timelimit \S+", "", config.game_args)
    return dataclasses.replace(config, game_args=" ".join(args.split() + ([f"+timelimit {minutes}"] if minutes else [])))


def kill_the_player(env: DoomEnvironment) -> None:
    env._game.send_game_command("kill")  # a suicide at the next tic: FRAGCOUNT -1, DEATHCOUNT +1


def test_a_users_deathmatch_cfg_resolves_to_a_synchronous_host_with_its_delta_buttons_binned(arena, tmp_path):
    as_loaded = vizdoom.DoomGame()
    as_loaded.load_config(arena)
    assert as_loaded.get_episode_timeout() == 0 and as_loaded.get_death_penalty() == 1
    assert as_loaded.get_mode() == vizdoom.Mode.ASYNC_PLAYER and len(as_loaded.get_available_buttons()) == 9
    config = host_config(arena, tmp_path)
    assert config.plays_deathmatch() and config.bots == BOTS and "+sv_forcerespawn 1" in config.game_args
    pressed = {name.split("=")[0] for combo in config.actions for name in combo}
    assert {"TURN_LEFT_RIGHT_DELTA", "LOOK_UP_DOWN_DELTA"} <= pressed  # as bins: "TURN_LEFT_RIGHT_DELTA=-24"
    assert not any(name.endswith("_DELTA") for combo in config.actions for name in combo)  # never unbinned
    env = DoomEnvironment(config, seed=1)
    try:
        assert env._game.get_mode() == vizdoom.Mode.PLAYER  # the trainer's step is synchronous, not ASYNC_PLAYER
        env.reset()
        env.step(0)  # the bots join at the first tic
        assert env._game.get_game_variable(vizdoom.GameVariable.PLAYER_COUNT) == BOTS + 1
    finally:
        env.close()


def test_the_player_respawns_after_each_death_and_the_match_goes_on(arena, tmp_path):
    env = DoomEnvironment(host_config(arena, tmp_path), seed=1)
    try:
        env.reset()
        deaths_at_start = env.scores()["deaths"]
        for death in range(1, 4):
            for _ in range(3):
                assert not env.step(0).game_over
            kill_the_player(env)
            frags = env.scores()["frags"]
            step = env.step(0)
            assert not step.game_over and not step.done and step.match is None
            assert env.scores()["deaths"] - deaths_at_start >= death
            assert not env._game.is_player_dead() and env._game.get_state() is not None
            assert env._game.get_game_variable(vizdoom.GameVariable.HEALTH) == 100
            # The score is the game's frags (a suicide takes one); the .cfg's death penalty (-1) is learnt, as
            # shaping; the deathmatch shaping pays nothing for a death, its health loss or its respawn's teleport.
            assert step.reward == env.scores()["frags"] - frags == -1
            assert step.shaping == pytest.approx(-1, abs=0.05)
            assert step.observation["frame"].any()
    finally:
        env.close()


def test_the_match_ends_at_the_hosts_time_limit_and_the_next_one_starts(arena, tmp_path):
    config = with_time_limit(host_config(arena, tmp_path), 0.2)
    expected_steps = 0.2 * TICS_PER_MINUTE / config.frame_skip  # 420 tics, 70 steps of 6
    env = DoomEnvironment(config, seed=2)
    try:
        for _ in range(2):  # this match and the next
            env.reset()
            steps, step = 0, None
            while steps < 3 * expected_steps and not (step and step.game_over):
                if steps == 10:
                    kill_the_player(env)  # a death on the way is no end
                step = env.step(0)
                steps += 1
            assert step.game_over and step.done and steps == pytest.approx(expected_steps, abs=1)
            assert step.match["players"] == BOTS + 1 and step.match["deaths"] >= 1
            assert step.match["frags_per_minute"] == pytest.approx(step.match["frags"] / 0.2, abs=0.5)
    finally:
        env.close()


def test_a_host_with_no_time_limit_ends_its_matches_at_the_default(arena, tmp_path, monkeypatch):
    monkeypatch.setattr(game_module, "DEFAULT_MATCH_MINUTES", 0.1)  # 210 tics instead of 10 minutes
    config = with_time_limit(host_config(arena, tmp_path), None)
    assert "+timelimit" not in config.game_args
    env = DoomEnvironment(config, seed=3)
    try:
        env.reset()
        expected_steps = 0.1 * TICS_PER_MINUTE / config.frame_skip
        steps = 0
        while not env.step(0).game_over:
            steps += 1
            assert steps < 3 * expected_steps, "the match did not end"
        assert steps + 1 == pytest.approx(expected_steps, abs=1)
    finally:
        env.close()


def test_a_map_whose_script_ends_the_match_at_a_death_never_leaves_a_step_without_a_state(duel, tmp_path):
    """One tic a step: the player dies on a step's last tic and the map's exit comes on the next, while the game
    respawns the player. The match ends there with its report; the next one starts."""
    env = DoomEnvironment(host_config(duel, tmp_path, frame_skip=1), seed=3)
    ended_at_the_death = 0
    try:
        for _ in range(4):
            env.reset()
            for t in range(40):
                if t == 4:
                    kill_the_player(env)
                step = env.step(0)
                if step.game_over:
                    break
            if step.game_over:
                assert t == 4 and step.match["deaths"] == 1 and step.match["frags"] == -1
                ended_at_the_death += 1
            else:
                assert env._game.get_state() is not None
        assert ended_at_the_death >= 1  # the script's exit was met
    finally:
        env.close()


@pytest.mark.slow
def test_training_on_the_users_cfg_with_bots_has_no_game_failure(duel, tmp_path, monkeypatch, capsys):
    """The .cfg copied as it ships, on its own map, trained for half a minute with 6-second matches: any game that
    fails stops the run (--max-game-restarts 0). Its matches' score is the game's frags."""
    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    model = tmp_path / "model"
    short_matches = with_time_limit(host_config(duel, tmp_path), 0.1).game_args
    flags = {"scenario": duel, "bots": BOTS, "game_args": short_matches, "model_dir": str(model),
             "frames_dir": str(tmp_path / "frames"),
             "max_minutes": 0.5, "max_game_restarts": 0, "frame_size": 20, "hidden_size": 16, "lstm_size": 8,
             "workers": 1, "envs_per_worker": 4, "env_threads": 1, "gif_every": 0, "log_every_seconds": 60.0,
             "evaluate": False}
    assert train_from_flags(flags) == 0
    assert "failed" not in capsys.readouterr().err
    rows = read_rows(model / "progress.csv")
    assert rows and all(row["reward"] == row["frags"] for row in rows)
    assert np.isfinite([row["frags_per_minute"] for row in rows]).all()
