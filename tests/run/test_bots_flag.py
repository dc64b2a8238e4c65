"""--bots N: a user's own map with player starts becomes a deathmatch host with N bots, +1 a frag and the
deathmatch shaping (scenarios/defaults/doom.toml's [deathmatch], the same as cig's preset); bad input is one line."""
import dataclasses
import os
import shutil
import tomllib

import pytest
import vizdoom

from doom_a3c.errors import ConfigError
from doom_a3c.run.presets import PRESETS_DIR, own_map_defaults
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run

from support import assert_one_line_error, run_in_process


@pytest.fixture
def own_map(tmp_path):
    """cig.wad (its player starts) with its .cfg under a name no preset has."""
    shutil.copy(os.path.join(vizdoom.scenarios_path, "cig.cfg"), tmp_path / "arena.cfg")
    shutil.copy(os.path.join(vizdoom.scenarios_path, "cig.wad"), tmp_path / "cig.wad")
    return str(tmp_path / "arena.cfg")


def test_bots_on_a_users_map_make_it_a_deathmatch_host(own_map, tmp_path):
    table = own_map_defaults()["deathmatch"]
    config = resolve_new_run({"scenario": own_map, "bots": 3, "model_dir": str(tmp_path / "m")})
    assert config.bots == 3 and config.game_args == table["game_args"] and config.frag_reward == 1.0
    assert "-host 1 -deathmatch" in config.game_args and "+sv_forcerespawn 1" in config.game_args
    assert config.reward_shaping == [[entry[0], *map(float, entry[1:])] for entry in table["reward_shaping"]]
    assert config.plays_deathmatch()
    # The rest are the defaults for a map with no preset (its action set, colour, ...), as without --bots.
    alone = resolve_new_run({"scenario": own_map, "model_dir": str(tmp_path / "m")})
    assert (alone.bots, alone.game_args, alone.frag_reward, alone.reward_shaping) == (0, "", 0.0, [])
    assert not alone.plays_deathmatch()
    # A deathmatch host's evaluation (the table's [deathmatch.train]): 4 sampled matches every 10 minutes.
    assert (config.eval_episodes, config.eval_greedy, config.eval_every_minutes) == (4, False, 10.0)
    evaluation = {"eval_episodes", "eval_greedy", "eval_every_minutes"}
    assert [getattr(alone, name) for name in sorted(evaluation)] != [getattr(config, name) for name in
                                                                      sorted(evaluation)]
    same = {f.name for f in dataclasses.fields(config)} - {"bots", "game_args", "frag_reward", "reward_shaping"}
    assert all(getattr(config, name) == getattr(alone, name) for name in same - evaluation)
    given = resolve_new_run({"scenario": own_map, "bots": 3, "eval_episodes": 6, "model_dir": str(tmp_path / "m")})
    assert (given.eval_episodes, given.eval_every_minutes) == (6, 10.0)  # a flag wins over the table


def test_cig_hosts_as_bots_does_and_bots_zero_means_none(tmp_path):
    cig = tomllib.loads((PRESETS_DIR / "cig.toml").read_text())
    table = own_map_defaults()["deathmatch"]
    assert cig["game_args"] == table["game_args"] and cig["frag_reward"] == table["frag_reward"]
    assert "reward_shaping" not in cig and "train" not in cig  # one copy of the weights and evaluation: the table's
    run = lambda **given: resolve_new_run({"scenario": "cig", "model_dir": str(tmp_path / "m"), **given})  # noqa: E731
    assert run().reward_shaping == [list(entry) for entry in table["reward_shaping"]] != []
    assert run().bots == 7 and run(bots=3).bots == 3 and run(bots=0).bots == 0
    assert run(bots=0).game_args == cig["game_args"]  # still a deathmatch host: the preset's
    assert (run().eval_episodes, run().eval_greedy, run().eval_every_minutes) == (4, False, 10.0)


@pytest.mark.parametrize("flags, needle", [
    (["--scenario", "cig", "--bots", "-1"], "--bots must be a whole number from 0 to 15"),
    (["--scenario", "cig", "--bots", "16"], "--bots must be a whole number from 0 to 15"),
    (["--scenario", "cig", "--bots", "two"], "--bots"),
    (["--scenario", "ALE/Pong-v5", "--bots", "2"], "--bots: for ViZDoom scenarios only"),
])
def test_bad_bots_are_one_line_and_exit_2(flags, needle, capsys, tmp_path):
    proc = run_in_process("train.py", capsys, *flags, "--model-dir", tmp_path / "m")
    assert proc.returncode == 2
    assert_one_line_error(proc, needle)


def test_bots_cannot_make_a_resumed_run_a_deathmatch(tmp_path):
    saved = resolve_new_run({"scenario": "basic", "model_dir": str(tmp_path / "m")})
    with pytest.raises(ConfigError, match="not trained as a deathmatch host"):
        resolve_resumed_run(saved, {"bots": 2}, "models/basic")
    cig = resolve_new_run({"scenario": "cig", "model_dir": str(tmp_path / "m")})
    assert resolve_resumed_run(cig, {"bots": 3}, "models/cig").bots == 3  # fewer bots for a deathmatch: fine
