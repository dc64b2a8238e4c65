"""Gradient post-processing before the shared optimizer: global-norm clipping or per-tensor normalisation.

Both functions take the list that `tape.gradient` returns (entries may be None for variables the
loss does not touch), are pure TensorFlow ops usable inside `tf.function`, and return
(processed gradients, global norm before processing) so that the caller logs the same quantity
(`Losses/Grad Norm`) and runs the same finiteness check whichever mode is chosen.
"""
from __future__ import annotations

from typing import Sequence

from doom_a3c.quiet_import import tf

GRADIENT_MODES = ("clip", "normalize")


def clip_gradients(grads: Sequence[tf.Tensor | None], clip_norm: float) -> tuple[list, tf.Tensor]:
    """Scale all gradients by one factor so that their joint L2 norm is at most `clip_norm`."""
    clipped, global_norm = tf.clip_by_global_norm(grads, clip_norm)
    return clipped, global_norm


def _clip_average_norm(grad: tf.Tensor, clip_norm: float) -> tf.Tensor:
    """One tensor: g * c / max(||g||_2 / size(g), c), i.e. cap its L2 norm per element at c."""
    size = tf.cast(tf.maximum(tf.size(grad), 1), grad.dtype)  # a 0-element tensor must not divide by 0
    average_norm = tf.norm(grad) / size  # scalar
    clip = tf.cast(clip_norm, grad.dtype)
    return grad * (clip / tf.maximum(average_norm, clip))


def normalize_gradients(grads: Sequence[tf.Tensor | None], clip_norm: float) -> tuple[list, tf.Tensor]:
    """Per-tensor "gradient normalisation": each gradient tensor is clipped on its own average norm.

    For every tensor g with n elements, the average norm ||g||_2 / n is compared with `clip_norm`
    (0.1 by default); when larger, g is scaled down so that it equals `clip_norm`, otherwise g
    is left as it is. This is TF1's `clip_by_average_norm`, applied tensor by tensor.

    It differs from global-norm clipping in two ways. Each tensor gets its own scale factor, so the
    direction of the overall update changes when only some tensors are scaled (clipping keeps the
    direction and only shortens it). And the bound grows with the tensor's size, n * clip_norm in
    L2 norm: large kernels (the 2592x256 dense layer: bound ~66,000 at 0.1) are rarely touched,
    while biases and the small heads are capped hard. The two coincide only for a single tensor
    with one element, where the average norm is the norm itself. Because the threshold is per
    element, it needs its own value (0.1 by default); reusing the global-norm 40 would do nothing.
    Returns (normalised gradients, global L2 norm of the input gradients).
    """
    global_norm = tf.linalg.global_norm(grads)
    normalized = [None if g is None else _clip_average_norm(tf.convert_to_tensor(g), clip_norm) for g in grads]
    return normalized, global_norm


def process_gradients(grads: Sequence[tf.Tensor | None], mode: str, clip_norm: float) -> tuple[list, tf.Tensor]:
    """Dispatch on `mode`: "clip" (global norm, the default A3C recipe) or "normalize" (per tensor)."""
    # `mode` is a Python string, so the choice is made once when tf.function traces, not per step.
    if mode == "clip":
        return clip_gradients(grads, clip_norm)
    if mode == "normalize":
        return normalize_gradients(grads, clip_norm)
    raise ValueError(f"gradient mode must be one of {GRADIENT_MODES}, got {mode!r}")
