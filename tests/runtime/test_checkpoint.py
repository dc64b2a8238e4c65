"""Checkpointer save/load without a training run: round trip, last.ckpt alias, strict config.json, damaged
files -> CheckpointError."""
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.model.actor_critic import ActorCritic
from doom_a3c.config import TrainConfig
from doom_a3c.errors import CheckpointError
from doom_a3c.runtime.checkpoint import Checkpointer, RunCounters, read_checkpoint, resolve_prefix, restore
from doom_a3c.runtime.files import LAST

A, L = 3, 16
OBSERVATION_SHAPE = (84, 84, 1)
CONFIG = TrainConfig(scenario="basic", lstm_size=L, rollout=7, gamma=0.95)


def strict_json(text):
    """json.loads that refuses NaN and Infinity, as jq and JavaScript do."""
    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def _setup(seed, config=CONFIG, num_actions=A):
    net = ActorCritic(num_actions, L, seed=seed).build_variables(OBSERVATION_SHAPE)
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(net.trainable_variables)
    counters = RunCounters(config, num_actions)
    checkpoint = tf.train.Checkpoint(model=net, optimizer=optimizer, run=counters)
    return net, optimizer, counters, checkpoint


def _outputs(net):
    obs = tf.constant(np.random.default_rng(0).integers(0, 256, (4, 2, *OBSERVATION_SHAPE), dtype=np.uint8))
    out = net.unroll(obs, net.initial_state(2), tf.constant([[1.0, 1.0]] + [[0.0, 0.0]] * 3))
    return out.logits.numpy(), out.values.numpy()


@pytest.fixture
def saved(tmp_path):
    """A checkpoint after one optimizer step, counters 1234 steps / 56 episodes / 7 updates."""
    net, optimizer, counters, checkpoint = _setup(seed=0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(_outputs_tensor(net)))
    optimizer.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
    counters.env_steps.assign(1234)
    counters.episodes.assign(56)
    counters.updates.assign(7)
    counters.wall_seconds.assign(89.5)
    checkpointer = Checkpointer(str(tmp_path), checkpoint, counters, keep=2)
    path = checkpointer.save()
    return tmp_path, path, net, optimizer, checkpointer, counters


def _outputs_tensor(net):
    obs = tf.zeros((2, 1, *OBSERVATION_SHAPE), tf.uint8)
    out = net.unroll(obs, net.initial_state(1), tf.ones([2, 1]))
    return tf.concat([out.values[..., None], out.logits], -1)


def test_save_writes_numbered_checkpoint_alias_and_config(saved):
    """ckpt-<env_steps>, last.ckpt.index/.data and config.json (strict JSON) are written."""
    model_dir, path, *_ = saved
    assert os.path.basename(path) == "ckpt-1234"
    assert os.path.exists(path + ".index")
    assert os.path.exists(model_dir / "last.ckpt.index")
    assert os.path.exists(model_dir / "last.ckpt.data-00000-of-00001")
    assert TrainConfig.from_dict(strict_json((model_dir / "config.json").read_text())).to_json() == CONFIG.to_json()


