"""The actor-critic network: conv torso -> dense 256 (or a dense torso for vectors) -> LSTM -> softmax
policy + value. The policy is one softmax over the actions, or several categorical heads (FactorisedHeads)
whose joint log-probabilities over the same actions stand in for the logits.

It knows nothing of environments or optimizers. Two entry points share the same layers:
`step` (one time step for a batch of environments, used for acting) and `unroll` (a whole
[T, B] rollout, used for training). Both reset the LSTM state where an episode starts, so
a 30-step unroll equals 30 single steps exactly.

`precision` "bfloat16" (--precision, doom_a3c/algo/model/precision.py) is mixed precision: the torso's layers and the
LSTM take Keras' mixed_bfloat16 policy (float32 weights, bfloat16 compute; the LSTM's matrix products in bfloat16, its
gates and state in float32: doom_a3c/algo/model/lstm_sequence.py); the frames are standardised in float32 before, and
the features come back to float32 after, so the heads, logits, values, LSTM state and loss are float32. The weights are
float32 either way: a checkpoint is the same whatever precision trained it.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from doom_a3c.algo.model.audio import band_features
from doom_a3c.algo.model.heads import FactorisedHeads, joint_log_probs
from doom_a3c.algo.model.layers import (
    NormalizedColumns,
    RunningMoments,
    normalized_variables_tensor,
    return_scale_tensor,
)
from doom_a3c.algo.model.lstm_sequence import check_cell, lstm_sequence
from doom_a3c.algo.model.precision import choose_precision
from doom_a3c.algo.normalization import variable_moments_size
from doom_a3c.envs.doom.action_sets import head_option_matrix
from doom_a3c.envs.doom.audio import samples_per_step
from doom_a3c.envs.interface import AUDIO, FRAME, VARIABLES
from doom_a3c.errors import ConfigError
from doom_a3c.quiet_import import keras, tf


class LSTMState(NamedTuple):
    h: tf.Tensor  # [B, lstm_size]
    c: tf.Tensor  # [B, lstm_size]


class NetworkOutput(NamedTuple):
    logits: tf.Tensor  # [..., A]; with FactorisedHeads, already normalised log-probabilities
    values: tf.Tensor  # [...]
    state: LSTMState
    # [T, B] logits of "an enemy is in view" from the torso (unroll only, with enemy_head); None otherwise
    enemy_logits: tf.Tensor | None = None


TORSOS = ("conv", "dense")


NETWORK_PRECISIONS = ("float32", "bfloat16")  # --precision as resolved (doom_a3c/algo/model/precision.py)


WEIGHT_INITS = ("glorot", "orthogonal")
ACTIVATIONS = ("elu", "relu")
VARIABLE_UNITS = 32  # width of the game variables' own layer (a handful of numbers in)
AUDIO_UNITS = 64  # width of the sound's own layer (2 x 32 bands in: doom_a3c/algo/model/audio.py)


class ActorCritic(keras.Model):
    """`torso` "conv" takes [84, 84, 1] uint8 frames (Doom, Atari), "dense" takes [N] float32 vectors
    (CartPole). `use_lstm=False` feeds the torso straight to the heads (the state is then empty, [B, 0]).
    `separate_critic` gives the value head its own torso and LSTM (separate actor and critic
    networks); the two LSTM states then travel side by side in one state, [B, 2 * lstm_size].
    `normalize_variables` standardises the game variables by running moments; `normalize_returns` makes the
    value output S times the value head, S the running return scale (both doom_a3c/algo/normalization.py).
    `factorised_heads` makes the policy layer output every head's logits and the policy output their joint
    log-probabilities over the `num_actions` actions (the layer keeps its name: "policy").
    `precision` "bfloat16": the torso and LSTM in mixed precision (module docstring); the same weights.
    `activation` is the torso's: "elu" (the default) or "relu" (Atari's default: docs/defaults/atari-defaults.md says why).
    `frame_background`: the grey level (0-255) `frame_norm` "background" subtracts from the scaled frames;
    `frame_background_image`: the greys [H][W] (0-255) "pixel_background" subtracts, one a pixel, from every frame
    of the stack.
    `audio_samples` > 0: the network hears each step's sound, [audio_samples, 2] int16 at `audio_sampling_rate`,
    through its own torso (band magnitudes, doom_a3c/algo/model/audio.py, then a dense layer) beside the pixels'.
    """

    def __init__(self, num_actions: int, lstm_size: int = 256, seed: int = 0, name: str = "global",
                 frame_norm: str = "standardize", torso: str = "conv", hidden_size: int = 256,
                 use_lstm: bool = True, separate_critic: bool = False, num_game_variables: int = 0,
                 normalize_variables: bool = False, normalize_returns: bool = False, return_scale_floor: float = 1.0,
                 factorised_heads: FactorisedHeads | None = None, entropy_target: bool = False,
                 weight_init: str = "glorot", precision: str = "float32", activation: str = "elu",
                 frame_background: float = 0.0, frame_background_image: list | None = None,
                 enemy_head: bool = False, audio_samples: int = 0, audio_sampling_rate: int = 11025):
        super().__init__(name=name)
        self.audio_samples = audio_samples
        self.audio_sampling_rate = audio_sampling_rate
        self.frame_background = float(frame_background)
        if frame_norm == "pixel_background" and frame_background_image is None:
            raise ValueError("frame_norm 'pixel_background' needs frame_background_image")
        # [H, W, 1] in [0, 1]'s units: it broadcasts over the stack's frames
        self.frame_background_image = None if frame_background_image is None else \
            tf.constant(np.asarray(frame_background_image, np.float32)[:, :, None] / 255.0)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
        self.activation = activation
        if precision not in NETWORK_PRECISIONS:
            raise ValueError(f"precision must be one of {NETWORK_PRECISIONS}, got {precision!r}")
        self.precision = precision
        # The torso's and LSTM's dtype policy; None leaves Keras' float32 default, so a float32 network is exactly
        # the graph it was before --precision existed.
        self._torso_dtype = keras.DTypePolicy("mixed_bfloat16") if precision == "bfloat16" else None
        if weight_init not in WEIGHT_INITS:
            raise ValueError(f"weight_init must be one of {WEIGHT_INITS}, got {weight_init!r}")
        self.weight_init = weight_init
        self.num_game_variables = num_game_variables
        if torso not in TORSOS:
            raise ValueError(f"torso must be one of {TORSOS}, got {torso!r}")
        self.num_actions = num_actions
        self.factorised_heads = factorised_heads
        self.frame_norm = frame_norm
        self.torso = torso
        self.lstm_size = lstm_size if use_lstm else 0
        self.use_lstm = use_lstm
        branches = ("", "critic_") if separate_critic else ("",)  # attribute prefixes: checkpoint names
        self.state_size = self.lstm_size * len(branches)
        self._branches = [self._build_branch(prefix, seed + 10 * i, hidden_size) for i, prefix in enumerate(branches)]
        policy_units = sum(factorised_heads.sizes) if factorised_heads else num_actions
        head_init = self._head_initializer
        self.policy_head = keras.layers.Dense(policy_units, use_bias=False,
                                              kernel_initializer=head_init(0.01, seed + 5), name="policy")
        self.value_head = keras.layers.Dense(1, use_bias=False, kernel_initializer=head_init(1.0, seed + 6),
                                             name="value")
        # --enemy-coef: a learning-only head on the (policy's) torso, trained to tell whether an enemy is in view;
        # acting never computes it. Only when asked for, so that a checkpoint made without it restores as it was.
        self.enemy_head = keras.layers.Dense(1, kernel_initializer=head_init(1.0, seed + 7), name="enemy") \
            if enemy_head else None
        # Only when asked for: a checkpoint made without them restores into exactly the network it was.
        self.variable_moments = RunningMoments(variable_moments_size(num_game_variables), "variable_moments") \
            if normalize_variables and num_game_variables else None
        self.return_moments = RunningMoments(3, "return_moments") if normalize_returns else None
        self.return_scale_floor = return_scale_floor
        # The entropy weight's log multiplier m (doom_a3c/algo/entropy_target.py), read by the loss, not by the policy.
        self.entropy_multiplier = RunningMoments(1, "entropy_multiplier") if entropy_target else None

    @property
    def statistics(self) -> list[RunningMoments]:
        """The running statistics this network keeps (none, variables', returns', the entropy multiplier)."""
        return [layer for layer in (self.variable_moments, self.return_moments, self.entropy_multiplier)
                if layer is not None]

    def statistics_slots(self) -> list[int]:
        """Where the statistics' weights sit in `trainable_variables` (and so in a gradient list), in the order
        of `statistics`."""
        index = {id(variable): i for i, variable in enumerate(self.trainable_variables)}
        return [index[id(layer.moments)] for layer in self.statistics]

    @property
    def learned_variables(self) -> list:
        """The weights the optimizer trains: `trainable_variables` without the running statistics."""
        slots = set(self.statistics_slots())
        return [v for i, v in enumerate(self.trainable_variables) if i not in slots]

    def _head_initializer(self, scale: float, seed: int) -> keras.initializers.Initializer:
        """The policy (scale 0.01: a near-uniform first policy) and value (1.0) heads' weights."""
        if self.weight_init == "orthogonal":
            return keras.initializers.Orthogonal(gain=scale, seed=seed)
        return NormalizedColumns(scale, seed)

    def _torso_initializer(self, seed: int, gain: float = float(np.sqrt(2.0))) -> keras.initializers.Initializer:
        """Glorot (the default), or orthogonal with gain sqrt(2) for the rectifier-like ELU layers (1 for the LSTM's
        input weights), as the A2C and PPO Atari baselines initialise (OpenAI baselines, CleanRL, SB3)."""
        if self.weight_init == "orthogonal":
            return keras.initializers.Orthogonal(gain=gain, seed=seed)
        return keras.initializers.GlorotUniform(seed=seed)

    def _build_branch(self, prefix: str, seed: int, hidden_size: int) -> tuple[list, keras.layers.LSTMCell | None]:
        """One torso (+ LSTM), set as named attributes so that checkpoints name them (conv1, critic_conv1...)."""
        init = lambda k: self._torso_initializer(seed + k)  # noqa: E731
        dtype = self._torso_dtype
        act = self.activation
        if self.torso == "conv":
            layers = {"conv1": keras.layers.Conv2D(16, 8, strides=4, activation=act, kernel_initializer=init(1),
                                                   dtype=dtype),
                      "conv2": keras.layers.Conv2D(32, 4, strides=2, activation=act, kernel_initializer=init(2),
                                                   dtype=dtype),
                      "flatten": keras.layers.Flatten(dtype=dtype),  # float32's would cast bfloat16 back and forth
                      "hidden": keras.layers.Dense(hidden_size, activation=act, kernel_initializer=init(3),
                                                   dtype=dtype)}
        else:
            layers = {"fc1": keras.layers.Dense(hidden_size, activation=act, kernel_initializer=init(1), dtype=dtype),
                      "fc2": keras.layers.Dense(hidden_size, activation=act, kernel_initializer=init(3), dtype=dtype)}
        if self.num_game_variables:
            # Game variables (health, ammo...) get a small layer of their own, joined to the pixels' features
            # before the LSTM, as Sample Factory's Doom encoder does with its measurements. float32 in every
            # precision: a handful of numbers in, nothing to gain.
            layers["game_vars"] = keras.layers.Dense(VARIABLE_UNITS, activation=act, kernel_initializer=init(7))
        if self.audio_samples:
            # The sound's bands get a layer of their own too, joined before the LSTM, which keeps what was heard;
            # float32, as the variables' (64 numbers in).
            layers["audio"] = keras.layers.Dense(AUDIO_UNITS, activation=act, kernel_initializer=init(8))
        for attribute, layer in layers.items():
            layer.name = prefix + attribute
            setattr(self, prefix + attribute, layer)
        lstm = None
        if self.use_lstm:
            lstm = keras.layers.LSTMCell(self.lstm_size, kernel_initializer=self._torso_initializer(seed + 4, gain=1.0),
                                         name=prefix + "lstm", dtype=dtype)
            check_cell(lstm)
            setattr(self, prefix + "lstm", lstm)
        side_layers = (layers.pop("game_vars", None), layers.pop("audio", None))
        return (list(layers.values()), *side_layers), lstm

    def initial_state(self, batch_size: int) -> LSTMState:
        zeros = tf.zeros([batch_size, self.state_size], tf.float32)
        return LSTMState(zeros, zeros)

    def _inputs(self, observations: tf.Tensor) -> tf.Tensor:
        if self.torso == "dense":
            return tf.cast(observations, tf.float32)  # vector observations are used as they come
        x = tf.cast(observations, tf.float32) / 255.0
        if self.frame_norm == "standardize":
            # Dark Doom frames are all-positive inputs with a small target on a textured wall; centring
            # them conditions the first conv layer (supervised probe: 90% accuracy in 3x fewer steps).
            x = tf.image.per_image_standardization(x)
        elif self.frame_norm == "background":
            # The game's background grey becomes 0, objects stand out from it in either sign: a ReLU torso reads a
            # uniform non-zero field as one large constant on every frame (Pong's grey; Breakout's is black already).
            x = x - self.frame_background / 255.0
        elif self.frame_norm == "pixel_background":
            # What stays put on every frame (Pong's field, BattleZone's ground and sky, a score's box) becomes 0,
            # so the torso's features move with what changes: one grey for the whole frame left most of
            # BattleZone's screen a large constant input, and its torso blind from the first update.
            x = x - self.frame_background_image
        return x

    def encode(self, observations) -> list[tf.Tensor]:
        """[N, *obs] frames, or a dict of them ("frame") with game variables ("variables" [N, V]) and sound ("audio"
        [N, samples, 2] int16) -> one [N, features] tensor per branch (one, or actor and critic)."""
        inputs = observations if isinstance(observations, dict) else {FRAME: observations}
        x = self._inputs(inputs[FRAME])
        variables = inputs.get(VARIABLES)
        if variables is not None:
            variables = tf.cast(variables, tf.float32)
            if self.variable_moments is not None:
                variables = normalized_variables_tensor(variables, tf.stop_gradient(self.variable_moments.moments))
        bands = band_features(inputs[AUDIO], self.audio_sampling_rate) if self.audio_samples else None  # [N, 64]
        features = []
        for (layers, variables_layer, audio_layer), _ in self._branches:
            out = x
            for layer in layers:
                out = layer(out)  # bfloat16: the first layer rounds the float32 frames, the others stay in it
            parts = [tf.cast(out, tf.float32)]  # float32: as it is
            if variables_layer is not None:
                parts.append(variables_layer(variables))
            if audio_layer is not None:
                parts.append(audio_layer(bands))
            features.append(tf.concat(parts, axis=-1) if len(parts) > 1 else parts[0])
        return features

    def _core(self, features: list[tf.Tensor], state: LSTMState, starts: tf.Tensor):
        if not self.use_lstm:
            return features, state
        # Zero the carried state where a new episode begins: one rule for acting and training.
        keep = 1.0 - tf.cast(starts, tf.float32)[:, None]  # [B, 1]
        outputs, hs, cs = [], [], []
        for i, (_, lstm) in enumerate(self._branches):
            part = slice(i * self.lstm_size, (i + 1) * self.lstm_size)
            if self._torso_dtype is None:
                out, (h, c) = lstm(features[i], [state.h[:, part] * keep, state.c[:, part] * keep])
            else:  # bfloat16: the unroll's own pass, one step long (Keras' cell would round the state to bfloat16)
                out, h, c = lstm_sequence(lstm, features[i][None], state.h[:, part], state.c[:, part], keep[None])
                out = out[0]
            outputs.append(out)
            hs.append(h)
            cs.append(c)
        return outputs, LSTMState(tf.concat(hs, 1), tf.concat(cs, 1))

    def _heads(self, core_out: list[tf.Tensor]):
        # Policy from the first branch, value from the last: the same branch unless the critic is separate.
        values = tf.squeeze(self.value_head(core_out[-1]), -1)
        if self.return_moments is not None:  # the head learns in units of S; the output is in the rewards' own
            values = values * return_scale_tensor(tf.stop_gradient(self.return_moments.moments),
                                                  self.return_scale_floor)
        logits = self.policy_head(core_out[0])
        if self.factorised_heads is not None:
            logits = joint_log_probs(logits, self.factorised_heads)
        return logits, values

    def step(self, observations: tf.Tensor, state: LSTMState, starts: tf.Tensor) -> NetworkOutput:
        """observations [B, *obs], starts [B] (1 where the episode begins) -> logits [B, A], values [B]."""
        core_out, state = self._core(self.encode(observations), state, starts)
        logits, values = self._heads(core_out)
        return NetworkOutput(logits, values, state)

    def unroll(self, observations: tf.Tensor, state: LSTMState, starts: tf.Tensor) -> NetworkOutput:
        """observations [T, B, *obs], starts [T, B] -> logits [T, B, A], values [T, B]."""
        first = tf.nest.flatten(observations)[0]
        steps, batch = first.shape[0], tf.shape(first)[1]
        # The torso runs once over all T*B observations; only the LSTM walks through time.
        flat = tf.nest.map_structure(lambda x: tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], 0)), observations)
        features = [tf.reshape(f, [steps, batch, -1]) for f in self.encode(flat)]  # [T, B, hidden] each
        enemy_logits = None if self.enemy_head is None else tf.squeeze(self.enemy_head(features[0]), -1)  # [T, B]
        if not self.use_lstm:
            logits, values = self._heads(features)
            return NetworkOutput(logits, values, state, enemy_logits)
        # The LSTM walks through time in lstm_sequence: the same numbers as T calls of `_core`, with a cheaper
        # backward pass. T is static (the rollout length), so its loop unrolls in the graph.
        keep = 1.0 - tf.cast(starts, tf.float32)[:, :, None]  # [T, B, 1]
        outputs, hs, cs = [], [], []
        for i, (_, lstm) in enumerate(self._branches):
            part = slice(i * self.lstm_size, (i + 1) * self.lstm_size)
            out, h, c = lstm_sequence(lstm, features[i], state.h[:, part], state.c[:, part], keep)
            outputs.append(out)
            hs.append(h)
            cs.append(c)
        logits, values = self._heads(outputs)
        return NetworkOutput(logits, values, LSTMState(tf.concat(hs, 1), tf.concat(cs, 1)),  # [T, B, A], [T, B]
                             enemy_logits)

    def call(self, observations, state=None, starts=None):
        batch = tf.shape(tf.nest.flatten(observations)[0])[0]
        state = state or self.initial_state(batch)
        starts = starts if starts is not None else tf.ones([batch])
        return self.step(observations, state, starts)

    def build_variables(self, observation_shape: tuple[int, ...]) -> "ActorCritic":
        """Create every variable now (in the calling thread) with one dummy step."""
        dtype = tf.uint8 if self.torso == "conv" else tf.float32
        if self.frame_background_image is not None and self.torso == "conv":
            # one image a frame of the stack: a subtraction broadcast over the batch alone, 0.15 ms less than over
            # the stack's frames too on each batch of 24 84x84x4 frames
            self.frame_background_image = tf.tile(self.frame_background_image, [1, 1, observation_shape[-1]])
        observations = tf.zeros((1, *observation_shape), dtype)
        if self.num_game_variables or self.audio_samples:
            observations = {FRAME: observations}
            if self.num_game_variables:
                observations[VARIABLES] = tf.zeros((1, self.num_game_variables), tf.float32)
            if self.audio_samples:
                observations[AUDIO] = tf.zeros((1, self.audio_samples, 2), tf.int16)
        self.step(observations, self.initial_state(1), tf.ones([1]))
        if self.enemy_head is not None:  # acting never reaches it: build it on the torso's output
            self.enemy_head(self.encode(observations)[0])
        return self


