"""One ViZDoom game behind the environment interface, built from a resolved config alone."""
from __future__ import annotations

import os

import numpy as np

from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom.audio import SilenceWatch, audio_shape, set_up_audio
from doom_a3c.envs.doom.action_sets import is_first_half, missing_buttons, pressed_button, tic_value
from doom_a3c.envs.doom.bot_levels import episode_start_commands, has_difficulty_script
from doom_a3c.envs.doom.labels import enemy_in_view
from doom_a3c.envs.doom.multiplayer import DEFAULT_MATCH_MINUTES, is_multiplayer, time_limit
from doom_a3c.envs.doom.shaping import MovementShaping, VariableShaping, match_report
from doom_a3c.envs.engine import leash_engine
from doom_a3c.envs.interface import AUDIO, ENEMY, Step, observation_dtype, preprocess_frame
from doom_a3c.errors import ConfigError

DOOM_TICS_PER_SECOND = 35
WINDOWS = ("agent", "person")  # shown as the agent plays it; played by a person at the keyboard and mouse
MAX_PLAYERS = 16  # PLAYER1_FRAGCOUNT ... PLAYER16_FRAGCOUNT


def button_names(game) -> list[str]:
    """A DoomGame's available buttons by name ("MOVE_LEFT"), in the order make_action expects them."""
    return [str(b).split(".")[-1].split(":")[0] for b in game.get_available_buttons()]


def button_vector(buttons: list[str], held: list[str]) -> list[float]:
    """make_action's argument that holds down the buttons in `held`."""
    return [1.0 if b in held else 0.0 for b in buttons]


def tic_input(buttons: list[str], names: list[str], frame_skip: int) -> list[float]:
    """make_action's argument for each tic of a step that plays these action names: 1 for a binary button held
    ("TURN_LEFT/2" holds TURN_LEFT), a delta bin's value for a tic (action_sets.tic_value), 0 for the rest."""
    values = {pressed_button(name): tic_value(name, frame_skip) for name in names}
    return [values.get(b, 0.0) for b in buttons]


def locate_cfg(path: str) -> str:
    """The saved .cfg path, or, when it is gone (ViZDoom installed elsewhere, another Ray host), the
    shipped scenario of the same file name."""
    if os.path.exists(path):
        return path
    import vizdoom

    shipped = os.path.join(vizdoom.scenarios_path, os.path.basename(path))
    if os.path.exists(shipped):
        return shipped
    raise ConfigError(f"scenario config {path} does not exist")


