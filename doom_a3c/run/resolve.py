"""The one place a run's config is put together: command line, preset and saved config, merged once.

- A fresh run: the flags given on the command line, over the scenario preset's `[train]` table, over the
  dataclass defaults; then the environment values (kind, .cfg path, action set as button lists, frame
  skip, reward scale, clipping, crop, ...) from the preset's top level, else the defaults of the kind.
- `--resume`: the checkpoint's saved config, with only the flags given on the command line replaced.
- `play.py`: the checkpoint's saved config as it is.

Afterwards every value is concrete (`TrainConfig.is_resolved`), and nothing reads a preset again: an
edited preset never changes what an old checkpoint plays or how it resumes. A checkpoint made before
configs were saved whole has its missing values resolved here once, from today's preset, with a warning.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from doom_a3c.algo.model.precision import choose_precision
from doom_a3c.config import MAX_BOTS, MIN_FRAME_SIZE, TrainConfig
from doom_a3c.envs.doom.action_sets import (
    action_name_problem,
    missing_buttons,
)
from doom_a3c.envs.doom.audio import check_openal
from doom_a3c.envs.doom.multiplayer import is_multiplayer
from doom_a3c.envs.doom.scenario_files import find_doom_scenario
from doom_a3c.envs.scenario import ATARI, DOOM, IMAGE, VECTOR, environment_kind
from doom_a3c.errors import ConfigError
from doom_a3c.run.doom_values import (
    deathmatch_host,
    deathmatch_table,
    deathmatch_preset,
    doom_action_heads,
    doom_actions,
    doom_cfg_facts,
    doom_variables,
    exploration_values,
    movement_values,
    preset_bool,
    shaping_entries,
    check_screen_resolution,
)
from doom_a3c.run.presets import preset_name, preset_train_defaults, scenario_preset

KIND_NAMES = {DOOM: "a ViZDoom scenario", ATARI: "an Atari game", IMAGE: "an image-observation env",
              VECTOR: "a vector-observation env"}
# frame skip, reward scale, reward clipping for each kind when the preset does not say (an image env's frame skip
# of 1 leaves it to the env: gymnasium envs skip frames themselves, if they do)
KIND_DEFAULTS = {DOOM: (4, 0.01, False), ATARI: (4, 1.0, True), IMAGE: (1, 1.0, False), VECTOR: (1, 1.0, False)}
NO_CROP = [0.0, 0.0, 0.0, 0.0]
DOOM_GAME_PROCESSES = 2  # per worker, by default: see "env_processes" in resolve_environment
GAMES_IN_PROCESSES = (DOOM, IMAGE)  # the kinds whose games run in child processes by default
# An Atari run off ale-py's vector env: one child process a worker, 20% more agent steps/s on Pong than games in the
# trainer (docs/defaults/atari-defaults.md#ale-pys-vector-env).
ATARI_GAME_PROCESSES = 1


def ale_vector_choice(config: TrainConfig, kind: str) -> bool:
    """Whether an Atari run's games run in ale-py's vector env: --ale-vector as given, else on wherever the vector
    env can run the id (a line says why not); ConfigError for --ale-vector where it cannot, or beside child
    processes, which it does not need."""
    if kind != ATARI:
        if config.ale_vector:
            raise ConfigError(f"--ale-vector: for Atari games only, not {config.scenario}")
        return False
    if config.ale_vector is False:
        return False
    from doom_a3c.envs.ale_vector_batch import vector_env_problem

    problem = vector_env_problem(config.scenario)
    if problem and config.ale_vector:
        raise ConfigError(f"--ale-vector: ale-py's vector env cannot run {config.scenario}: {problem}")
    if problem:
        print(f"note: {config.scenario} runs one gymnasium env a game, not in ale-py's vector env: {problem}",
              flush=True)
        return False
    if config.env_processes:
        raise ConfigError(f"--env-processes {config.env_processes}: ale-py's vector env steps {config.scenario}'s "
                          f"games in its own threads (--env-threads); add --no-ale-vector to run them one gymnasium "
                          f"env a game in child processes")
    return True


def import_env_module(module: str) -> None:
    """The module that registers a config's gymnasium id (--env-module), imported before the id is looked up."""
    from doom_a3c.envs.gym.registry import import_env_module as import_module

    import_module(module)


def _frame_stack(config: TrainConfig, kind: str) -> int:
    """--frame-stack as resolved (the preset's [train] value is in the config by now; else 1): images only."""
    stack = config.frame_stack or 1
    if stack > 1 and kind == VECTOR:
        raise ConfigError(f"--frame-stack {stack}: {config.scenario} observes a vector, and only image frames are "
                          f"stacked; give --frame-stack 1 (the LSTM keeps the history)")
    return stack


