"""--bots N: a user's own map with player starts becomes a deathmatch host with N bots, +1 a frag and the
deathmatch shaping (scenarios/defaults/doom.toml's [deathmatch], the same as cig's preset); bad input is one line."""
import dataclasses
import json
import os
import shutil
import tomllib

import pytest
import vizdoom

from doom_a3c.config import TrainConfig
from doom_a3c.envs.scenario import DOOM
from doom_a3c.errors import ConfigError
from doom_a3c.run.presets import PRESETS_DIR, own_map_defaults, preset_train_defaults
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run

from support import assert_one_line_error, run_in_process


@pytest.fixture
def own_map(tmp_path):
    """cig.wad (its player starts) with its .cfg under a name no preset has."""
    shutil.copy(os.path.join(vizdoom.scenarios_path, "cig.cfg"), tmp_path / "arena.cfg")
    shutil.copy(os.path.join(vizdoom.scenarios_path, "cig.wad"), tmp_path / "cig.wad")
    return str(tmp_path / "arena.cfg")


def test_bots_on_a_users_map_make_it_a_deathmatch_host(own_map, tmp_path, capsys):
    table = own_map_defaults()["deathmatch"]
    config = resolve_new_run({"scenario": own_map, "bots": 3, "model_dir": str(tmp_path / "m")})
    assert config.bots == 3 and config.game_args == table["game_args"] and config.frag_reward == 1.0
    assert "-host 1 -deathmatch" in config.game_args and "+sv_forcerespawn 1" in config.game_args
    assert config.reward_shaping == [[entry[0], *map(float, entry[1:])] for entry in table["reward_shaping"]]
    assert config.movement_shaping == table["movement_shaping"] != []
    assert config.plays_deathmatch()
    # The rest are the defaults for a map with no preset (its action set, colour, ...), as without --bots.
    alone = resolve_new_run({"scenario": own_map, "model_dir": str(tmp_path / "m")})
    assert (alone.bots, alone.game_args, alone.frag_reward, alone.reward_shaping, alone.movement_shaping) == \
        (0, "", 0.0, [], [])
    assert not alone.plays_deathmatch()
    # A deathmatch host's training values (the table's [deathmatch.train]): 4 sampled matches every 10 minutes, and
    # the fighting recipe.
    recipe = {name: getattr(config, name) for name in DEATHMATCH_TRAIN}
    assert recipe == DEATHMATCH_TRAIN
    assert all(getattr(alone, name) != value for name, value in DEATHMATCH_TRAIN.items())
    same = {f.name for f in dataclasses.fields(config)} - {"bots", "game_args", "frag_reward", "reward_shaping",
                                                           "movement_shaping"}
    # (a .cfg's delta buttons are binned by what a step of frame_skip tics turns: they follow the table's frame skip)
    assert all(getattr(config, name) == getattr(alone, name)
               for name in same - set(DEATHMATCH_TRAIN) - {"actions", "action_heads"})
    printed = capsys.readouterr().out
    assert ("a deathmatch host's shaping, learning only: DAMAGECOUNT +0.01, HEALTH +0.02/-0.01, ARMOR +0.01, "
            "AMMO2 +0.02/-0.01") in printed
    assert "a step moving over 3 map units +0.0005, one not -0.0025" in printed
    given = resolve_new_run({"scenario": own_map, "bots": 3, "eval_episodes": 6, "model_dir": str(tmp_path / "m")})
    assert (given.eval_episodes, given.eval_every_minutes) == (6, 10.0)  # a flag wins over the table


# What --bots N and cig run unless a flag says otherwise (scenarios/defaults/doom.toml's [deathmatch.train]).
DEATHMATCH_TRAIN = {"eval_episodes": 4, "eval_greedy": False, "eval_every_minutes": 10.0, "epochs": 3,
                    "minibatches": 2, "bot_curriculum": True, "enemy_coef": 0.3, "learning_rate": 1e-4, "frame_skip": 4}


def test_the_table_holds_the_recipe_these_tests_name():
    assert own_map_defaults()["deathmatch"]["train"] == DEATHMATCH_TRAIN


@pytest.mark.parametrize("flags, field, value", [
    (["--no-bot-curriculum"], "bot_curriculum", False), (["--epochs", "1"], "epochs", 1),
    (["--enemy-coef", "0"], "enemy_coef", 0.0), (["--minibatches", "1"], "minibatches", 1),
    (["--learning-rate", "5e-4"], "learning_rate", 5e-4), (["--frame-skip", "6"], "frame_skip", 6)])
def test_each_part_of_the_recipe_turns_off_with_its_flag(own_map, tmp_path, flags, field, value):
    from doom_a3c.config import build_parser, given_values

    given = given_values(build_parser("train").parse_args(["--scenario", own_map, "--bots", "8", *flags]))
    config = resolve_new_run({**given, "model_dir": str(tmp_path / "m")})
    assert getattr(config, field) == value
    assert all(getattr(config, name) == recipe for name, recipe in DEATHMATCH_TRAIN.items() if name != field)


