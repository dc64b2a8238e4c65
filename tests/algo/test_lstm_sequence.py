"""lstm_sequence: the same outputs and gradients as differentiating T calls of the Keras LSTMCell."""
import numpy as np
import pytest

from doom_a3c.algo.model.lstm_sequence import check_cell, lstm_sequence
from doom_a3c.quiet_import import keras, tf

T, B, D, H = 6, 3, 5, 4  # steps, games, input features, LSTM units


def cell_loop(cell, inputs, h, c, keep):
    """The reference: the cell called step by step, the carried state zeroed where keep is 0."""
    outputs = []
    for t in range(inputs.shape[0]):
        out, (h, c) = cell(inputs[t], [h * keep[t], c * keep[t]])
        outputs.append(out)
    return tf.stack(outputs), h, c


@pytest.fixture
def case():
    rng = np.random.default_rng(3)
    cell = keras.layers.LSTMCell(H, kernel_initializer=keras.initializers.GlorotUniform(seed=1))
    cell.build((None, D))
    cell.bias.assign(rng.normal(size=4 * H).astype(np.float32))  # the forget gate's 1s would hide a wrong gate order
    inputs = tf.constant(rng.normal(size=(T, B, D)).astype(np.float32))
    h = tf.constant(rng.normal(size=(B, H)).astype(np.float32))
    c = tf.constant(rng.normal(size=(B, H)).astype(np.float32))
    starts = np.zeros((T, B), np.float32)
    starts[2, 0] = starts[4, 1] = starts[0, 2] = 1.0  # episodes starting inside the rollout, and at its first step
    keep = tf.constant((1.0 - starts)[:, :, None])
    return cell, inputs, h, c, keep


def loss_and_gradients(run, cell, inputs, h, c, keep, use_final_state: bool):
    weights = np.arange(1, H + 1, dtype=np.float32) / H  # a loss that weighs every unit differently
    with tf.GradientTape() as tape:
        tape.watch([inputs, h, c])
        outputs, h_last, c_last = run(cell, inputs, h, c, keep)
        loss = tf.reduce_sum(outputs * weights) + tf.reduce_sum(tf.square(outputs))
        if use_final_state:
            loss += tf.reduce_sum(h_last * 0.7) - tf.reduce_sum(c_last * 0.3)
    sources = [inputs, h, c, cell.kernel, cell.recurrent_kernel, cell.bias]
    return [outputs, h_last, c_last], tape.gradient(loss, sources)


@pytest.mark.parametrize("use_final_state", [True, False])
def test_outputs_and_every_gradient_match_the_step_loop(case, use_final_state):
    ours, our_grads = loss_and_gradients(lstm_sequence, *case, use_final_state)
    reference, reference_grads = loss_and_gradients(cell_loop, *case, use_final_state)
    for mine, theirs in zip(ours + our_grads, reference + reference_grads):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_a_start_cuts_the_gradient_to_the_state_before_it(case):
    """Column 2 starts an episode at step 0: the initial state it carried in gets no gradient at all."""
    _, grads = loss_and_gradients(lstm_sequence, *case, use_final_state=True)
    d_h, d_c = grads[1].numpy(), grads[2].numpy()
    assert np.all(d_h[2] == 0) and np.all(d_c[2] == 0)
    assert np.all(np.abs(d_h[:2]) > 0) and np.all(np.abs(d_c[:2]) > 0)


def test_inside_a_compiled_function_too(case):
    cell, inputs, h, c, keep = case
    compiled = tf.function(lambda: loss_and_gradients(lstm_sequence, cell, inputs, h, c, keep, False))
    ours, our_grads = compiled()
    reference, reference_grads = loss_and_gradients(cell_loop, cell, inputs, h, c, keep, False)
    for mine, theirs in zip(ours + our_grads, reference + reference_grads):
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_a_cell_with_other_activations_is_refused():
    check_cell(keras.layers.LSTMCell(H))
    with pytest.raises(ValueError, match="default LSTMCell"):
        check_cell(keras.layers.LSTMCell(H, activation="relu"))
