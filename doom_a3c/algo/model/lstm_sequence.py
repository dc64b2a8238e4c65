"""A Keras LSTMCell run over a whole rollout [T, B, ...], with its backward pass written out by hand.

The same numbers as calling the cell T times (tests/algo/test_lstm_sequence.py checks outputs and every gradient against
TensorFlow's own differentiation of that loop), in about half the CPU time on this machine's 2 cores: the rollout's
input projection is one matmul, and in the backward pass the weights' gradients are one matmul each over all T
steps, where differentiating the loop makes T small outer products of the recurrent kernel's size and adds them up
(docs/measuring/speed-and-memory.md#the-learning-step-measured-apart). Episode starts inside the rollout zero the
carried state, as `ActorCritic._core` does step by step.

A cell under Keras' mixed_bfloat16 policy (--precision bfloat16) does its matrix products here in bfloat16, forward
and backward, and everything else in float32: the gates, the cell state, what comes in and goes out. (Keras' own cell
would also round its state to bfloat16 at every step.) A float32 cell runs exactly the float32 graph.
"""
from __future__ import annotations

from doom_a3c.quiet_import import keras, tf


def check_cell(cell: keras.layers.LSTMCell) -> None:
    """The hand-written pass assumes Keras's default gates: sigmoid gates, tanh cell, a bias, no dropout."""
    config = cell.get_config()
    if (config["activation"], config["recurrent_activation"]) != ("tanh", "sigmoid") or not config["use_bias"] \
            or config["dropout"] or config["recurrent_dropout"]:
        raise ValueError(f"lstm_sequence needs a default LSTMCell, got {config}")


def matmul_in(dtype: tf.DType):
    """tf.matmul for float32; else a matmul whose operands are rounded to `dtype` (bfloat16; no op for an operand
    rounded already) and whose product comes back as float32."""
    if dtype == tf.float32:
        return tf.matmul

    def product(a: tf.Tensor, b: tf.Tensor, **kwargs) -> tf.Tensor:
        return tf.cast(tf.matmul(tf.cast(a, dtype), tf.cast(b, dtype), **kwargs), tf.float32)

    return product


def lstm_sequence(cell: keras.layers.LSTMCell, inputs: tf.Tensor, h: tf.Tensor, c: tf.Tensor,
                  keep: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """inputs [T, B, I] (T static), h and c [B, H], keep [T, B, 1] (0 where an episode starts: the state carried
    into that step is zeroed) -> (outputs [T, B, H], h, c after the last step)."""
    steps, units = inputs.shape[0], cell.units
    if not cell.built:  # as a first call of the cell would
        cell.build(inputs.shape[1:])
    low = tf.as_dtype(cell.compute_dtype)  # float32, or bfloat16 under Keras' mixed_bfloat16 policy
    product = matmul_in(low)

    @tf.custom_gradient
    def run(inputs, h, c, kernel, recurrent_kernel, bias):
        # The weights rounded once for all T steps and the backward pass (float32: tf.cast returns them as they are).
        kernel_low, recurrent_low = tf.cast(kernel, low), tf.cast(recurrent_kernel, low)
        flat_inputs = tf.reshape(inputs, [-1, inputs.shape[-1]])
        projected = tf.reshape(product(flat_inputs, kernel_low) + bias, [steps, -1, 4 * units])
        carried_h, carried_c, gates, tanh_c, outputs = [], [], [], [], []
        for t in range(steps):
            h, c = h * keep[t], c * keep[t]
            carried_h.append(h)
            carried_c.append(c)
            z_i, z_f, z_g, z_o = tf.split(projected[t] + product(h, recurrent_low), 4, axis=1)
            i, f, g, o = tf.sigmoid(z_i), tf.sigmoid(z_f), tf.tanh(z_g), tf.sigmoid(z_o)
            c = f * c + i * g
            tanh_c.append(tf.tanh(c))
            h = o * tanh_c[-1]
            gates.append((i, f, g, o))
            outputs.append(h)

        def backward(d_outputs, d_h, d_c):
            # Unused outputs come back as None: the final state is often not part of the loss.
            d_outputs = tf.zeros([steps, tf.shape(h)[0], units]) if d_outputs is None else d_outputs
            d_h = tf.zeros_like(h) if d_h is None else d_h
            d_c = tf.zeros_like(c) if d_c is None else d_c
            d_z = [None] * steps
            for t in reversed(range(steps)):
                i, f, g, o = gates[t]
                d_h = d_h + d_outputs[t]
                d_c = d_c + d_h * o * (1.0 - tf.square(tanh_c[t]))
                d_z[t] = tf.concat([d_c * g * i * (1.0 - i), d_c * carried_c[t] * f * (1.0 - f),
                                    d_c * i * (1.0 - tf.square(g)), d_h * tanh_c[t] * o * (1.0 - o)], axis=1)
                d_h = product(d_z[t], recurrent_low, transpose_b=True) * keep[t]
                d_c = d_c * f * keep[t]
            all_d_z = tf.reshape(tf.stack(d_z), [-1, 4 * units])  # [T * B, 4H]
            d_z_low = tf.cast(all_d_z, low)  # rounded once for the three products
            d_recurrent = product(tf.reshape(tf.stack(carried_h), [-1, units]), d_z_low, transpose_a=True)
            d_kernel = product(flat_inputs, d_z_low, transpose_a=True)
            d_inputs = tf.reshape(product(d_z_low, kernel_low, transpose_b=True), tf.shape(inputs))
            return d_inputs, d_h, d_c, d_kernel, d_recurrent, tf.reduce_sum(all_d_z, 0)

        return (tf.stack(outputs), h, c), backward

    # The weights are read here, outside `run`: the tape then takes their gradients from `backward` through
    # the reads, and custom_gradient sees tensors, not variables it would have to track itself.
    weights = [tf.convert_to_tensor(w) for w in (cell.kernel, cell.recurrent_kernel, cell.bias)]
    return run(inputs, h, c, *weights)
