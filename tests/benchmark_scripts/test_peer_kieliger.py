"""benchmarks/peer_kieliger.py without its own environment (no PyTorch, no Stable-Baselines3, no engine): its CSVs
read by the readers of ours, its shaping, curriculum, actions, frame and match report against numbers worked by
hand, and its one-line user errors."""
import importlib.util
import os
import sys

import numpy as np
import pytest

from doom_a3c.envs.doom.shaping import MATCH_FIELDS
from doom_a3c.run.summaries import BOT_LEVEL, CSV_FIELDS, EVAL_FIELDS, read_progress

from support import REPO_ROOT

PEER_ONLY = ("torch", "stable_baselines3", "vizdoom", "cv2", "gymnasium")


def load_script(name: str):
    path = os.path.join(REPO_ROOT, "benchmarks", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def peer():
    """The peer loaded while its own environment's packages cannot be imported: it must not import them at load."""
    saved = {name: sys.modules[name] for name in PEER_ONLY if name in sys.modules}
    for name in PEER_ONLY:
        sys.modules[name] = None  # `import name` raises ImportError
    try:
        return load_script("peer_kieliger")
    finally:
        for name in PEER_ONLY:
            del sys.modules[name]
        sys.modules.update(saved)


def readings(peer, frags=0.0, damage=0.0, health=100.0, armor=0.0, x=0.0, y=0.0, pistol_ammo=50.0,
             shotgun_ammo=0.0, shotgun=0.0):
    """Readings with the pistol's bullets in AMMO2 (WEAPON2 held) and a shotgun's shells in AMMO3 (WEAPON3)."""
    ammo = [0.0] * 10
    ammo[2], ammo[3] = pistol_ammo, shotgun_ammo
    weapons = [0.0] * 10
    weapons[1], weapons[2], weapons[3] = 1.0, 1.0, shotgun
    return peer.Readings(frags, damage, health, armor, x, y, tuple(ammo), tuple(weapons))


def test_its_csvs_have_our_columns_and_our_readers_read_them(peer, tmp_path):
    assert peer.PROGRESS_FIELDS == CSV_FIELDS + MATCH_FIELDS + [BOT_LEVEL]  # a deathmatch run with a curriculum
    assert peer.EVAL_FIELDS == EVAL_FIELDS
    log = peer.ProgressLog(str(tmp_path / "progress.csv"))
    log.match(44.567, 13600, 1, 1, 1313, peer.match_report(4, 7, 5250, [4, 9, 1]), 0)
    log.match(90.0, 27200, 2, 0, 1313, peer.match_report(0, 2, 5250, [0, 3]), 1)
    log.close()
    peer.append_evaluation(str(tmp_path / "eval.csv"), 300.004, 40960, [1, 2, 2, 1])
    peer.append_evaluation(str(tmp_path / "eval.csv"), 600.5, 81920, [3])

    with open(tmp_path / "progress.csv") as handle:
        assert handle.readline().strip() == ",".join(CSV_FIELDS + MATCH_FIELDS + [BOT_LEVEL])
        assert handle.readline().strip() == "44.57,13600,1,1,4,1313,4,7,1.6,2,0"  # train.py's number format
    first, second = read_progress(str(tmp_path / "progress.csv"))
    assert first == {"wall_s": 44.57, "env_steps": 13600, "episode": 1, "worker": 1, "reward": 4, "length": 1313,
                     "frags": 4, "deaths": 7, "frags_per_minute": 1.6, "place": 2, "bot_level": 0}
    assert second["reward"] == 0 and second["place"] == 2 and second["bot_level"] == 1
    evaluations = read_progress(str(tmp_path / "eval.csv"))
    assert evaluations[0] == {"wall_s": 300.0, "env_steps": 40960, "episodes": 4, "mean": 1.5, "std": 0.5, "min": 1,
                              "max": 2}
    assert evaluations[1]["mean"] == 3 and evaluations[1]["std"] == 0

    # The Sample Factory comparison's reader of a deathmatch run takes the peer's folder as one of ours.
    sample_factory = load_script("peer_sample_factory")
    minutes, means = sample_factory.our_curve(str(tmp_path), "frags per minute")
    np.testing.assert_allclose(minutes, [44.57 / 60, 1.5])
    np.testing.assert_allclose(means, [1.6, 0.8])
    assert not sample_factory.lacks_match_column(str(tmp_path))


def test_shaping_against_hand_numbers(peer):
    last = readings(peer, frags=2, damage=100, health=80, x=10, y=10)
    # A frag, 30 damage dealt, 5 bullets used, 20 health lost, 25 armour picked up, moved 5 units (3-4-5)
    now = readings(peer, frags=3, damage=130, health=60, armor=25, x=13, y=14, pistol_ammo=45)
    assert peer.shaped_reward(last, now) == pytest.approx(1 + 0.30 - 0.05 - 0.20 + 0.25 + 5e-4)
    # 10 bullets and 25 health picked up, 20 shells for a shotgun not held (nothing), moved exactly 3: standing still
    now = readings(peer, frags=2, damage=100, health=105, x=13, y=10, pistol_ammo=60, shotgun_ammo=20)
    assert peer.shaped_reward(last, now) == pytest.approx(0.20 + 0.50 - 5e-4)
    assert peer.shaped_reward(last, now, peer.ShapingWeights(still=2.5e-3)) == pytest.approx(0.70 - 2.5e-3)
    # The shotgun held: its 20 shells count; a suicide takes a frag
    now = readings(peer, frags=1, damage=100, health=80, x=20, y=10, shotgun_ammo=20, shotgun=1.0)
    assert peer.shaped_reward(last, now) == pytest.approx(-1 + 0.40 + 5e-4)
    # A dead player's health reads far below 0: it counts as 0
    dead = readings(peer, frags=2, damage=100, health=-999900, x=10, y=10)
    assert peer.shaped_reward(last, dead) == pytest.approx(-0.80 - 5e-4)
    # Armour lost pays nothing
    armoured = last._replace(armor=50)
    assert peer.shaped_reward(armoured, armoured._replace(armor=10)) == pytest.approx(-5e-4)


def test_a_respawn_step_pays_the_counters_alone_and_a_match_counts_from_full_health(peer):
    last = readings(peer, frags=2, damage=100, health=15, armor=30, x=10, y=10, pistol_ammo=7)
    respawned = readings(peer, frags=3, damage=160, health=100, x=500, y=-200, pistol_ammo=50)
    baseline = peer.after_respawn(last, respawned)
    # The frag and 60 damage dealt before the death; no pick-up of the respawn's health, bullets or the move
    assert peer.shaped_reward(baseline, respawned) == pytest.approx(1 + 0.60 - 5e-4)
    start = peer.at_match_start(readings(peer, health=100, armor=0, damage=4000))
    assert start.health == 100 and start.armor == 0 and start.damage == 4000  # damage counts over matches


def test_the_curriculum_rises_when_ten_matches_pass_the_threshold(peer):
    curriculum = peer.BotCurriculum()
    assert curriculum.level == 0
    assert not any(curriculum.match_ended(100.0) for _ in range(9))  # ten matches needed
    assert curriculum.match_ended(100.0) and curriculum.level == 1 and not curriculum.returns  # the window empties
    assert not any(curriculum.match_ended(10.0) for _ in range(10))  # passes 10: a mean of exactly 10 does not
    assert curriculum.match_ended(20.0) and curriculum.level == 2  # the last ten: nine 10s and a 20, mean 11
    top = peer.BotCurriculum(peer.FULL_STRENGTH)
    assert not any(top.match_ended(1000.0) for _ in range(20)) and top.level == peer.FULL_STRENGTH
    assert peer.LEVEL_THRESHOLDS == (5, 10, 15, 20, 25)


def test_his_eighteen_actions(peer):
    buttons = ["ATTACK", "MOVE_FORWARD", "MOVE_LEFT", "MOVE_RIGHT", "TURN_RIGHT", "TURN_LEFT"]
    actions = peer.legal_actions(buttons)
    held = [{b for b, on in zip(buttons, action) if on} for action in actions]
    assert len(actions) == 18  # forward or not x left/right/neither x turn right/left/neither, less no-op; fire
    assert {"ATTACK"} in held and all(len(h) == 1 for h in held if "ATTACK" in h)
    assert set() not in held
    assert not any({"MOVE_LEFT", "MOVE_RIGHT"} <= h or {"TURN_LEFT", "TURN_RIGHT"} <= h for h in held)
    assert {"MOVE_FORWARD", "MOVE_LEFT", "TURN_RIGHT"} in held
    assert actions[0] == [0, 0, 0, 0, 0, 1]  # his order: the first button the most significant


def test_his_frame(peer):
    pytest.importorskip("cv2")
    assert peer.observation_shape(240, 320) == (100, 156, 3)
    screen = np.zeros((240, 320, 3), np.uint8)
    screen[:40] = 255  # cut off
    screen[:, :4] = screen[:, -4:] = 255
    screen[40:, 4:-4, 0] = 200
    frame = peer.preprocess(screen)
    assert frame.shape == (100, 156, 3) and frame.dtype == np.uint8
    assert (frame[..., 0] == 200).all() and (frame[..., 1:] == 0).all()


def test_match_report(peer):
    report = peer.match_report(4, 3, 5250, [4, 6, 4, 1, 7])  # 2.5 minutes of game time
    assert report == {"frags": 4, "deaths": 3, "frags_per_minute": pytest.approx(1.6), "place": 3}
    assert peer.match_report(0, 0, 0, [0])["frags_per_minute"] == 0


@pytest.mark.parametrize("flags, said", [
    (["--envs", "0"], "--envs must be at least 1"),
    (["--minutes", "-1"], "--minutes must be above 0"),
    (["--eval-episodes", "0"], "--eval-episodes must be at least 1"),
    (["--scenario", "/no/such.cfg"], "no such file"),
    (["--still-penalty", "-0.1"], "--still-penalty"),
    ([], "--out"),
])
def test_a_user_error_is_one_line_and_exit_2(peer, capsys, tmp_path, flags, said):
    argv = flags + (["--out", str(tmp_path)] if flags else [])
    with pytest.raises(SystemExit) as stop:
        peer.main(argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("error: ") and said in error


def test_without_pytorch_it_says_what_to_install(peer, capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert peer.main(["--out", str(tmp_path / "out")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "PyTorch and Stable-Baselines3" in error
    assert not os.path.exists(tmp_path / "out")  # nothing made before the check
