"""Deathmatch against bots: the learning-only shaping on a trace of game variables (a suicide, deaths, a respawn
that pays nothing), a match's report (frags, deaths, frags a minute, place), and both through DoomEnvironment
driven by a scripted fake engine."""
import dataclasses

import numpy as np
import pytest

from doom_a3c.config import TrainConfig
from doom_a3c.envs.doom import game as game_module
from doom_a3c.envs.doom.shaping import MatchReport, MovementShaping, VariableShaping, match_report
from doom_a3c.errors import ConfigError
from doom_a3c.run.presets import own_map_defaults

DEATHMATCH = own_map_defaults()["deathmatch"]

# Sample Factory's deathmatch weights (its REWARD_SHAPING_DEATHMATCH_V0, as a preset would list them): a suicide, a
# death, hits, damage, health, armour, the shotgun and its shells, each gained and lost
SAMPLE_FACTORY_WEIGHTS = {"FRAGCOUNT": ["FRAGCOUNT", 0.0, 0.5], "DEATHCOUNT": ["DEATHCOUNT", -0.75, 0.0],
                          "HITCOUNT": ["HITCOUNT", 0.01, 0.0], "DAMAGECOUNT": ["DAMAGECOUNT", 0.003, 0.0],
                          "HEALTH": ["HEALTH", 0.005, 0.003], "ARMOR": ["ARMOR", 0.005, 0.001],
                          "WEAPON3": ["WEAPON3", 0.1, 0.05], "AMMO3": ["AMMO3", 0.001, 0.0005]}
NAMES = list(SAMPLE_FACTORY_WEIGHTS)


def sample_factory_shaping(names=NAMES) -> list:
    return [SAMPLE_FACTORY_WEIGHTS[name] for name in names]


def test_the_deathmatch_table_holds_kieligers_shaping():
    """What --bots N and cig learn from (scenarios/defaults/doom.toml's [deathmatch]): damage dealt, health and
    armour, ammunition picked up and spent, and the movement bonus, at the weights of Kieliger's recipe."""
    ammunition = [[f"AMMO{slot}", 0.02, 0.01] for slot in range(2, 8)]
    assert DEATHMATCH["reward_shaping"] == [["DAMAGECOUNT", 0.01, 0.0], ["HEALTH", 0.02, 0.01], ["ARMOR", 0.01, 0.0],
                                            *ammunition]
    assert DEATHMATCH["movement_shaping"] == [5e-4, -2.5e-3, 3.0]


def test_the_tables_shaping_on_a_trace_by_hand():
    shaping = VariableShaping(DEATHMATCH["reward_shaping"])
    #                damage health armor bullets shells rockets cells x x
    shaping.restart([0, 100, 0, 50, 0, 0, 0, 0, 0])
    trace = [
        # 3 bullets fired, 2 of them hits for 20 damage: 20 x 0.01 - 3 x 0.01
        ([20, 100, 0, 47, 0, 0, 0, 0, 0], False, 0.2 - 0.03),
        # hit back for 30 health: -30 x 0.01
        ([20, 70, 0, 47, 0, 0, 0, 0, 0], False, -0.3),
        # a medikit (25 health), a green armour (100) and a clip (10 bullets): 0.5 + 1.0 + 0.2
        ([20, 95, 100, 57, 0, 0, 0, 0, 0], False, 0.5 + 1.0 + 0.2),
        # killed: no death penalty in this recipe; the respawn's full health and 50 bullets pay nothing
        ([20, 100, 0, 50, 0, 0, 0, 0, 0], True, 0.0),
    ]
    for values, respawned, expected in trace:
        assert shaping.bonus(np.array(values, float), respawned) == pytest.approx(expected)


