"""cig trained and played end to end with short matches: progress.csv's match columns, TensorBoard's Match/ tags and
play.py's results.json report each match; a cig checkpoint saved before the shaping resumes as it was trained."""
import json

import imageio.v3 as iio
import pytest

from doom_a3c.run import presets
from doom_a3c.run.resolve import resolve_new_run
from doom_a3c.run.saved_config import resolve_resumed_run, upgrade_saved_config
from doom_a3c.run.training import train_from_flags

from support import read_rows

OLD_CIG_ACTIONS = [["ATTACK"], ["USE"], ["TURN_LEFT"], ["TURN_RIGHT"], ["MOVE_RIGHT"], ["MOVE_LEFT"],
                   ["MOVE_FORWARD"], ["MOVE_BACKWARD"]]


def test_a_cig_checkpoint_saved_before_the_shaping_resumes_as_trained(tmp_path):
    old = resolve_new_run({"scenario": "cig", "model_dir": str(tmp_path / "m")}).to_dict()
    old.update(actions=OLD_CIG_ACTIONS, game_variables=[], reward_shaping=[])
    resumed = resolve_resumed_run(upgrade_saved_config(old, "old"), {"max_minutes": 1.0}, "old")
    assert resumed.actions == OLD_CIG_ACTIONS and resumed.game_variables == [] and resumed.reward_shaping == []
    assert resumed.bots == 7 and resumed.frag_reward == 1.0 and resumed.plays_deathmatch()


@pytest.mark.slow
def test_cig_training_writes_a_row_per_match_with_its_columns(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    load = presets.load_preset

    def short_matches(name, *args):  # 3-second matches (105 tics, 27 steps) instead of 10 minutes
        preset = load(name, *args)
        if name == "cig":
            preset = {**preset, "game_args": preset["game_args"].replace("+timelimit 10.0", "+timelimit 0.05"),
                      "bots": 2}
        return preset

    monkeypatch.setattr(presets, "load_preset", short_matches)
    model = tmp_path / "model"
    flags = {"scenario": "cig", "model_dir": str(model), "frames_dir": str(tmp_path / "frames"), "max_steps": 240,
             "frame_size": 20, "hidden_size": 16, "lstm_size": 8, "workers": 1, "envs_per_worker": 2,
             "env_threads": 1, "gif_every": 0, "log_every_seconds": 60.0, "evaluate": False}
    assert train_from_flags(flags) == 0
    header = (model / "progress.csv").read_text().splitlines()[0]
    # the bot curriculum is on for a deathmatch host by default: each match's level too
    assert header == "wall_s,env_steps,episode,worker,reward,length,frags,deaths,frags_per_minute,place,bot_level"
    rows = read_rows(model / "progress.csv")
    assert len(rows) >= 2
    for row in rows:
        assert row["reward"] == row["frags"]  # the score is the frags net of suicides, shaping never in it
        assert 1 <= row["place"] <= 3 and row["deaths"] >= 0
        assert row["frags_per_minute"] == pytest.approx(row["frags"] / (105 / 35 / 60), abs=1.0)

    from doom_a3c.run.playback import play

    out = tmp_path / "play"
    summaries = play(str(model), str(out), episodes=1, video="gif")
    results = json.loads((out / "results.json").read_text())
    match = results["episodes"][0]["match"]
    assert set(match) == {"frags", "deaths", "frags_per_minute", "place", "players"} and match["players"] == 3
    assert summaries[0].match == match and match["frags"] == results["episodes"][0]["reward"]
    # the video shows the standing under each frame; its last frame the match's final report
    from doom_a3c.run.recording import CAPTION_HEIGHT

    gif = iio.imread(summaries[0].gif, index=None)
    assert gif.shape[1] == 240 + CAPTION_HEIGHT and gif[:, 240:].max() > 128