class DoomEnvironment:
    """One ViZDoom game, rendering RGB at --screen-resolution, stepping `frame_skip` tics per action; the
    network sees (frame_size, frame_size, 1) grey frames (RGB, 3 channels, with the preset's `color`), and
    beside them the config's game variables (each times its scale) as a record observation when there
    are any. Everything comes from the resolved config.

    Kept instead of ViZDoom's own gymnasium env: on basic with random actions, preprocessing included, 2,426 env
    steps/s and 0.40 ms CPU a step against its 827 and 1.16 ms (it renders the .cfg's 320x240 and wraps every
    step in dicts); benchmarks/tools/env_libraries.py, 20 s each, on a quiet 2-core machine.

    `window` "agent": the engine's own window shows the game and the engine keeps its own clock, 35 tics a second
    (ViZDoom's ASYNC_PLAYER), the agent's action held for its frame skip as in training. "person": the window
    takes a person's keyboard and mouse (ASYNC_SPECTATOR) and step() only lets `frame_skip` tics pass, its action
    ignored. None (training, videos): no window, the engine waits for each step, unless `real_time` (an agent
    in a person's match, hidden): the engine keeps its own clock too. A network game's engines must then all keep
    it: an engine on the clock waits for the others' tics, and one that waits for its player's steps makes none
    while its player waits for the match to start."""

    def __init__(self, config: TrainConfig, seed: int = 0, window: str | None = None, real_time: bool = False):
        import vizdoom as vzd

        if window not in (None, *WINDOWS):
            raise ConfigError(f"window must be one of {', '.join(WINDOWS)} or None, got {window!r}")

        self._vzd = vzd
        cfg_path = locate_cfg(config.scenario_path)
        self._game = vzd.DoomGame()
        try:
            self._game.load_config(cfg_path)
        except Exception as error:  # ViZDoom raises its own exception types
            raise ConfigError(f"cannot load scenario config {cfg_path}: {error}") from error
        self._game.set_screen_resolution(getattr(vzd.ScreenResolution, config.screen_resolution))
        self._game.set_screen_format(vzd.ScreenFormat.RGB24)
        self._game.set_window_visible(window is not None)
        self._game.set_mode({None: vzd.Mode.ASYNC_PLAYER if real_time else vzd.Mode.PLAYER,
                             "agent": vzd.Mode.ASYNC_PLAYER, "person": vzd.Mode.ASYNC_SPECTATOR}[window])
        self._person = window == "person"
        self._game.set_seed(seed % (2**31))
        if not self._person:
            # An agent turns and walks as it was trained, whatever a person's game saved in the _vizdoom.ini of the
            # folder it runs in: always-run (Caps Lock in the person's window) doubles each turn.
            self._game.add_game_args("+cl_run 0")
        if config.game_args:
            self._game.add_game_args(config.game_args)
        # --audio: each step's sound in the observation; off, the engine mixes none (a deaf run on basic_audio's .cfg)
        self._audio_shape = audio_shape(config.audio_sampling_rate, config.frame_skip) if config.audio else None
        self._silence = SilenceWatch(os.path.basename(cfg_path)) if config.audio else None
        if config.audio:
            set_up_audio(self._game, vzd, config.audio_sampling_rate, config.frame_skip)
        else:
            self._game.set_audio_buffer_enabled(False)
        self._match = config.plays_deathmatch()
        if self._match and time_limit(config.game_args) is None and not self._game.get_episode_timeout():
            # Neither the host's arguments nor the .cfg end a match: a deathmatch would go on for ever, no episode
            # ever reported. The engine ends it at the default time limit, as a self-play match's.
            self._game.add_game_args(f"+timelimit {DEFAULT_MATCH_MINUTES:g}")
        self._frag_reward = config.frag_reward
        # A deathmatch host's score is the game's own frags (FRAGCOUNT's changes: a suicide takes one); what else the
        # engine pays (a .cfg's death_penalty or living_reward, a map script's reward) and frag_reward's excess over
        # 1 a frag are learnt alike, but as shaping, never in the score.
        self._counts_frags = bool(self._frag_reward) or self._match
        # The engine takes a .cfg's death_penalty only from a step that ends with the player dead, and the host's
        # instant respawn leaves most deaths over by then (shaping.py): a deathmatch host pays it for each death
        # DEATHCOUNT counts instead.
        self._death_penalty = float(self._game.get_death_penalty() or 0.0) if self._match else 0.0
        if self._death_penalty:
            self._game.set_death_penalty(0.0)
        if self._counts_frags:
            self._game.add_available_game_variable(vzd.GameVariable.FRAGCOUNT)
        self._bots = config.bots or 0  # None: a config made by hand, never resolved
        self._bot_level: int | None = None  # None: the map's own bots at full strength (set_bot_level)
        self._difficulty_script: bool | None = None  # whether the map has it: read once a level is set
        self._frags = 0.0
        # Variables the engine must report: the network's and the shaping's (the cfg may list none of them).
        self._variable_names = [getattr(vzd.GameVariable, name) for name, _ in config.game_variables]
        self._variable_scales = np.array([scale for _, scale in config.game_variables], np.float32)
        self._shaper = VariableShaping(config.reward_shaping)
        self._shaping_names = [getattr(vzd.GameVariable, name) for name in self._shaper.names]
        # A multiplayer game (a host, a joining player) counts its player's frags and deaths (_tally: scores(), and
        # a match's report). A deathmatch host's episodes are matches, reported at their end with every player's
        # frags for the place; a death (DEATHCOUNT rising: the engine may respawn the player within the step)
        # restarts the shaping of what a respawn resets.
        variable = vzd.GameVariable
        self._deaths_variable = variable.DEATHCOUNT
        self._counts_deaths = bool(self._shaping_names) or self._match
        self._deaths = self._deaths_at_start = 0.0
        self._match_tics = 0  # the match's game time as last seen while it ran (a map's exit reads 0 after)
        multiplayer = self._match or is_multiplayer(config.game_args)
        self._tally_variables = [variable.FRAGCOUNT, variable.DEATHCOUNT] if multiplayer else []
        self._player_variables = [variable.PLAYER_COUNT] + [
            getattr(variable, f"PLAYER{i}_FRAGCOUNT") for i in range(1, MAX_PLAYERS + 1)] if self._match else []
        extra = [self._deaths_variable] if self._counts_deaths else []
        for tracked in dict.fromkeys(self._variable_names + self._shaping_names + extra + self._tally_variables
                                     + self._player_variables):
            self._game.add_available_game_variable(tracked)
        self._exploration_reward = config.exploration_reward
        self._exploration_cell = config.exploration_cell
        self._position = [vzd.GameVariable.POSITION_X, vzd.GameVariable.POSITION_Y]
        self._movement = MovementShaping(*config.movement_shaping) if config.movement_shaping else None
        if self._exploration_reward or self._movement:
            for variable in self._position:
                self._game.add_available_game_variable(variable)
        self._visited: set[tuple[int, int]] = set()
        self._bootstrap_timeout = config.bootstrap_timeout
        # --enemy-coef: the labels buffer, for the learning-only target of whether an enemy is in view
        self._enemy_target = config.enemy_coef > 0
        self._game.set_labels_buffer_enabled(self._enemy_target or self._game.is_labels_buffer_enabled())
        leash_engine(self._game, vzd)
        try:
            self._game.init()
        except Exception as error:
            raise ConfigError(f"ViZDoom could not start {cfg_path}: {error}") from error
        buttons = button_names(self._game)
        unknown = missing_buttons(config.actions, buttons)
        if unknown:
            self._game.close()
            raise ConfigError(f"the action set uses buttons {unknown} that {cfg_path} does not make available "
                              f"({buttons})")
        self._frame_skip = config.frame_skip
        # Each action as (buttons, tics) parts: one, or two when it holds a button for the first half only
        # ("TURN_LEFT/2": held the first half of the tics, rounded up, then released). A delta bin's value acts on
        # every tic of both parts: a step turns what an angle bin's name says.
        first_tics = (config.frame_skip + 1) // 2
        self._inputs = []
        for combo in config.actions:
            held = tic_input(buttons, combo, config.frame_skip)
            if not any(is_first_half(b) for b in combo):
                self._inputs.append([(held, config.frame_skip)])
                continue
            after = tic_input(buttons, [b for b in combo if not is_first_half(b)], config.frame_skip)
            self._inputs.append([(held, first_tics), (after, config.frame_skip - first_tics)])
        self.action_names = ["+".join(combo) or "NOOP" for combo in config.actions]  # [] waits, as ALE's NOOP
        self.num_actions = len(self._inputs)
        self.seconds_per_step = config.frame_skip / DOOM_TICS_PER_SECOND
        self.seconds_per_tic = 1.0 / DOOM_TICS_PER_SECOND
        self._crop = tuple(config.crop)
        self._color = config.color
        self.observation_shape = (config.frame_size, config.frame_width or config.frame_size, 3 if config.color else 1)
        self._record = observation_dtype(self.observation_shape, len(self._variable_names), self._enemy_target,
                                         self._audio_shape) \
            if self._variable_names or self._enemy_target or self._audio_shape else None
        self._last_screen: np.ndarray | None = None
        self._last_observation: np.ndarray | None = None
        # True: step() plays its frame_skip tics one by one and keeps every tic's screen in `tic_screens`, for
        # videos that show each tic (play.py); the game, rewards and observations are the same either way.
        self.record_tics = False
        self.tic_screens: list[np.ndarray] = []
        self._tics_seen = 0  # with record_tics: the episode's tics by the engine's clock, as last seen

    def _variables(self, variables: list) -> np.ndarray:
        return np.array([self._game.get_game_variable(v) for v in variables])

    def _restart_shaping(self) -> None:
        """Changes count from now (an episode start, a respawn's refilled health and ammo pay nothing), and
        only the cell the player stands in is visited."""
        if self._shaping_names:
            self._shaper.restart(self._variables(self._shaping_names))
        if self._exploration_reward:
            self._visited = {self._cell()}
        if self._movement:
            self._movement.restart(self._variables(self._position))

    def _cell(self) -> tuple[int, int]:
        x, y = self._variables(self._position) // self._exploration_cell
        return int(x), int(y)

    def _observe(self) -> np.ndarray:
        state = self._game.get_state()
        self._last_screen = state.screen_buffer
        frame = preprocess_frame(self._last_screen, self._crop, self.observation_shape[0], self._color,
                                 width=self.observation_shape[1])
        if self._record is None:
            self._last_observation = frame
            return frame
        observation = np.zeros((), self._record)
        observation["frame"] = frame
        observation["variables"] = self._variables(self._variable_names) * self._variable_scales
        if self._enemy_target:
            observation[ENEMY] = enemy_in_view(state.labels_buffer, state.labels)
        if self._silence is not None:
            observation[AUDIO] = state.audio_buffer
            self._silence.hear(state.audio_buffer)
        self._last_observation = observation
        return observation

    def _final_observation(self) -> np.ndarray:
        """What a finished episode's step returns (never acted on: the caller resets)."""
        return np.zeros((), self._record) if self._record is not None else np.zeros(self.observation_shape, np.uint8)

    def _shaping(self, respawned: bool = False) -> float:
        """The preset's learning bonus for this step: the changes of the shaping variables (after a death the
        player lives on from, the counters' alone), and the exploration reward when the player enters a cell not
        yet visited this episode, and the movement bonus (0 without any of them)."""
        bonus = 0.0
        if self._shaping_names:
            bonus += self._shaper.bonus(self._variables(self._shaping_names), respawned)
        if self._movement and not self._game.is_episode_finished():
            bonus += self._movement.bonus(self._variables(self._position), respawned)
        if self._exploration_reward and not self._game.is_episode_finished():
            cell = self._cell()
            if cell not in self._visited:
                self._visited.add(cell)
                bonus += self._exploration_reward
        return bonus

    def set_bot_level(self, level: int | None) -> None:
        """The bots' strength from the next episode's start on, 0 to 5 (doom_a3c/envs/doom/bot_levels.py); None:
        the map's own bots at full strength."""
        if level is not None and self._difficulty_script is None:
            self._difficulty_script = has_difficulty_script(self._game.get_doom_scenario_path(),
                                                            self._game.get_doom_map())
        self._bot_level = level

    def reseed(self, seed: int) -> None:
        """ViZDoom's RNG draws each episode's start from this seed from the next new_episode() on."""
        self._game.set_seed(seed % (2**31))

    def reset(self) -> np.ndarray:
        self._game.new_episode()
        for command in episode_start_commands(self._bots, self._bot_level, bool(self._difficulty_script)):
            self._game.send_game_command(command)
        self._frags = self._game.get_game_variable(self._vzd.GameVariable.FRAGCOUNT) if self._counts_frags else 0.0
        if self._counts_deaths:  # DEATHCOUNT goes on from the last match's
            self._deaths = self._deaths_at_start = self._game.get_game_variable(self._deaths_variable)
        self._match_tics = self._tics_seen = 0
        self._restart_shaping()
        return self._observe()

    def _died(self) -> tuple[bool, float]:
        """Whether the player died during the last step (respawned since or not), and its deaths as DEATHCOUNT
        counts them (0 where deaths are not counted)."""
        dead, deaths = self._game.is_player_dead(), 0.0
        if self._counts_deaths:
            before, self._deaths = self._deaths, self._game.get_game_variable(self._deaths_variable)
            deaths = self._deaths - before
            dead = dead or deaths > 0
        return dead, deaths

    def _tally(self) -> tuple[float, float]:
        """A multiplayer game's player's frags (a suicide takes one) and deaths, as the engine counts them now
        (DEATHCOUNT from the game's start, over its matches); also once the game ended."""
        frags, deaths = self._variables(self._tally_variables)
        return float(frags), float(deaths)

    def match_report(self) -> dict[str, float]:
        """The match so far: frags, deaths, frags a minute of game time, place among all players (bots too)."""
        frags, deaths = self._tally()
        players = int(self._game.get_game_variable(self._player_variables[0]))
        self._match_tics = self._game.get_episode_time() or self._match_tics
        return match_report(frags, deaths - self._deaths_at_start, self._match_tics,
                            self._variables(self._player_variables[1:1 + players]), DOOM_TICS_PER_SECOND)._asdict()

    def _advance_tic_by_tic(self, inputs: list[tuple[list[float], int]]) -> float:
        """The inputs' make_action(buttons, tics) one tic at a time, keeping each tic's screen until the episode
        ends (the engine shows none after). The same tics and inputs, so the same game: the rewards of the
        single tics add up to make_action's."""
        self.tic_screens = []
        reward = 0.0
        for buttons, tics in inputs:
            self._game.set_action(buttons)
            for _ in range(tics):
                self._game.advance_action(1)
                reward += self._game.get_last_reward()
                if self._game.is_episode_finished() or self._game.is_player_dead():
                    return reward
                self._tics_seen = self._game.get_episode_time()
                self.tic_screens.append(self._game.get_state().screen_buffer.copy())
        return reward

    def _advance(self, inputs: list[tuple[list[float], int]]) -> float:
        """make_action for each part of the action; a half-held action's second part only while the episode and
        the player's life go on (one make_action, and no extra engine call, for every other action)."""
        buttons, tics = inputs[0]
        reward = self._game.make_action(buttons, tics)
        for buttons, tics in inputs[1:]:
            if tics and not (self._game.is_episode_finished() or self._game.is_player_dead()):
                reward += self._game.make_action(buttons, tics)
        return reward

    def _score(self, engine_reward: float) -> tuple[float, float]:
        """(the step's score, what learning gets beside it as shaping) from the engine's reward for the step: a
        deathmatch host scores the frags gained and learns frag_reward a frag and the engine's reward; any other
        game scores the engine's reward plus frag_reward a frag."""
        if not self._counts_frags:
            return engine_reward, 0.0
        frags = self._game.get_game_variable(self._vzd.GameVariable.FRAGCOUNT)
        gained, self._frags = frags - self._frags, frags
        if self._match:
            return gained, engine_reward + (self._frag_reward - 1.0) * gained
        return engine_reward + self._frag_reward * gained, 0.0

    def step(self, action: int) -> Step:
        if self._person:  # the person's input, read by the engine tic by tic
            self._game.advance_action(self._frame_skip)
            engine_reward = self._game.get_last_reward()
        elif self.record_tics:
            engine_reward = self._advance_tic_by_tic(self._inputs[action])
        else:
            engine_reward = self._advance(self._inputs[action])
        reward, learning_only = self._score(engine_reward)
        finished = self._game.is_episode_finished()
        if not finished and self._match:
            self._match_tics = self._game.get_episode_time()
        died, deaths = self._died()
        shaping = self._shaping(respawned=died and not finished) + learning_only - self._death_penalty * deaths
        left_dead = not finished and self._game.is_player_dead()
        if left_dead:
            # A deathmatch: the player lives on after a death (the host's sv_forcerespawn would respawn it a tic
            # later). The engine shows no state once the episode is over, and a map's script may end it on the
            # death, after the step (ViZDoom's multi_deathmatch.wad exits the map at its duel's first death).
            self._game.respawn_player()
            finished = self._game.is_episode_finished()
        if finished:  # Doom has no lives: the learning terminal is the real end
            if self._silence is not None:
                self._silence.check_episode()
            match = self.match_report() if self._match else None
            if self._bootstrap_timeout and self._game.is_episode_timeout_reached() and not self._game.is_player_dead():
                # The engine shows no frame once the episode is over: the last one stands for the state the
                # timeout cut short, and learning bootstraps from its value.
                return Step(self._last_observation, float(reward), False, True, shaping, truncated=True, match=match)
            return Step(self._final_observation(), float(reward), True, True, shaping, match=match)
        if left_dead:  # what the respawn reset counts from here
            self._restart_shaping()
        return Step(self._observe(), float(reward), False, False, shaping)

    def scores(self) -> dict[str, int]:
        """This player's frags and deaths so far, in a multiplayer game (_tally); also once it ended."""
        if not self._tally_variables:
            raise ConfigError("scores() needs a multiplayer game (game_args with -host, -join or -deathmatch)")
        frags, deaths = self._tally()
        return {"frags": int(frags), "deaths": int(deaths)}

    def episode_tics(self) -> int:
        """With `record_tics`: the engine's clock (game tics) at the episode's last tic seen, the tics of the map's
        start before its first state included (14 on basic.wad): in a window, also the tics its player was too late
        to see. (The engine reads 0 once a map's exit has ended the episode.)"""
        return self._tics_seen

    def screen(self) -> np.ndarray:
        """The last rendered frame at full resolution, RGB."""
        assert self._last_screen is not None, "reset() first"
        return self._last_screen

    def close(self) -> None:
        self._game.close()
