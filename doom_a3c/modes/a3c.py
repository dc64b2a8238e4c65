"""Thread A3C (the default mode): each worker thread plays its games with its own local copy, takes the
gradient of each rollout on that copy, applies it to the global network and syncs the copy back."""
from __future__ import annotations

from doom_a3c.algo.learner import GlobalLearner, Gradient
from doom_a3c.algo.local_copy import LocalCopy
from doom_a3c.algo.rollout import GameRunner, Rollout
from doom_a3c.envs.batch import GameBatch
from doom_a3c.errors import Stopped
from doom_a3c.modes.build import ThreadRun, build_network, worker_epsilon, worker_records, worker_seed
from doom_a3c.runtime.state import TrainMetrics


class A3CWorker:
    def __init__(self, index: int, run_parts: ThreadRun, games: GameBatch, local: LocalCopy):
        config = run_parts.config
        self.index = index
        self.rollout_length = config.rollout
        self.run = run_parts.run
        self.learner: GlobalLearner = run_parts.learner
        self.local = local
        self.runner = GameRunner(index, config, games, local, self.run, seed=worker_seed(config, index),
                                 record_every=worker_records(config, index), epsilon=worker_epsilon(config, index))

    def sync(self) -> None:
        self.local.sync(self.learner.net.trainable_variables)

    def learn(self, rollout: Rollout) -> TrainMetrics:
        """Each of the rollout's updates is taken on the local copy, applied to the global network, and the copy
        synced before the next: every pass starts from the global weights as they are."""
        def apply(gradient: Gradient, first: bool) -> bool:
            applied = self.learner.apply(gradient.grads, gradient.finite)
            self.sync()
            return applied
        return self.local.learn(rollout, apply)

    def run_thread(self) -> None:
        """Thread body: play and learn until told to stop; any error stops the whole run."""
        try:
            self.sync()
            while not self.run.stop.is_set():
                self.run.latest_metrics[self.index] = self.learn(self.runner.collect(self.rollout_length))
        except Stopped:  # the run stopped while a game did not answer: its rollout is dropped, nothing counted
            pass
        except BaseException as error:  # noqa: BLE001 - reported by the coordinator
            self.run.fail(error)

    def close(self) -> None:
        self.runner.close()


def a3c_workers(run_parts: ThreadRun) -> list[A3CWorker]:
    """One worker per game batch; the local copies are built here, in the main thread."""
    workers = []
    for w, games in enumerate(run_parts.games):
        local = LocalCopy(build_network(run_parts.config, run_parts.spec, f"worker_{w}"), run_parts.config,
                          len(games))
        workers.append(A3CWorker(w, run_parts, games, local))
    return workers