def build_actor_critic(config, num_actions: int, observation_shape: tuple[int, ...], name: str,
                       seed: int | None = None, precision: str | None = None) -> ActorCritic:
    """The network a TrainConfig describes, for observations of this shape: images get the conv torso,
    vectors the dense one. The same call in the trainer and play.py, so a checkpoint always fits. `precision`
    overrides the config's (play.py: float32); a config's "auto" (one made in Python, not resolved) is resolved
    here, quietly."""
    precision = precision or config.precision
    if precision == "auto":
        precision = choose_precision("auto").name
    torso = "conv" if len(observation_shape) == 3 else "dense"
    image = config.frame_background_image
    if image is not None and (len(image), len(image[0])) != tuple(observation_shape[:2]):
        raise ConfigError(f"frame_background_image is {len(image)}x{len(image[0])} greys, but the frames are "
                          f"{observation_shape[0]}x{observation_shape[1]}")
    heads = config.action_heads
    factorised = FactorisedHeads([len(head) for head in heads], head_option_matrix(config.actions, heads)) \
        if heads else None
    net = ActorCritic(num_actions, config.lstm_size, seed=config.seed if seed is None else seed, name=name,
                      frame_norm=config.frame_norm, torso=torso, hidden_size=config.hidden_size,
                      use_lstm=config.lstm, separate_critic=config.separate_networks,
                      num_game_variables=len(config.game_variables),
                      normalize_variables=bool(config.normalize_variables),
                      normalize_returns=config.normalize_returns, return_scale_floor=config.return_scale_floor,
                      factorised_heads=factorised, entropy_target=config.entropy_target > 0,
                      weight_init=config.weight_init, precision=precision, activation=config.activation,
                      frame_background=config.frame_background or 0.0,
                      frame_background_image=config.frame_background_image,
                      enemy_head=config.enemy_coef > 0,
                      audio_samples=samples_per_step(config.audio_sampling_rate, config.frame_skip)
                      if config.audio else 0,
                      audio_sampling_rate=config.audio_sampling_rate)
    return net.build_variables(observation_shape)
