"""preprocess_frame and the ActorCritic network: shapes, LSTM state handling, initialisers."""
import numpy as np
import pytest
import tensorflow as tf

from doom_a3c.algo.model.actor_critic import ActorCritic, LSTMState
from doom_a3c.algo.model.layers import NormalizedColumns
from doom_a3c.envs.interface import preprocess_frame

A, L = 4, 32
OBSERVATION_SHAPE = (84, 84, 1)  # preprocess_frame's default size


# ---- preprocess_frame ----------------------------------------------------------------------------
def test_preprocess_rgb_shape_dtype_range():
    """A 160x120 RGB screen becomes (84, 84, 1) uint8 within the input's grey range."""
    rng = np.random.default_rng(0)
    screen = rng.integers(40, 200, size=(120, 160, 3), dtype=np.uint8)
    out = preprocess_frame(screen)
    assert out.shape == (84, 84, 1) == OBSERVATION_SHAPE
    assert out.dtype == np.uint8
    assert 40 <= out.min() and out.max() <= 200


def test_preprocess_rgb_uses_luma_weights_in_rgb_order():
    """Pure red -> 0.299*255 = 76, pure blue -> 0.114*255 = 29 (catches a BGR mix-up)."""
    red = np.zeros((120, 160, 3), np.uint8)
    red[..., 0] = 255
    blue = np.zeros((120, 160, 3), np.uint8)
    blue[..., 2] = 255
    assert np.all(preprocess_frame(red) == 76)
    assert np.all(preprocess_frame(blue) == 29)
    assert np.all(preprocess_frame(np.full((120, 160, 3), 255, np.uint8)) == 255)
    assert np.all(preprocess_frame(np.zeros((120, 160, 3), np.uint8)) == 0)


def test_preprocess_color_keeps_the_channels_in_rgb_order():
    """With color: a red-left, blue-right screen -> (42, 42, 3) uint8, red in channel 0 on the left and blue
    in channel 2 on the right (no grey conversion, no BGR mix-up)."""
    screen = np.zeros((120, 160, 3), np.uint8)
    screen[:, :80, 0] = 255
    screen[:, 80:, 2] = 255
    out = preprocess_frame(screen, size=42, color=True)
    assert out.shape == (42, 42, 3) and out.dtype == np.uint8
    assert np.all(out[:, :21] == [255, 0, 0]) and np.all(out[:, 21:] == [0, 0, 255])


def test_preprocess_to_a_wide_frame_keeps_the_layout():
    """width 64 at height 36: a red-left, blue-right screen -> (36, 64, 3), the left half red, the right blue;
    grey -> (36, 64, 1)."""
    screen = np.zeros((120, 160, 3), np.uint8)
    screen[:, :80, 0] = 255
    screen[:, 80:, 2] = 255
    out = preprocess_frame(screen, size=36, color=True, width=64)
    assert out.shape == (36, 64, 3) and out.dtype == np.uint8
    assert np.all(out[:, :32] == [255, 0, 0]) and np.all(out[:, 32:] == [0, 0, 255])
    grey = preprocess_frame(screen, size=36, width=64)
    assert grey.shape == (36, 64, 1) and np.all(grey[:, :32] == 76) and np.all(grey[:, 32:] == 29)
    # a crop first, then the same width: the crop's own sizes are the screen's, not the frame's
    cropped = preprocess_frame(screen, crop=(0.1, 0.1, 0.25, 0.0), size=36, color=True, width=64)
    assert cropped.shape == (36, 64, 3) and np.all(cropped[:, :21] == [255, 0, 0])


def test_the_network_takes_wide_frames():
    """A (36, 64, 3) frame through the conv torso: one policy and value per frame, as for a square one."""
    net = ActorCritic(A, lstm_size=L, seed=0).build_variables((36, 64, 3))
    out = net.step(tf.zeros((2, 36, 64, 3), tf.uint8), net.initial_state(2), tf.ones([2]))
    assert out.logits.shape == (2, A) and out.values.shape == (2,)


def test_preprocess_grey_input():
    """A 2-D grey screen is resized, not colour-converted."""
    grey = np.full((240, 320), 100, np.uint8)
    out = preprocess_frame(grey)
    assert out.shape == (84, 84, 1) and out.dtype == np.uint8
    assert np.all(out == 100)