def resolve_environment(config: TrainConfig) -> TrainConfig:
    """Fill in every environment value still missing from the scenario and its preset."""
    import_env_module(config.env_module)
    kind = environment_kind(config.scenario)
    name = preset_name(config)
    preset = scenario_preset(config)
    frame_skip, reward_scale, clip_rewards = KIND_DEFAULTS[kind]
    if config.self_play and kind != DOOM:
        raise ConfigError(f"--self-play: for ViZDoom multiplayer maps (cig) only, not {config.scenario} "
                          f"({KIND_NAMES[kind]})")
    ale_vector = ale_vector_choice(config, kind)
    games_in_processes = DOOM_GAME_PROCESSES if kind in GAMES_IN_PROCESSES else 0
    if config.self_play:  # the opponents' network acts in this process, beside the games (check_self_play)
        games_in_processes = 0
    if kind == ATARI and not ale_vector:
        games_in_processes = ATARI_GAME_PROCESSES
    values: dict[str, Any] = {
        "ale_vector": ale_vector,
        "env_kind": kind,
        "frame_skip": config.frame_skip or int(preset.get("frame_skip", frame_skip)),
        "reward_scale": config.reward_scale or float(preset.get("reward_scale", reward_scale)),
        "clip_rewards": config.clip_rewards if config.clip_rewards is not None
        else bool(preset.get("clip_rewards", clip_rewards)),
        # ViZDoom's games run in child processes, where the watchdog can kill a stalled engine (docs/guide/faults.md);
        # as fast as games in this process (docs/measuring/speed-and-memory.md#games-in-child-processes).
        "env_processes": config.env_processes if config.env_processes is not None
        # An image env is as likely an engine that can stall (ViZDoom's own ids) or hold the GIL (an emulator).
        else games_in_processes,
        "frame_stack": _frame_stack(config, kind),
    }
    if kind != DOOM:
        if config.audio:
            raise ConfigError(f"--audio: for ViZDoom scenarios (their engine's sound), not {config.scenario} "
                              f"({KIND_NAMES[kind]})")
        values["audio"] = False
    if config.frame_width and kind in (ATARI, VECTOR):
        raise ConfigError(f"--frame-width: for ViZDoom scenarios and image envs, not {config.scenario} "
                          f"({KIND_NAMES[kind]})")
    if 0 < config.frame_width < MIN_FRAME_SIZE:
        raise ConfigError(f"--frame-width must be 0 (square) or at least {MIN_FRAME_SIZE}, the conv torso's smallest "
                          f"input, got {config.frame_width}")
    if kind == DOOM:
        if config.frame_norm in ("background", "pixel_background"):  # Doom's view moves: no background stays put
            raise ConfigError(f"--frame-norm {config.frame_norm}: for Atari and image envs, not ViZDoom scenarios; "
                              "Doom's frames take standardize (the default) or scale")
        _, cfg_path = find_doom_scenario(config.scenario, config.model_dir)
        check_screen_resolution(config.screen_resolution)
        cfg = doom_cfg_facts(cfg_path)
        buttons, cfg_variables = cfg.buttons, cfg.variables
        action_set, actions = doom_actions(config, preset, buttons, values["frame_skip"])
        action_heads = doom_action_heads(config, action_set, actions, buttons, values["frame_skip"])
        if not any(actions):  # none, or only combined_actions' wait: nothing to press
            raise ConfigError(f"{cfg_path} makes no buttons available: list them in its available_buttons "
                              f"(e.g. available_buttons = {{ MOVE_LEFT MOVE_RIGHT ATTACK }})")
        unknown = missing_buttons(actions, buttons)
        if unknown:
            raise ConfigError(f"preset for {name} uses buttons {unknown} that its cfg does not make "
                              f"available ({buttons})")
        problems = sorted(filter(None, (action_name_problem(b) for combo in actions for b in combo)))
        if problems:
            raise ConfigError(f"preset for {name}: {problems[0]}")
        values.update(scenario_path=cfg_path, actions=[list(combo) for combo in actions], action_set=action_set,
                      action_heads=action_heads,
                      crop=[float(x) for x in (config.crop or preset.get("crop", NO_CROP))],
                      **deathmatch_host(name, config, preset),
                      color=config.color if config.color is not None else bool(preset.get("color", False)),
                      **doom_variables(name, config, preset, cfg_variables),
                      reward_shaping=shaping_entries(name, config, deathmatch_preset(config, preset),
                                                     cfg_variables),
                      movement_shaping=movement_values(name, config, deathmatch_preset(config, preset)),
                      bootstrap_timeout=preset_bool(name, preset, "bootstrap_timeout", config.bootstrap_timeout),
                      # the .cfg that enables the audio buffer (basic_audio, a user's own) is one meant to be heard
                      audio=config.audio if config.audio is not None else cfg.audio,
                      **exploration_values(name, config, preset))
        if values["audio"]:  # before anything is written: an engine without OpenAL makes only silence
            check_openal("--audio")
    else:
        values.update(_gym_values(config, kind, values))
    return check_self_play(dataclasses.replace(config, **values))