def test_round_trip_gives_identical_policy_and_value(saved):
    """Restoring into a net built with another seed reproduces logits and values exactly."""
    model_dir, _, net, optimizer, *_ = saved
    expected = _outputs(net)
    net2, optimizer2, counters2, checkpoint2 = _setup(seed=7)
    before = _outputs(net2)
    assert np.abs(before[1] - expected[1]).max() > 1e-3  # the fresh net really differs
    restore(checkpoint2, str(model_dir / LAST))
    after = _outputs(net2)
    np.testing.assert_array_equal(after[0], expected[0])
    np.testing.assert_array_equal(after[1], expected[1])
    assert int(optimizer2.iterations.numpy()) == int(optimizer.iterations.numpy()) == 1
    for a, b in zip(optimizer.variables, optimizer2.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(counters2.env_steps.numpy()) == 1234
    assert int(counters2.episodes.numpy()) == 56
    assert int(counters2.updates.numpy()) == 7
    assert float(counters2.wall_seconds.numpy()) == 89.5


def test_read_checkpoint(saved):
    """Config (as saved, a dict), action count and counters are read without building anything."""
    model_dir, path, *_ = saved
    for prefix in (path, str(model_dir / LAST)):
        run = read_checkpoint(prefix)
        assert run.prefix == prefix
        assert run.config == strict_json(CONFIG.to_json())
        assert TrainConfig.from_dict(run.config) == CONFIG
        assert run.num_actions == A
        assert run.counters == {"env_steps": 1234, "episodes": 56, "updates": 7, "wall_seconds": 89.5}


def test_last_alias_follows_latest_save_after_old_ones_are_pruned(saved):
    """After more saves (keep=2) last.ckpt is the newest and still loads once its ckpt-N is deleted."""
    model_dir, _, net, _, checkpointer, counters = saved
    for steps in (2000, 3000, 4000):
        counters.env_steps.assign(steps)
        checkpointer.save()
    numbered = sorted(n for n in os.listdir(model_dir) if n.startswith("ckpt-") and n.endswith(".index"))
    assert numbered == ["ckpt-3000.index", "ckpt-4000.index"]
    assert read_checkpoint(str(model_dir / LAST)).counters["env_steps"] == 4000
    os.remove(model_dir / "ckpt-4000.index")
    os.remove(model_dir / "ckpt-4000.data-00000-of-00001")
    net2, _, _, checkpoint2 = _setup(seed=3)
    restore(checkpoint2, str(model_dir / LAST))
    np.testing.assert_array_equal(_outputs(net2)[1], _outputs(net)[1])
    assert not [n for n in os.listdir(model_dir) if ".tmp-" in n]


def test_resolve_prefix_forms(saved):
    """A prefix and a .index path resolve to the checkpoint prefix; a folder to its newest complete one."""
    model_dir, path, *_ = saved
    last = str(model_dir / LAST)
    # The `checkpoint` state file is rewritten only once a numbered checkpoint is whole, so it wins.
    assert resolve_prefix(str(model_dir)) == path
    assert resolve_prefix(last) == last
    assert resolve_prefix(last + ".index") == last
    assert resolve_prefix(path) == path


def test_resolve_prefix_missing_path(tmp_path):
    """A missing prefix or an empty folder raise CheckpointError."""
    with pytest.raises(CheckpointError, match="no checkpoint"):
        resolve_prefix(str(tmp_path / "nowhere" / "last.ckpt"))
    with pytest.raises(CheckpointError, match="no checkpoint"):
        resolve_prefix(str(tmp_path))


def test_garbage_index_gives_checkpoint_error(saved):
    """Random bytes in last.ckpt.index: CheckpointError from both reading and restoring."""
    model_dir, *_ = saved
    index = model_dir / "last.ckpt.index"
    os.remove(index)  # a hard link to ckpt-1234.index: replace it, do not write through it
    index.write_bytes(np.random.default_rng(0).bytes(2000))
    with pytest.raises(CheckpointError):
        read_checkpoint(str(model_dir / LAST))
    with pytest.raises(CheckpointError):
        restore(_setup(seed=1)[3], str(model_dir / LAST))


def _truncate_data(model_dir, fraction):
    data = model_dir / "last.ckpt.data-00000-of-00001"
    content = data.read_bytes()
    os.remove(data)  # break the hard link so ckpt-N keeps its data
    data.write_bytes(content[: int(len(content) * fraction)])


def test_truncated_data_restore_gives_checkpoint_error(saved):
    """Data file cut to half: restore raises CheckpointError, not a raw TensorFlow/IndexError."""
    model_dir, *_ = saved
    _truncate_data(model_dir, 0.5)
    with pytest.raises(CheckpointError):
        restore(_setup(seed=1)[3], str(model_dir / LAST))


def test_truncated_data_partial_restore_gives_checkpoint_error(saved):
    """play.py's restore (partial=True) also maps a truncated file to CheckpointError."""
    model_dir, *_ = saved
    _truncate_data(model_dir, 0.5)
    net = ActorCritic(A, L).build_variables(OBSERVATION_SHAPE)
    with pytest.raises(CheckpointError):
        restore(tf.train.Checkpoint(model=net), str(model_dir / LAST), partial=True)


def test_empty_data_file_read_gives_checkpoint_error(saved):
    """A zero-byte data file: read_checkpoint raises CheckpointError."""
    model_dir, *_ = saved
    _truncate_data(model_dir, 0.0)
    with pytest.raises(CheckpointError):
        read_checkpoint(str(model_dir / LAST))


def test_restore_into_wrong_action_count_gives_checkpoint_error(saved):
    """A checkpoint for 3 actions does not load into a 5-action net."""
    model_dir, *_ = saved
    checkpoint = _setup(seed=0, num_actions=5)[3]
    with pytest.raises(CheckpointError):
        restore(checkpoint, str(model_dir / LAST))


def test_not_a_doom_a3c_checkpoint(tmp_path):
    """A valid TF checkpoint without the run/ counters: CheckpointError from read_checkpoint."""
    prefix = tf.train.Checkpoint(v=tf.Variable(1.0)).write(str(tmp_path / "other"))
    with pytest.raises(CheckpointError, match="not a doom_a3c checkpoint"):
        read_checkpoint(prefix)


@pytest.mark.slow
def test_saved_checkpoint_plays_in_process(tmp_path, monkeypatch):
    """evaluation.play on a freshly saved basic checkpoint writes its GIF and results.json (fast play.py check)."""
    import imageio.v3 as iio

    from doom_a3c.algo.model.actor_critic import build_actor_critic
    from doom_a3c.run.playback import play
    from doom_a3c.run.resolve import resolve_new_run

    monkeypatch.chdir(tmp_path)  # ViZDoom writes _vizdoom.ini into the working directory
    model_dir = tmp_path / "model"
    config = resolve_new_run({"scenario": "basic", "lstm_size": L, "model_dir": str(model_dir)})
    size = config.frame_size  # basic's preset: 42
    net = build_actor_critic(config, A, (size, size, 1), name="global")
    optimizer = keras.optimizers.Adam(1e-3)
    optimizer.build(net.trainable_variables)
    counters = RunCounters(config, A)
    checkpoint = tf.train.Checkpoint(model=net, optimizer=optimizer, run=counters)
    counters.env_steps.assign(42)
    Checkpointer(str(model_dir), checkpoint, counters).save()
    out = tmp_path / "out"
    summaries = play(str(model_dir / LAST), str(out), episodes=1, greedy=True)
    assert len(summaries) == 1 and 1 <= summaries[0].length <= 76
    results = json.loads((out / "results.json").read_text())
    assert results["trained_env_steps"] == 42 and results["greedy"] is True
    assert results["episodes"][0]["reward"] == summaries[0].reward == results["mean_reward"]
    assert results["std_reward"] == 0.0
    assert iio.imread(out / "episode_001.gif", index=None).shape[1:] == (240, 320, 3)


def test_saving_the_same_step_twice_keeps_working(saved):
    """Two saves with unchanged counters (a stalled run): no error, no temporary files left, still loadable."""
    model_dir, _, _, _, checkpointer, counters = saved
    for _ in range(3):
        checkpointer.save()
    assert not [n for n in os.listdir(model_dir) if ".tmp-" in n]
    assert read_checkpoint(str(model_dir / LAST)).counters["env_steps"] == 1234
