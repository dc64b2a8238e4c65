#!/usr/bin/env python
"""Is a learning gap the trainer's, or the game's? A minimal synchronous A2C written apart from the trainer.

    python benchmarks/tools/reference_a2c.py --env-id ALE/Breakout-v5 --minutes 14 [--seed 0] [--activation relu]
    python benchmarks/tools/reference_a2c.py --minutes 8 --network ours   # the trainer's network, this loop
    python benchmarks/tools/reference_a2c.py --minutes 8 --network ours --learner ours   # and its loss and optimizer

RLlib's A2C recipe (ray-project/rl-experiments atari-a2c) in about a hundred lines: the 16/32/256 conv torso, a
4-frame stack scaled by 1/255, --games games x --rollout steps a synchronous update, discounted returns (lambda 1),
the losses summed over the batch (value weight 0.5, entropy 0.01), clipped at global norm 40, Adam 7e-4. Only the
games come from doom_a3c (the same Atari preprocessing, 2 child processes), so a gap between this and train.py at
equal agent steps is in the trainer's learning path; --network ours and --learner ours swap in the trainer's
network (with its --activation) and its GradientStep and GlobalLearner, one part at a time. It found the old
ELU (docs/defaults/atari-defaults.md#relu-in-the-torso).

Prints, every 50k agent steps, the mean of the last 100 whole games (true scores), the entropy per step and the
gradient norm, and writes them to --out (CSV).
"""
from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections import deque

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # benchmarks/tools/ is two below
sys.path.insert(0, ROOT)

from doom_a3c.config import TrainConfig  # noqa: E402
from doom_a3c.envs.factory import make_env_batch  # noqa: E402
from doom_a3c.algo.learner import GlobalLearner, GradientStep  # noqa: E402
from doom_a3c.algo.model.actor_critic import LSTMState, build_actor_critic  # noqa: E402
from doom_a3c.quiet_import import keras, tf  # noqa: E402
from doom_a3c.run.resolve import resolve_new_run  # noqa: E402
from doom_a3c.algo.rollout import Rollout  # noqa: E402

STACK, REPORT_EVERY = 4, 50_000


def recipe_config(env_id: str, games: int, seed: int, activation: str) -> TrainConfig:
    """The trainer's resolved config for RLlib's recipe: what --network ours and --learner ours run with."""
    return resolve_new_run({"scenario": env_id, "seed": seed, "envs_per_worker": games,
                            "env_processes": 2, "ale_vector": False,
                            "lstm": False, "frame_stack": STACK, "learning_rate": 7e-4, "gae_lambda": 1.0,
                            "frame_norm": "scale", "activation": activation, "model_dir": "unused"})


def reference_network(num_actions: int, shape: tuple[int, ...], activation: str) -> keras.Model:
    frames = keras.Input(shape, dtype="uint8")
    x = keras.layers.Rescaling(1 / 255.0)(frames)
    x = keras.layers.Conv2D(16, 8, 4, activation=activation)(x)
    x = keras.layers.Conv2D(32, 4, 2, activation=activation)(x)
    x = keras.layers.Dense(256, activation=activation)(keras.layers.Flatten()(x))
    logits = keras.layers.Dense(num_actions, kernel_initializer=keras.initializers.RandomNormal(stddev=0.01))(x)
    return keras.Model(frames, [logits, keras.layers.Dense(1)(x)[:, 0]])


def ours_as_a_model(config: TrainConfig, num_actions: int, shape: tuple[int, ...]):
    """The trainer's feed-forward network called as the reference calls its own: frames -> (logits, values)."""
    net = build_actor_critic(config, num_actions, shape, "global")

    def call(frames):
        batch = tf.shape(frames)[0]
        out = net.step(frames, net.initial_state(batch), tf.ones([batch]))
        return out.logits, out.values
    call.trainable_variables = net.trainable_variables
    call.net = net
    return call