def test_shaping_on_a_trace_of_game_variables_by_hand():
    shaping = VariableShaping(sample_factory_shaping())
    #                  frags deaths hits damage health armor shotgun shells
    shaping.restart([0, 0, 0, 0, 100, 0, 0, 0])
    trace = [
        # two hits for 30 damage: 2 x 0.01 + 30 x 0.003
        ([0, 0, 2, 30, 100, 0, 0, 0], False, 0.02 + 0.09),
        # a frag (the score's +1, not the shaping's), then a shotgun and 8 shells picked up: 0.1 + 8 x 0.001
        ([1, 0, 2, 30, 100, 0, 1, 8], False, 0.1 + 0.008),
        # 40 health lost and a shell spent: -40 x 0.003 - 0.0005
        ([1, 0, 2, 30, 60, 0, 1, 7], False, -0.12 - 0.0005),
        # a medikit and armour: 25 x 0.005 + 100 x 0.005
        ([1, 0, 2, 30, 85, 100, 1, 7], False, 0.125 + 0.5),
        # a suicide, respawned within the step: the lost frag -0.5 and the death -0.75; the respawn's full health,
        # no armour, no shotgun and no shells pay nothing
        ([0, 1, 2, 30, 100, 0, 0, 0], True, -0.5 - 0.75),
        # the respawned player walks on: nothing changed, nothing paid
        ([0, 1, 2, 30, 100, 0, 0, 0], False, 0.0),
        # killed by a bot after hitting it once: +0.01 and -0.75; health at -20 pays nothing
        ([0, 2, 3, 30, -20, 0, 0, 0], True, 0.01 - 0.75),
    ]
    for values, respawned, expected in trace:
        assert shaping.bonus(np.array(values, float), respawned) == pytest.approx(expected)
    # Still dead at the step's end: the game respawns the player and restarts the shaping there (DoomEnvironment),
    # so the jump from -20 to 100 health is no pick-up.
    shaping.restart([0, 2, 3, 30, 100, 0, 0, 0])
    assert shaping.bonus(np.array([0, 2, 3, 30, 100, 0, 0, 0], float)) == 0.0


def test_without_the_respawn_rule_the_same_death_would_pay_a_pick_up():
    """The check above can fail: a respawn counted as changes pays the full health back."""
    shaping = VariableShaping(sample_factory_shaping(["DEATHCOUNT", "HEALTH"]))
    shaping.restart([0, 40])
    assert shaping.bonus(np.array([1, 100.0]), respawned=False) == pytest.approx(-0.75 + 60 * 0.005)
    shaping.restart([0, 40])
    assert shaping.bonus(np.array([1, 100.0]), respawned=True) == pytest.approx(-0.75)


def test_match_report_by_hand():
    # 10 minutes of game time (21,000 tics at 35 a second), 3 frags, 2 deaths: 0.3 frags a minute. The agent's 3
    # among 8 players: one bot has more (5), one as many (3): place 2.
    report = match_report(3, 2, 21_000, [3, 5, 3, -1, 0, 0, 2, 1])
    assert report == MatchReport(frags=3.0, deaths=2.0, frags_per_minute=pytest.approx(0.3), place=2.0, players=8.0)
    # A shorter match counts its own minutes: 2 frags in 3 minutes (6,300 tics); the most frags, shared: place 1.
    short = match_report(2, 0, 6_300, [2, 2, -1])
    assert short.frags_per_minute == pytest.approx(2 / 3) and short.place == 1.0 and short.players == 3.0
    assert match_report(-1, 1, 35 * 60, [-1, 0]).place == 2.0  # a suicide alone: last
    assert match_report(0, 0, 0, [0]).frags_per_minute == 0.0  # no game time yet


# ---- through DoomEnvironment, on a scripted engine --------------------------------------------------------------
class FakeDoomGame:
    """A DoomGame that plays a script: each make_action moves to the next row of game variables (by name), with
    `dead` telling whether the player is dead at the step's end and `reward` the engine's reward for the step; the
    last row ends the episode, as does a respawn into a row with `ended` (a map's script that exits on a death). As
    ViZDoom, no state once the episode is over."""

    script: list[dict] = []
    death_penalty = 0.0  # the .cfg's

    def __init__(self):
        self.row = {}
        self.step = 0
        self.respawns = 0
        self.commands = []
        self.ended = False

    def __getattr__(self, name):  # setters and the engine's path: nothing to do
        return lambda *args, **kwargs: None

    def get_available_buttons(self):
        return ["Button.ATTACK", "Button.MOVE_FORWARD"]

    def new_episode(self):
        self.step = 0
        self.row = self.script[0]
        self.ended = False

    def get_death_penalty(self):
        return self.death_penalty

    def set_death_penalty(self, penalty):
        self.death_penalty = penalty

    def send_game_command(self, command):
        self.commands.append(command)

    def make_action(self, buttons, tics):
        self.step += 1
        self.row = self.script[self.step]
        return float(self.row.get("reward", 0.0))

    def get_game_variable(self, variable):
        name = str(variable).split(".")[-1].split(":")[0]
        return float(self.row.get(name, 0.0))

    def is_episode_finished(self):
        return self.ended or self.step == len(self.script) - 1

    def is_player_dead(self):
        return bool(self.row.get("dead", False))

    def respawn_player(self):
        self.respawns += 1
        self.ended = bool(self.row.get("ended"))
        self.row = {**self.row, **self.row["respawned"]}

    def get_state(self):
        class State:
            screen_buffer = np.zeros((12, 16, 3), np.uint8)

        return None if self.is_episode_finished() else State()

    def get_episode_time(self):
        return self.step * 4

    def is_episode_timeout_reached(self):
        return False


