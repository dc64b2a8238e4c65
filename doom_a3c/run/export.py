"""The acting step of a trained agent as a TensorFlow SavedModel (and a TFLite file where the conversion works),
to run without doom_a3c: observation + LSTM state in; action probabilities, value and the new state out.

Signature `serving_default` (also the `step` attribute of the loaded object), B games at once:

    inputs   observation     [B, *obs]  uint8 frames as the env gives them (Doom, Atari; with --frame-stack K the
                                        last K frames on the channel axis: policy.json), float32 for vectors
             game_variables  [B, V]     float32, only for scenarios that feed game variables to the network: as
                                        the env gives them (each times its config scale); with
                                        normalize_variables the step standardises them itself, by the
                                        running statistics saved with the weights
             audio           [B, S, 2]  int16, only for runs with --audio: the step's sound as ViZDoom's buffer
                                        holds it (frame skip x rate / 35 samples, left and right; policy.json's
                                        audio_sampling_rate)
             state_h, state_c [B, S]    float32, the LSTM state (zeros at the start; S = 0 without an LSTM)
             episode_start   [B]        float32, 1.0 where this observation starts an episode (zeroes the state)
    outputs  probabilities   [B, A]     float32, the policy over policy.json's actions (with factorised heads:
                                        their joint distribution, the same A actions)
             value           [B]        float32, the critic (learning reward units: game reward x reward scale,
                                        with normalize_returns too: the head's output times the return scale)
             state_h, state_c [B, S]    float32, feed back with the next observation

`policy.tflite` is the same step for one game at a time (B = 1).
`policy.json` beside it names the actions and holds the observation shape, state size and the run's config
(frame skip, frame size, crop: the preprocessing a user's own env must repeat); `action_heads` lists a factorised
policy's heads (each as its options' names, doom_a3c/envs/doom/action_sets.py), [] for a flat softmax. `frame_stack` K >
1: `observation` is the last K preprocessed frames (`frame_shape` each) side by side on the channel axis, the oldest
first, the older ones zeros at an episode's start and after an Atari life lost (doom_a3c/envs/frame_stack.py).
`precision` is what the exported step computes in: float32, whatever --precision trained the weights (they are float32
either way; the config beside it keeps the training's).
"""
from __future__ import annotations

import inspect
import json
import os
from typing import NamedTuple

from doom_a3c.envs.interface import AUDIO, FRAME, VARIABLES
from doom_a3c.quiet_import import tf
from doom_a3c.runtime.files import ensure_writable_dir


class ExportedPolicy(NamedTuple):
    saved_model: str
    metadata: str
    tflite: str | None  # None when the conversion failed
    tflite_error: str  # why not, "" when written


class PolicyStep(tf.Module):
    """The network's `step` with a fixed signature: what tf.saved_model.save writes."""

    def __init__(self, net, observation_shape: tuple[int, ...], observation_dtype: tf.DType):
        super().__init__(name="policy")
        self.net = net
        state = tf.TensorSpec([None, net.state_size], tf.float32)
        # the network's inputs by signature name: the record's field each is (doom_a3c/envs/interface.py)
        inputs = {"observation": (FRAME, tf.TensorSpec([None, *observation_shape], observation_dtype))}
        if net.num_game_variables:
            inputs["game_variables"] = (VARIABLES, tf.TensorSpec([None, net.num_game_variables], tf.float32))
        if net.audio_samples:
            inputs["audio"] = (AUDIO, tf.TensorSpec([None, net.audio_samples, 2], tf.int16))
        self._fields = [field for field, _ in inputs.values()]
        specs = [tf.TensorSpec(spec.shape, spec.dtype, name=name) for name, (_, spec) in inputs.items()]
        specs += [tf.TensorSpec(state.shape, tf.float32, name="state_h"),
                  tf.TensorSpec(state.shape, tf.float32, name="state_c"),
                  tf.TensorSpec([None], tf.float32, name="episode_start")]

        def step(*values):
            return self._step(*values)

        # the step's arguments by name (observation=..., audio=...), whichever inputs this network takes
        step.__signature__ = inspect.Signature([inspect.Parameter(spec.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                                for spec in specs])
        self.step = tf.function(step, input_signature=specs)

    def _step(self, *inputs):
        from doom_a3c.algo.model.actor_critic import LSTMState

        *observation, state_h, state_c, episode_start = inputs
        observations = observation[0] if len(observation) == 1 else dict(zip(self._fields, observation))
        out = self.net.step(observations, LSTMState(state_h, state_c), episode_start)
        return {"probabilities": tf.nn.softmax(out.logits), "value": out.values,
                "state_h": out.state.h, "state_c": out.state.c}


def export_policy(agent, directory: str) -> ExportedPolicy:
    """Write `directory`/saved_model, `directory`/policy.json and, if TFLite can convert it,
    `directory`/policy.tflite."""
    ensure_writable_dir(directory, "--export")
    net, spec = agent.net, agent.spec
    dtype = tf.uint8 if net.torso == "conv" else tf.float32
    observation_shape = tuple(spec.observation_shape)  # [H, W, K * C] with a frame stack of K
    stack = int(agent.config.frame_stack or 1)
    one_frame = [*observation_shape[:-1], observation_shape[-1] // stack] if net.torso == "conv" else None
    module = PolicyStep(net, observation_shape, dtype)
    saved_model = os.path.join(directory, "saved_model")
    tf.saved_model.save(module, saved_model, signatures={"serving_default": module.step})
    metadata = os.path.join(directory, "policy.json")
    with open(metadata, "w") as handle:
        json.dump({"checkpoint": agent.checkpoint, "scenario": agent.config.scenario,
                   "action_names": list(spec.action_names), "action_heads": agent.config.action_heads,
                   "observation_shape": list(observation_shape), "frame_stack": stack, "frame_shape": one_frame,
                   "observation_dtype": dtype.name, "game_variables": agent.config.game_variables,
                   "audio_samples": int(net.audio_samples),
                   "audio_sampling_rate": agent.config.audio_sampling_rate if net.audio_samples else None,
                   "state_size": int(net.state_size), "precision": net.precision,
                   "seconds_per_step": spec.seconds_per_step,
                   "config": agent.config.to_dict()}, handle, indent=2)
    tflite, error = _write_tflite(saved_model, os.path.join(directory, "policy.tflite"))
    return ExportedPolicy(saved_model, metadata, tflite, error)


def _write_tflite(saved_model: str, path: str) -> tuple[str | None, str]:
    """The SavedModel's step for one game (batch 1), as TFLite. Two traps of TF 2.21's converter, each giving a
    model that runs without error but answers wrongly: a free batch axis (zeros: uniform probabilities) and
    converting the in-memory module rather than the saved one (NaN). TFLite builtins first, TensorFlow's own
    ops (the flex delegate) only if some op needs them."""
    loaded = tf.saved_model.load(saved_model)
    specs = [tf.TensorSpec([1, *spec.shape[1:]], spec.dtype, name=spec.name)
             for spec in loaded.step.input_signature]
    function = loaded.step.get_concrete_function(*specs)
    error = ""
    for ops in ([tf.lite.OpsSet.TFLITE_BUILTINS], [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]):
        try:
            converter = tf.lite.TFLiteConverter.from_concrete_functions([function], loaded)
            converter.target_spec.supported_ops = ops
            content = converter.convert()
        except Exception as failure:  # the converter raises many types (ConverterError, ValueError, ...)
            from doom_a3c.errors import one_line

            error = one_line(failure)
            continue
        with open(path, "wb") as handle:
            handle.write(content)
        return path, ""
    return None, error