def check_self_play(config: TrainConfig) -> TrainConfig:
    """A resolved config with --self-play that can run, else ConfigError: a ViZDoom multiplayer map, threads, games
    in this process (the opponents act with a network of the trainer's, doom_a3c/algo/opponents.py), and room in
    ViZDoom's 16 players for the learner, its opponents and the bots."""
    if not config.self_play:
        return config
    if config.env_kind != DOOM:
        raise ConfigError(f"--self-play: for ViZDoom multiplayer maps (cig) only, not {config.scenario} "
                          f"({KIND_NAMES[config.env_kind]})")
    if not is_multiplayer(config.game_args):
        raise ConfigError(f"--self-play: {config.scenario} is not a multiplayer map: its scenario passes no -host or "
                          f"-deathmatch (cig's preset does; --bots makes a map of your own a deathmatch host)")
    if config.distributed == "ray":
        raise ConfigError("--self-play runs with threads (A3C or GA3C), not with --distributed ray yet")
    if config.env_processes:
        raise ConfigError(f"--self-play: the games run in this process, beside the opponents' network; leave out "
                          f"--env-processes {config.env_processes} (or give 0)")
    players = 1 + config.self_play_opponents + (config.bots or 0)
    if players > MAX_BOTS + 1:
        raise ConfigError(f"--self-play-opponents {config.self_play_opponents} and --bots {config.bots}: "
                          f"{players} players, more than ViZDoom's {MAX_BOTS + 1}")
    return config


def _gym_values(config: TrainConfig, kind: str, values: dict[str, Any]) -> dict[str, Any]:
    """A gymnasium id's environment values, from one game built with the values resolved so far: its actions,
    and an image env's Dict vectors as game variables (standardised, as a .cfg's are, unless told otherwise)."""
    from doom_a3c.envs.gym.factory import describe_gym_env

    doom_only = {"bots": config.bots, "action-set": config.action_set not in (None, "buttons"),
                 "cfg-variables": config.cfg_variables,
                 "policy-heads": config.policy_heads != "flat", "fine-turns": config.fine_turns}
    pixels_only = {"normalize-variables": config.normalize_variables, "color": config.color}
    for flags, where in ((doom_only, "ViZDoom scenarios"), (pixels_only, "ViZDoom scenarios and image envs")):
        given = [f"--{flag}" for flag, on in flags.items() if on]
        if given and not (flags is pixels_only and kind == IMAGE):
            raise ConfigError(f"{', '.join(given)}: for {where} only, not {config.scenario}")
    gym = {"crop": config.crop or NO_CROP, "color": bool(config.color), "action_set": "buttons",
           "cfg_variables": False, "bots": 0}
    facts = describe_gym_env(dataclasses.replace(config, **values, **gym))
    variables = [[name, 1.0] for name in facts.variable_names]
    normalize = config.normalize_variables if config.normalize_variables is not None else True
    background = None
    if config.frame_norm in ("background", "pixel_background"):
        measured = facts.background if config.frame_norm == "background" else facts.background_image
        if measured is None or config.color:
            raise ConfigError(f"--frame-norm {config.frame_norm}: for grey image frames only, not {config.scenario}"
                              + (" in colour (--color)" if config.color else ""))
    if config.frame_norm == "background":
        background = config.frame_background if config.frame_background is not None else float(facts.background)
    return {**gym, "scenario_path": config.scenario, "actions": config.actions or [[n] for n in facts.action_names],
            "game_variables": variables, "normalize_variables": bool(normalize and variables),
            "frame_background": background, "frame_background_image": facts.background_image}


