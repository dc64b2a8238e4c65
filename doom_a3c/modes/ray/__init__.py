"""A3C across processes and machines on Ray (`--distributed ray`: a parameter server and workers).

Three kinds of process, all built by doom_a3c/modes/build.py's functions from the run's resolved config:

- one parameter-server actor (`ParameterServer`): the global network and shared optimizer (the learning
  core's `GlobalLearner`), the run's counters, the returns the workers report with their gradients (seed
  000's GLOBAL_EP and GLOBAL_RUNNING_R). It applies pushed gradients (never a non-finite one), serves fresh
  weights and writes the checkpoints, in the threaded modes' format, into --model-dir. It is pinned to the
  driver's node, so that folder is the driver's.
- `--workers` worker actors (`PushingWorker`): a worker's games and local copy, the same rollouts and
  gradient as a thread A3C worker; the gradient is pushed to the parameter server and the weights of its
  reply replace the local copy (`ray.get` on the push: the plain A3C sync).
- the driver (`RayBackend`, in the train.py process): the coordinator's backend. It asks each worker for
  one rollout at a time, queues the episodes that come back, replaces a worker whose process died, and has
  the parameter server save on the coordinator's schedule.

The plain classes run without Ray (the tests drive `ParameterServer` and `PushingWorker` directly); Ray
wraps them with `ray.remote` only in backend.py, at run time. Ray itself is imported only when a run asks for it.
"""