def test_preprocess_keeps_layout():
    """Left half black, right half white stays left/right after resizing."""
    screen = np.zeros((120, 160), np.uint8)
    screen[:, 80:] = 255
    out = preprocess_frame(screen)[:, :, 0]
    assert np.all(out[:, :41] == 0) and np.all(out[:, 43:] == 255)


def _framed_screen(top, bottom, left, right, shape=(120, 160)):
    """White border of the given widths around a black interior."""
    screen = np.full(shape, 255, np.uint8)
    screen[top:shape[0] - bottom, left:shape[1] - right] = 0
    return screen


def test_preprocess_crop_removes_fractions():
    """crop=(0.25, 0.25, 0.25, 0.25) of 120x160 cuts 30 rows and 40 columns each side before resizing."""
    screen = _framed_screen(30, 30, 40, 40)
    out = preprocess_frame(screen, (0.25, 0.25, 0.25, 0.25))
    assert out.shape == (84, 84, 1) and out.dtype == np.uint8
    assert np.all(out == 0)  # only the black interior is left
    assert preprocess_frame(screen).max() == 255  # without a crop the border is still there


def test_preprocess_crop_is_asymmetric_and_works_on_rgb():
    """Each side is cut by its own fraction; RGB input gives the same grey result."""
    grey = _framed_screen(12, 0, 0, 80)  # 10% top, half the width on the right
    rgb = np.repeat(grey[:, :, None], 3, axis=2)
    crop = (0.1, 0.0, 0.0, 0.5)
    assert np.all(preprocess_frame(grey, crop) == 0)
    np.testing.assert_array_equal(preprocess_frame(rgb, crop), preprocess_frame(grey, crop))


def test_basic_preset_crop_cuts_the_seed_border():
    """The basic preset's crop, as a run's resolved config holds it, removes 10 rows top and bottom and 30 columns
    each side of 160x120 (its comment)."""
    from doom_a3c.config import TrainConfig
    from doom_a3c.run.resolve import resolve_environment

    crop = resolve_environment(TrainConfig(scenario="basic")).crop
    assert crop[2] == crop[3] == 0.1875
    out = preprocess_frame(_framed_screen(10, 10, 30, 30), crop)
    assert np.all(out == 0), f"border left in the observation: max {out.max()}, rows cut {int(crop[0] * 120)}"


# ---- ActorCritic ---------------------------------------------------------------------------------
def _net(seed=0):
    net = ActorCritic(A, lstm_size=L, seed=seed).build_variables(OBSERVATION_SHAPE)
    # The default 0.01-norm policy head makes logits ~1e-3, which would hide state bugs under atol=1e-5:
    # give it unit-scale weights so logits are as sensitive to the LSTM state as the values are.
    rng = np.random.default_rng(seed + 100)
    net.policy_head.kernel.assign(rng.standard_normal((L, A)).astype(np.float32))
    return net


def _obs(T, B, seed=0):
    return tf.constant(np.random.default_rng(seed).integers(0, 256, size=(T, B, *OBSERVATION_SHAPE), dtype=np.uint8))


def _random_state(B, seed=1):
    rng = np.random.default_rng(seed)
    return LSTMState(tf.constant(rng.uniform(-1, 1, (B, L)), tf.float32), tf.constant(rng.uniform(-1, 1, (B, L)), tf.float32))


def _chained_steps(net, obs, state, starts):
    logits, values = [], []
    for t in range(obs.shape[0]):
        out = net.step(obs[t], state, starts[t])
        state = out.state
        logits.append(out.logits)
        values.append(out.values)
    return tf.stack(logits).numpy(), tf.stack(values).numpy(), state


def test_step_output_shapes():
    """step: logits [B, A], values [B], state [B, L] each."""
    net = _net()
    out = net.step(_obs(1, 3)[0], net.initial_state(3), tf.ones([3]))
    assert out.logits.shape == (3, A)
    assert out.values.shape == (3,)
    assert out.state.h.shape == out.state.c.shape == (3, L)