def fake_config(**overrides) -> TrainConfig:
    return TrainConfig(env_kind="doom", scenario_path=__file__, actions=[["ATTACK"], ["MOVE_FORWARD"]], frame_skip=4,
                       reward_scale=1.0, clip_rewards=False, env_processes=0, ale_vector=False, frame_size=20, crop=[0.0] * 4,
                       game_args="-host 1 -deathmatch", bots=2, frag_reward=1.0,
                       reward_shaping=sample_factory_shaping(["FRAGCOUNT", "DEATHCOUNT", "HEALTH"]), **overrides)


def test_doom_environment_shapes_and_reports_a_match(monkeypatch):
    import vizdoom

    start = {"FRAGCOUNT": 0, "DEATHCOUNT": 4, "HEALTH": 100, "PLAYER_COUNT": 3,  # DEATHCOUNT: the last match's 4
             "PLAYER1_FRAGCOUNT": 0, "PLAYER2_FRAGCOUNT": 0, "PLAYER3_FRAGCOUNT": 0}
    FakeDoomGame.script = [
        start,
        # a frag: +1 in the score, nothing in the shaping; 30 health lost
        {**start, "FRAGCOUNT": 1, "PLAYER1_FRAGCOUNT": 1, "HEALTH": 70},
        # a suicide the engine respawned within the step: score -1, shaping -0.5 - 0.75, the full health free
        {**start, "DEATHCOUNT": 5, "HEALTH": 100},
        # killed by a bot and still dead at the step's end: -0.75, then respawned by the game at 100 health
        {**start, "DEATHCOUNT": 6, "HEALTH": -10, "PLAYER2_FRAGCOUNT": 1, "dead": True, "respawned": {"HEALTH": 100}},
        # the match ends: a frag, and a bot with 2
        {**start, "DEATHCOUNT": 6, "HEALTH": 100, "FRAGCOUNT": 1, "PLAYER1_FRAGCOUNT": 1, "PLAYER2_FRAGCOUNT": 1,
         "PLAYER3_FRAGCOUNT": 2},
    ]
    monkeypatch.setattr(vizdoom, "DoomGame", FakeDoomGame)
    env = game_module.DoomEnvironment(fake_config())
    env.reset()
    assert env._game.commands == ["addbot", "addbot"]
    steps = [env.step(0) for _ in range(4)]
    assert [s.reward for s in steps] == [1.0, -1.0, 0.0, 1.0]
    assert [s.shaping for s in steps] == pytest.approx([-0.09, -1.25, -0.75, 0.0])
    assert env._game.respawns == 1
    assert [s.match for s in steps[:3]] == [None] * 3 and steps[3].game_over
    assert steps[3].match == {"frags": 1.0, "deaths": 2.0, "frags_per_minute": pytest.approx(1 / (16 / 35 / 60)),
                              "place": 2.0, "players": 3.0}
    # A map that is no deathmatch host reports no match.
    monkeypatch.setattr(vizdoom, "DoomGame", FakeDoomGame)
    single = game_module.DoomEnvironment(dataclasses.replace(fake_config(), game_args="", bots=0))
    single.reset()
    assert all(single.step(0).match is None for _ in range(4))