def discounted_returns(rewards: np.ndarray, dones: np.ndarray, bootstrap: np.ndarray, gamma: float = 0.99):
    """[T, B] rewards and dones, [B] bootstrap -> [T, B] returns, by the plain loop (no shared code)."""
    returns, running = np.empty_like(rewards), bootstrap
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running * (1.0 - dones[t])
        returns[t] = running
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env-id", default="ALE/Breakout-v5")
    parser.add_argument("--minutes", type=float, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--games", type=int, default=16)
    parser.add_argument("--rollout", type=int, default=20)
    parser.add_argument("--activation", default="relu", choices=["relu", "elu"])
    parser.add_argument("--network", default="reference", choices=["reference", "ours"])
    parser.add_argument("--learner", default="reference", choices=["reference", "ours"])
    parser.add_argument("--out", default="reference_a2c.csv")
    args = parser.parse_args()
    if args.learner == "ours" and args.network != "ours":
        parser.error("--learner ours needs --network ours (the trainer's learner takes the trainer's network)")
    tf.config.threading.set_intra_op_parallelism_threads(2)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    config = recipe_config(args.env_id, args.games, args.seed, args.activation)
    keras.utils.set_random_seed(args.seed)
    games = make_env_batch(config, [args.seed * 1000 + i for i in range(args.games)])
    observations = games.reset()
    num_actions, shape = len(config.actions), observations.shape[1:]
    model = ours_as_a_model(config, num_actions, shape) if args.network == "ours" else \
        reference_network(num_actions, shape, args.activation)
    optimizer = keras.optimizers.Adam(7e-4)
    optimizer.build(model.trainable_variables)
    if args.learner == "ours":
        gradient_step, learner = GradientStep(model.net, config), GlobalLearner(config, model.net)

    @tf.function
    def act(frames):
        logits, values = model(frames)
        return tf.random.categorical(logits, 1)[:, 0], values

    @tf.function
    def learn(frames, actions, returns):
        with tf.GradientTape() as tape:
            logits, values = model(frames)
            log_probs = tf.nn.log_softmax(logits)
            taken = tf.gather(log_probs, actions, batch_dims=1)
            policy = -tf.reduce_sum(taken * tf.stop_gradient(returns - values))
            value = 0.5 * tf.reduce_sum(tf.square(returns - values))
            entropy = -tf.reduce_sum(tf.exp(log_probs) * log_probs)
            total = policy + 0.5 * value - 0.01 * entropy
        grads, norm = tf.clip_by_global_norm(tape.gradient(total, model.trainable_variables), 40.0)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return norm, entropy / tf.cast(tf.shape(actions)[0], tf.float32)

    T, B = args.rollout, args.games
    scores, game_scores, starts = deque(maxlen=100), np.zeros(B), np.ones(B, np.float32)
    steps, next_report, start = 0, REPORT_EVERY, time.monotonic()
    with open(args.out, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["wall_s", "agent_steps", "mean_100", "games", "entropy", "grad_norm"])
        while time.monotonic() - start < args.minutes * 60:
            frames = np.empty((T, B, *shape), np.uint8)
            actions, values = np.empty((T, B), np.int32), np.empty((T, B), np.float32)
            rewards, dones = np.empty((T, B), np.float32), np.empty((T, B), np.float32)
            for t in range(T):
                chosen, step_values = act(observations)
                frames[t], actions[t], values[t] = observations, chosen.numpy(), step_values.numpy()
                result = games.step(actions[t])
                rewards[t], dones[t] = result.rewards, result.dones
                game_scores += result.rewards
                for b in np.flatnonzero(result.game_overs):
                    scores.append(game_scores[b])
                    game_scores[b] = 0.0
                observations = result.observations
            bootstrap = act(observations)[1].numpy()
            if args.learner == "ours":
                empty = np.zeros((B, 0), np.float32)
                step_starts = np.concatenate([starts[None], dones[:-1]])
                gradient = gradient_step(Rollout(frames, actions, rewards, dones, step_starts, values,
                                                 LSTMState(empty, empty), bootstrap, np.zeros_like(rewards)))
                learner.apply(gradient.grads, gradient.finite)
                norm, entropy = gradient.grad_norm, gradient.entropy
            else:
                returns = discounted_returns(np.clip(rewards, -1.0, 1.0), dones, bootstrap)
                norm, entropy = learn(frames.reshape(-1, *shape), actions.reshape(-1), returns.reshape(-1))
            starts = dones[-1].copy()
            steps += T * B
            if steps >= next_report:
                next_report += REPORT_EVERY
                wall, mean = time.monotonic() - start, float(np.mean(scores)) if scores else float("nan")
                writer.writerow([round(wall), steps, round(mean, 3), len(scores), float(entropy), float(norm)])
                out.flush()
                print(f"{wall:6.0f} s {steps:9,d} agent steps  mean-100 {mean:6.2f}  entropy {float(entropy):.3f}  "
                      f"grad norm {float(norm):7.1f}  {steps / wall:5.0f} steps/s", flush=True)
    games.close()


if __name__ == "__main__":
    main()