def test_unroll_output_shapes():
    """unroll: logits [T, B, A], values [T, B], final state [B, L]."""
    net = _net()
    out = net.unroll(_obs(5, 3), net.initial_state(3), tf.zeros([5, 3]))
    assert out.logits.shape == (5, 3, A)
    assert out.values.shape == (5, 3)
    assert out.state.h.shape == out.state.c.shape == (3, L)


@pytest.fixture(scope="module")
def net():
    return _net()


def test_unroll_equals_chained_steps_with_episode_starts(net):
    """A 30-step unroll == 30 single steps, with starts in the middle of some columns."""
    T, B = 30, 3
    obs = _obs(T, B)
    starts = np.zeros((T, B), np.float32)
    starts[0, 0] = 1
    starts[11, 1] = 1
    starts[20, 1] = 1
    starts[29, 2] = 1
    starts = tf.constant(starts)
    state = _random_state(B)
    unrolled = net.unroll(obs, state, starts)
    logits, values, final = _chained_steps(net, obs, state, starts)
    np.testing.assert_allclose(unrolled.logits.numpy(), logits, atol=1e-5)
    np.testing.assert_allclose(unrolled.values.numpy(), values, atol=1e-5)
    np.testing.assert_allclose(unrolled.state.h.numpy(), final.h.numpy(), atol=1e-5)
    np.testing.assert_allclose(unrolled.state.c.numpy(), final.c.numpy(), atol=1e-5)


def test_start_resets_only_its_own_column(net):
    """starts[10, 1] = 1: column 1 from t=10 equals a fresh zero-state run; columns 0 and 2 are untouched."""
    T, B = 30, 3
    obs = _obs(T, B, seed=3)
    state = _random_state(B, seed=4)
    no_reset = net.unroll(obs, state, tf.zeros([T, B]))
    starts = np.zeros((T, B), np.float32)
    starts[10, 1] = 1
    with_reset = net.unroll(obs, state, tf.constant(starts))
    # 1e-5: float32 sums in another order (oneDNN warns it may) move values of ~0.3 and logits of ~2 by about 1e-6;
    # the reset itself moves them by more than 1e-3 (below)
    for b in (0, 2):
        np.testing.assert_allclose(with_reset.values.numpy()[:, b], no_reset.values.numpy()[:, b], atol=1e-5)
        np.testing.assert_allclose(with_reset.logits.numpy()[:, b], no_reset.logits.numpy()[:, b], atol=1e-5)
    # before the start nothing changes, from the start on column 1 is a fresh episode
    np.testing.assert_allclose(with_reset.values.numpy()[:10, 1], no_reset.values.numpy()[:10, 1], atol=1e-5)
    fresh = net.unroll(obs[10:, 1:2], net.initial_state(1), tf.zeros([T - 10, 1]))
    np.testing.assert_allclose(with_reset.values.numpy()[10:, 1], fresh.values.numpy()[:, 0], atol=1e-5)
    np.testing.assert_allclose(with_reset.logits.numpy()[10:, 1], fresh.logits.numpy()[:, 0], atol=1e-5)
    # and the reset really changed something (the test could not pass with a no-op reset)
    assert np.abs(with_reset.values.numpy()[10, 1] - no_reset.values.numpy()[10, 1]) > 1e-3


def test_state_from_previous_rollout_is_carried(net):
    """The final state of rollout 1 feeds rollout 2: same as one long unroll, and unlike a zero state."""
    T, B = 30, 2
    obs = _obs(2 * T, B, seed=5)
    starts = np.zeros((2 * T, B), np.float32)
    starts[0] = 1
    starts = tf.constant(starts)
    whole = net.unroll(obs, net.initial_state(B), starts)
    first = net.unroll(obs[:T], net.initial_state(B), starts[:T])
    second = net.unroll(obs[T:], first.state, starts[T:])
    np.testing.assert_allclose(second.values.numpy(), whole.values.numpy()[T:], atol=1e-5)
    np.testing.assert_allclose(second.logits.numpy(), whole.logits.numpy()[T:], atol=1e-5)
    from_zero = net.unroll(obs[T:], net.initial_state(B), starts[T:])
    assert np.abs(from_zero.values.numpy()[0] - second.values.numpy()[0]).max() > 1e-3
    assert np.abs(from_zero.logits.numpy()[0] - second.logits.numpy()[0]).max() > 1e-3