def test_scores_read_the_players_frags_and_deaths_in_any_multiplayer_game(monkeypatch):
    """scores() (play.py's matches) reads the engine's counts as they stand, DEATHCOUNT's from the game's start,
    after every step and once the game ended; in a deathmatch host as in a joining player's game, which reports no
    match of its own. A single-player game has no scores."""
    import vizdoom

    start = {"FRAGCOUNT": 0, "DEATHCOUNT": 4, "PLAYER_COUNT": 2, "PLAYER1_FRAGCOUNT": 0, "PLAYER2_FRAGCOUNT": 0}
    FakeDoomGame.script = [start, {**start, "FRAGCOUNT": 2, "PLAYER1_FRAGCOUNT": 2},
                           {**start, "FRAGCOUNT": 1, "DEATHCOUNT": 5, "PLAYER1_FRAGCOUNT": 1}]
    monkeypatch.setattr(vizdoom, "DoomGame", FakeDoomGame)
    for game_args, bots in (("-host 1 -deathmatch", 1), ("-join 127.0.0.1", 0)):
        env = game_module.DoomEnvironment(dataclasses.replace(fake_config(), game_args=game_args, bots=bots,
                                                              reward_shaping=[]))
        env.reset()
        assert env.scores() == {"frags": 0, "deaths": 4}
        env.step(0)
        assert env.scores() == {"frags": 2, "deaths": 4}
        last = env.step(0)
        assert last.game_over and env.scores() == {"frags": 1, "deaths": 5}
        assert all(isinstance(value, int) for value in env.scores().values())
        assert last.match == ({"frags": 1.0, "deaths": 1.0, "frags_per_minute": pytest.approx(1 / (8 / 35 / 60)),
                               "place": 1.0, "players": 2.0} if bots else None)
    single = game_module.DoomEnvironment(dataclasses.replace(fake_config(), game_args="", bots=0, frag_reward=0.0))
    single.reset()
    with pytest.raises(ConfigError, match="multiplayer"):
        single.scores()


def test_a_deathmatch_hosts_score_is_the_frags_and_the_cfgs_death_penalty_is_learnt_once_a_death(monkeypatch):
    """The engine pays a .cfg's death_penalty only for a step that ends with the player dead: the host pays it for
    each death DEATHCOUNT counts, as shaping, and the engine's other rewards too; the score is the frags alone."""
    import vizdoom

    start = {"FRAGCOUNT": 0, "DEATHCOUNT": 0, "PLAYER_COUNT": 2, "PLAYER1_FRAGCOUNT": 0, "PLAYER2_FRAGCOUNT": 0}
    FakeDoomGame.script = [
        start,
        # a frag and a map script's reward of 0.5 for it
        {**start, "FRAGCOUNT": 1, "PLAYER1_FRAGCOUNT": 1, "reward": 0.5},
        # killed and respawned within the step: the engine pays no penalty
        {**start, "FRAGCOUNT": 1, "PLAYER1_FRAGCOUNT": 1, "DEATHCOUNT": 1},
        # killed and still dead at the step's end: the engine would pay -1, it pays nothing here
        {**start, "FRAGCOUNT": 1, "PLAYER1_FRAGCOUNT": 1, "DEATHCOUNT": 2, "dead": True, "respawned": {}},
        {**start, "FRAGCOUNT": 1, "PLAYER1_FRAGCOUNT": 1, "DEATHCOUNT": 2},
    ]
    monkeypatch.setattr(vizdoom, "DoomGame", FakeDoomGame)
    monkeypatch.setattr(FakeDoomGame, "death_penalty", 1.0)
    env = game_module.DoomEnvironment(dataclasses.replace(fake_config(), frag_reward=2.0, reward_shaping=[]))
    assert env._game.death_penalty == 0.0  # the host pays it itself
    env.reset()
    steps = [env.step(0) for _ in range(4)]
    assert [s.reward for s in steps] == [1.0, 0.0, 0.0, 0.0]
    # frag_reward 2: the frag's second unit and the script's 0.5 are learnt beside the score; -1 a death
    assert [s.shaping for s in steps] == pytest.approx([1.5, -1.0, -1.0, 0.0])
    assert steps[-1].game_over and steps[-1].match["frags"] == sum(s.reward for s in steps)
    # Another game keeps the engine's reward as its score, and the engine's own penalty.
    monkeypatch.setattr(FakeDoomGame, "death_penalty", 1.0)
    joined = game_module.DoomEnvironment(dataclasses.replace(fake_config(), game_args="-join 127.0.0.1", bots=0,
                                                                reward_shaping=[]))
    assert joined._game.death_penalty == 1.0
    joined.reset()
    assert joined.step(0).reward == 0.5 + 1.0  # the map's reward and a frag