@pytest.mark.parametrize("mode", [{"self_play": True}, {"distributed": "ray"}])
def test_a_mode_without_the_curriculum_runs_the_rest_of_the_recipe(tmp_path, capsys, mode):
    """Self-play's matches have no bots to move and Ray's workers share no curriculum: the table's curriculum stays
    off there (with a note), the rest of the recipe is kept; --bot-curriculum given with them is refused."""
    config = resolve_new_run({"scenario": "cig", "model_dir": str(tmp_path / "m"), **mode})
    assert not config.bot_curriculum
    assert all(getattr(config, name) == value for name, value in DEATHMATCH_TRAIN.items()
               if name != "bot_curriculum" and not (mode.get("distributed") and name.startswith("eval")))
    assert "note: no bot curriculum with --" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="--bot-curriculum"):
        resolve_new_run({"scenario": "cig", "model_dir": str(tmp_path / "m"), "bot_curriculum": True, **mode})


def test_fewer_games_than_the_tables_minibatches_take_one_a_game(own_map, tmp_path):
    """A minibatch takes whole games: --envs-per-worker 1 runs the table's passes over 1 minibatch, not an error;
    --minibatches given beside it is still checked."""
    config = resolve_new_run({"scenario": own_map, "bots": 8, "envs_per_worker": 1, "model_dir": str(tmp_path / "m")})
    assert (config.minibatches, config.epochs) == (1, DEATHMATCH_TRAIN["epochs"])
    with pytest.raises(ConfigError, match="--minibatches must be at most --envs-per-worker"):
        resolve_new_run({"scenario": own_map, "bots": 8, "envs_per_worker": 1, "minibatches": 2,
                         "model_dir": str(tmp_path / "m")})


def test_a_resumed_run_keeps_the_recipe_it_was_trained_with(own_map, tmp_path):
    """A checkpoint of a --bots run resumes with its recipe; one trained before the recipe was the default (one
    update a rollout, no curriculum, no enemy head) resumes as it was trained, whatever the table says now."""
    config = resolve_new_run({"scenario": own_map, "bots": 8, "model_dir": str(tmp_path / "m")})
    saved = TrainConfig.from_dict(json.loads(config.to_json()))
    resumed = resolve_resumed_run(saved, {}, "models/arena")
    assert {name: getattr(resumed, name) for name in DEATHMATCH_TRAIN} == DEATHMATCH_TRAIN
    old = dataclasses.replace(saved, epochs=1, minibatches=1, bot_curriculum=False, enemy_coef=0.0,
                              learning_rate=5e-4, movement_shaping=[], frame_skip=6)
    old_resumed = resolve_resumed_run(TrainConfig.from_dict(json.loads(old.to_json())), {}, "models/arena")
    assert (old_resumed.epochs, old_resumed.minibatches, old_resumed.bot_curriculum, old_resumed.enemy_coef,
            old_resumed.learning_rate, old_resumed.movement_shaping, old_resumed.frame_skip) == \
        (1, 1, False, 0.0, 5e-4, [], 6)
    # a config saved before movement_shaping existed: none, as it was trained
    data = json.loads(old.to_json())
    del data["movement_shaping"]
    assert resolve_resumed_run(TrainConfig.from_dict(data), {}, "models/arena").movement_shaping == []


def test_a_value_a_hosts_preset_sets_at_its_top_level_wins_over_the_table():
    """A map's own preset over the deathmatch table: cig's top-level frame_skip, or a user's preset's, is not
    replaced by the table's [deathmatch.train] value; the rest of the table still applies."""
    table = own_map_defaults()["deathmatch"]
    preset = {"game_args": table["game_args"], "frame_skip": 6}
    defaults, _ = preset_train_defaults("arena", DOOM, preset, table)
    assert "frame_skip" not in defaults  # resolve_environment then takes the preset's 6
    assert {name: defaults[name] for name in DEATHMATCH_TRAIN if name != "frame_skip"} == \
        {name: value for name, value in DEATHMATCH_TRAIN.items() if name != "frame_skip"}
    assert preset_train_defaults("arena", DOOM, {"game_args": table["game_args"]}, table)[0]["frame_skip"] == 4


def test_cig_hosts_as_bots_does_and_bots_zero_means_none(tmp_path):
    cig = tomllib.loads((PRESETS_DIR / "cig.toml").read_text())
    table = own_map_defaults()["deathmatch"]
    assert cig["game_args"] == table["game_args"] and cig["frag_reward"] == table["frag_reward"]
    assert "reward_shaping" not in cig and "train" not in cig  # one copy of the weights and evaluation: the table's
    run = lambda **given: resolve_new_run({"scenario": "cig", "model_dir": str(tmp_path / "m"), **given})  # noqa: E731
    assert run().reward_shaping == [list(entry) for entry in table["reward_shaping"]] != []
    assert run().movement_shaping == table["movement_shaping"]
    assert run().bots == 7 and run(bots=3).bots == 3 and run(bots=0).bots == 0
    assert run(bots=0).game_args == cig["game_args"]  # still a deathmatch host: the preset's
    assert {name: getattr(run(), name) for name in DEATHMATCH_TRAIN} == DEATHMATCH_TRAIN


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