def test_start_at_step_zero_discards_initial_state(net):
    """starts[0]=1 makes the incoming state irrelevant."""
    obs = _obs(3, 2, seed=6)
    starts = tf.constant([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    a = net.unroll(obs, _random_state(2, seed=7), starts)
    b = net.unroll(obs, net.initial_state(2), starts)
    np.testing.assert_allclose(a.values.numpy(), b.values.numpy(), atol=1e-6)


def test_different_seeds_give_different_weights():
    """The seed reaches the initialisers; the same seed reproduces them."""
    a = ActorCritic(A, L, seed=0).build_variables(OBSERVATION_SHAPE)
    b = ActorCritic(A, L, seed=0).build_variables(OBSERVATION_SHAPE)
    c = ActorCritic(A, L, seed=1).build_variables(OBSERVATION_SHAPE)
    np.testing.assert_array_equal(a.hidden.kernel.numpy(), b.hidden.kernel.numpy())
    assert not np.allclose(a.hidden.kernel.numpy(), c.hidden.kernel.numpy())


# ---- NormalizedColumns ---------------------------------------------------------------------------
@pytest.mark.parametrize("std", [0.01, 1.0, 3.5])
def test_normalized_columns_norm_equals_std(std):
    """Every column of the initialised matrix has L2 norm std."""
    w = NormalizedColumns(std, seed=3)((64, 7)).numpy()
    assert w.shape == (64, 7)
    np.testing.assert_allclose(np.linalg.norm(w, axis=0), np.full(7, std), rtol=1e-5)
    assert np.unique(np.round(w, 6)).size > 100  # really random, not a constant


def test_heads_use_normalized_columns():
    """Policy columns have norm 0.01 and the value column norm 1.0."""
    net = ActorCritic(A, L, seed=0).build_variables(OBSERVATION_SHAPE)
    np.testing.assert_allclose(np.linalg.norm(net.policy_head.kernel.numpy(), axis=0), np.full(A, 0.01), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(net.value_head.kernel.numpy(), axis=0), [1.0], rtol=1e-5)


def test_standardized_frames_ignore_overall_brightness():
    """--frame-norm standardize: a frame and the same frame made brighter give the same output; 'scale' does not."""
    frames = np.random.default_rng(3).integers(0, 200, (2, *OBSERVATION_SHAPE)).astype(np.uint8)
    brighter = frames + np.uint8(40)
    for norm, same in (("standardize", True), ("scale", False)):
        net = ActorCritic(A, L, seed=0, frame_norm=norm).build_variables(OBSERVATION_SHAPE)
        state, starts = net.initial_state(2), tf.ones([2])
        a, b = net.step(frames, state, starts), net.step(brighter, state, starts)
        assert np.allclose(a.logits.numpy(), b.logits.numpy(), atol=1e-5) == same
        assert np.allclose(a.values.numpy(), b.values.numpy(), atol=1e-5) == same


def test_background_frames_make_the_games_background_zero():
    """--frame-norm background with the grey 87 (Pong's field): a frame of it is zero input, a brighter object
    positive and a darker one negative, in [0, 1]'s units; background_grey finds the most common value, the lowest
    of a tie."""
    from doom_a3c.envs.gym.factory import background_grey

    net = ActorCritic(A, L, seed=0, frame_norm="background", frame_background=87.0).build_variables(OBSERVATION_SHAPE)
    frames = np.full((1, *OBSERVATION_SHAPE), 87, np.uint8)
    frames[0, 10, 20], frames[0, 30, 40] = 236, 50
    x = net._inputs(tf.constant(frames)).numpy()
    assert x[0, 10, 20, 0] == pytest.approx(149 / 255) and x[0, 30, 40, 0] == pytest.approx(-37 / 255)
    assert np.count_nonzero(x) == 2
    assert background_grey(frames[0]) == 87
    assert background_grey(np.array([[3, 3, 5], [5, 5, 0]], np.uint8)) == 5
    assert background_grey(np.array([1, 1, 2, 2], np.uint8)) == 1


def test_pixel_background_frames_make_each_pixels_own_background_zero():
    """--frame-norm pixel_background: each pixel less its own grey (a field of 87 on the left, black on the right), in
    [0, 1]'s units and on every frame of the stack: only what differs from the image is non-zero, in either sign."""
    image = [[87] * 42 + [0] * 42 for _ in range(84)]
    stack = (84, 84, 4)
    net = ActorCritic(A, L, seed=0, frame_norm="pixel_background", frame_background_image=image).build_variables(stack)
    frames = np.repeat(np.array(image, np.uint8)[None, :, :, None], 4, axis=3)
    frames[0, 10, 20, 3], frames[0, 30, 60, 0] = 236, 50
    x = net._inputs(tf.constant(frames)).numpy()
    assert x[0, 10, 20, 3] == pytest.approx(149 / 255) and x[0, 30, 60, 0] == pytest.approx(50 / 255)
    assert np.count_nonzero(x) == 2
    frames[0, 5, 5, :] = 0  # a dark object on the grey field: negative on each frame
    assert net._inputs(tf.constant(frames)).numpy()[0, 5, 5, :] == pytest.approx([-87 / 255] * 4)
    with pytest.raises(ValueError, match="needs frame_background_image"):
        ActorCritic(A, L, seed=0, frame_norm="pixel_background")


def test_pixel_backgrounds_are_each_pixels_median_over_random_play_with_new_games_as_they_end():
    """Five frames (a reset, then four steps, the third ending the game: its reset's frame is taken): the median of
    each pixel by hand; a frame's one channel and an image env's record give the same grey frame."""
    from doom_a3c.envs.gym.factory import pixel_backgrounds
    from doom_a3c.envs.interface import Step

    def frame(a, b):
        return np.array([[a, b]], np.uint8)[:, :, None]  # [1, 2, 1]

    class ScriptedGame:
        action_names = ["NOOP", "FIRE"]

        def __init__(self, record: bool):
            self.resets = iter([frame(10, 0), frame(200, 4)])
            self.steps = iter([(frame(10, 9), False), (frame(30, 9), False), (frame(99, 99), True),
                               (frame(10, 1), False)])
            self.record = record

        def _out(self, f):
            if not self.record:
                return f
            out = np.zeros((), [("frame", np.uint8, f.shape), ("health", np.float32)])
            out["frame"] = f
            return out

        def reset(self):
            return self._out(next(self.resets))

        def step(self, action):
            observation, over = next(self.steps)
            return Step(self._out(observation), 0.0, over, over)

    for record in (False, True):
        # pixel (0, 0): 10, 10, 30, 200 (the reset after the game's end), 10 -> 10; pixel (0, 1): 0, 9, 9, 4, 1 -> 4
        assert pixel_backgrounds(ScriptedGame(record), 5, seed=0) == [[10, 4]]


# ---- --activation ----------------------------------------------------------------------------------------------
def test_relu_torso_has_no_negative_features_and_elu_does():
    """--activation relu: every torso layer is a rectifier (no output below 0); ELU goes down to -1. The
    features are the hidden layer's output, computed by hand from the conv layers' weights."""
    frames = np.random.default_rng(5).integers(0, 255, (3, *OBSERVATION_SHAPE)).astype(np.uint8)
    lows = {}
    for activation in ("elu", "relu"):
        net = ActorCritic(A, L, seed=0, activation=activation).build_variables(OBSERVATION_SHAPE)
        for layer in (net.conv1, net.conv2, net.hidden):
            assert layer.activation.__name__ == activation
        x = tf.image.per_image_standardization(tf.cast(frames, tf.float32) / 255.0)
        lows[activation] = min(float(tf.reduce_min(layer_out)) for layer_out in _layer_outputs(net, x))
    assert lows["relu"] == 0.0
    assert -1.0 <= lows["elu"] < 0.0


def _layer_outputs(net, x):
    outputs = []
    for layer in (net.conv1, net.conv2, net.flatten, net.hidden):
        x = layer(x)
        outputs.append(x)
    return outputs


def test_an_unknown_activation_is_refused():
    with pytest.raises(ValueError, match="activation must be one of"):
        ActorCritic(A, L, activation="tanh")