def test_a_match_a_maps_script_ends_at_a_death_ends_there_with_its_report(monkeypatch):
    """The player dies on a step's last tic, and the map exits (its script's Exit_Normal) as the game respawns it:
    no state to observe; the step ends the match and reports it."""
    import vizdoom

    start = {"FRAGCOUNT": 0, "DEATHCOUNT": 0, "PLAYER_COUNT": 2, "PLAYER1_FRAGCOUNT": 0, "PLAYER2_FRAGCOUNT": 0}
    FakeDoomGame.script = [
        start,
        {**start, "DEATHCOUNT": 1, "PLAYER2_FRAGCOUNT": 1, "dead": True, "ended": True, "respawned": {}},
        start,  # never reached
        start,
    ]
    monkeypatch.setattr(vizdoom, "DoomGame", FakeDoomGame)
    env = game_module.DoomEnvironment(dataclasses.replace(fake_config(), reward_shaping=[]))
    env.reset()
    step = env.step(0)
    assert env._game.respawns == 1 and step.game_over and step.done
    assert step.match == {"frags": 0.0, "deaths": 1.0, "frags_per_minute": 0.0, "place": 2.0, "players": 2.0}
    env.reset()
    assert not env._game.ended


# ---- the movement bonus ------------------------------------------------------------------------------------------
def test_movement_bonus_by_hand():
    # Kieliger's values: +5e-4 for a step that moved more than 3 map units, -2.5e-3 for one that did not
    movement = MovementShaping(5e-4, -2.5e-3, 3.0)
    movement.restart([100.0, 200.0])
    trace = [
        ([103.0, 204.0], False, 5e-4),  # 5 units (3-4-5): moved
        ([105.0, 204.0], False, -2.5e-3),  # 2 units: standing, turning or against a wall
        ([108.0, 204.0], False, -2.5e-3),  # exactly 3 units is not more than 3
        ([108.0, 216.0], False, 5e-4),  # 12 units
        ([900.0, -40.0], True, 0.0),  # a respawn's teleport is no walk
        ([900.0, -36.0], False, 5e-4),  # and distances go on from the respawn point: 4 units
    ]
    for position, respawned, expected in trace:
        assert movement.bonus(np.array(position), respawned) == pytest.approx(expected)


def test_doom_environment_pays_the_movement_bonus_and_restarts_it_at_a_respawn(monkeypatch):
    import vizdoom

    start = {"FRAGCOUNT": 0, "DEATHCOUNT": 0, "HEALTH": 100, "PLAYER_COUNT": 3, "POSITION_X": 0.0, "POSITION_Y": 0.0}
    FakeDoomGame.script = [
        start,
        {**start, "POSITION_X": 10.0},  # moved 10 units: +5e-4
        {**start, "POSITION_X": 11.0},  # 1 unit: -2.5e-3
        # killed and still dead at the step's end, respawned far away: the death's -0.75 alone, then distances from
        # the respawn point
        {**start, "DEATHCOUNT": 1, "POSITION_X": 11.0, "dead": True,
         "respawned": {"POSITION_X": 500.0, "POSITION_Y": 500.0}},
        {**start, "DEATHCOUNT": 1, "POSITION_X": 500.0, "POSITION_Y": 501.0},  # 1 unit from the respawn point
        {**start, "DEATHCOUNT": 1, "POSITION_X": 500.0, "POSITION_Y": 501.0},  # the match's end: no position read
    ]
    monkeypatch.setattr(vizdoom, "DoomGame", FakeDoomGame)
    env = game_module.DoomEnvironment(fake_config(movement_shaping=[5e-4, -2.5e-3, 3.0]))
    env.reset()
    shaping = [env.step(1).shaping for _ in range(5)]
    assert shaping == pytest.approx([5e-4, -2.5e-3, -0.75, -2.5e-3, 0.0])


@pytest.mark.parametrize("value", [[5e-4, -2.5e-3], [5e-4, -2.5e-3, 0.0], [5e-4, "x", 3.0], [5e-4, float("nan"), 3.0],
                                   [True, -2.5e-3, 3.0], "fast"])
def test_a_bad_movement_shaping_is_refused_naming_the_form(value):
    from doom_a3c.run.doom_values import movement_values

    with pytest.raises(ConfigError, match=r"movement_shaping must be \[reward for a step that moved"):
        movement_values("maps/arena", TrainConfig(), {"movement_shaping": value})
    assert movement_values("maps/arena", TrainConfig(), {"movement_shaping": [5e-4, -2.5e-3, 3]}) == [5e-4, -2.5e-3,
                                                                                                     3.0]
    assert movement_values("maps/arena", TrainConfig(), {}) == []