def resolve_new_run(given: dict[str, Any]) -> TrainConfig:
    """A fresh run's complete config from the flags given on the command line."""
    import_env_module(given.get("env_module", ""))
    config = TrainConfig(**given)
    name = preset_name(config)
    kind = environment_kind(config.scenario)
    preset = scenario_preset(config)
    deathmatch = deathmatch_table(config, preset) if kind == DOOM else {}
    defaults, source = preset_train_defaults(name, kind, preset, deathmatch)
    from_preset = {k: v for k, v in defaults.items() if k not in given}
    if from_preset.get("bot_curriculum") and (given.get("self_play") or given.get("distributed") == "ray"):
        # The curriculum moves the bots of a threaded run's matches: self-play's matches have none to move, and
        # Ray's workers share no curriculum. Only a --bot-curriculum given is refused with them.
        from_preset.pop("bot_curriculum")
        print(f"note: no bot curriculum with {'--self-play' if given.get('self_play') else '--distributed ray'}",
              flush=True)
    if from_preset.get("lr_schedule") == "linear" and not (given.get("max_steps") or given.get("max_minutes")):
        # A preset's annealing needs a budget to anneal over; a run without one keeps the rate (and says so).
        from_preset["lr_schedule"] = "constant"
        print("note: no --max-steps or --max-minutes, so the preset's --lr-schedule linear runs as constant",
              flush=True)
    games = given.get("envs_per_worker", from_preset.get("envs_per_worker", TrainConfig.envs_per_worker))
    if from_preset.get("minibatches", 1) > games:
        # A minibatch takes whole games: with fewer games a worker than the table's minibatches, one a game.
        from_preset["minibatches"] = games
    if from_preset:
        print(f"{source}: "
              + ", ".join(f"{k}={v}" for k, v in from_preset.items()), flush=True)
    config = with_precision(dataclasses.replace(config, **from_preset).validate())
    resolved = resolve_environment(evaluation_for_mode(config, given))
    if from_preset.get("bot_curriculum") and not resolved.bots:  # --bots 0: no bots for a curriculum to move
        resolved = dataclasses.replace(resolved, bot_curriculum=False)
    resolved = resolved.validate()  # again: some checks need the scenario's values (the preset's games, the env)
    if resolved.plays_deathmatch():
        print(f"a deathmatch host's shaping, learning only: {shaping_line(resolved)}", flush=True)
    return resolved


def shaping_line(config: TrainConfig) -> str:
    """The shaping a config runs, as train.py says it: each variable's reward a unit gained (and lost), and the
    movement bonus."""
    terms = [f"{name} {numbers[0]:+g}" + (f"/{-numbers[1]:+g}" if len(numbers) > 1 and numbers[1] else "")
             for name, *numbers in config.reward_shaping]
    if config.movement_shaping:
        moved, still, distance = config.movement_shaping
        terms.append(f"a step moving over {distance:g} map units {moved:+g}, one not {still:+g}")
    return ", ".join(terms) or "none"


def with_precision(config: TrainConfig, trained: str | None = None) -> TrainConfig:
    """The config with the --precision that runs on this CPU (never "auto": the config saves what ran), said on
    the run's first lines; ConfigError for bfloat16 asked for on a CPU without it (doom_a3c/algo/model/precision.py).
    `trained`: a resumed run's saved precision, when --precision is not given again."""
    choice = choose_precision(config.precision, trained=trained)
    print(choice.line(), flush=True)
    return dataclasses.replace(config, precision=choice.name)


def evaluation_for_mode(config: TrainConfig, given: dict[str, Any]) -> TrainConfig:
    """Evaluation during training runs in the trainer's process, beside its threads (A3C, GA3C); with
    --distributed ray it is off, and asking for it is a ConfigError."""
    if config.distributed != "ray" or not config.evaluate:
        return config
    if given.get("evaluate"):
        raise ConfigError("--evaluate: evaluation during training is not available with --distributed ray yet; "
                          "train with threads (the default) or give --no-evaluate")
    print("note: no evaluation during training with --distributed ray (eval.csv and best.ckpt are not written)",
          flush=True)
    return dataclasses.replace(config, evaluate=False)


def given_fields(config: TrainConfig) -> dict[str, Any]:
    """The flag fields of a TrainConfig made in Python that differ from the defaults: they count as given,
    the others are left to the preset, as on the command line."""
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(TrainConfig)
            if f.metadata.get("flag", True) and getattr(config, f.name) != f.default}


def resolve_python_config(config: TrainConfig) -> TrainConfig:
    """A TrainConfig made in Python, completed as `train` completes it: its values that differ from the defaults
    count as given, the scenario's preset fills in the rest (ConfigError for a bad value)."""
    given = given_fields(config)
    TrainConfig(**given).validate()
    return resolve_new_run(given)
