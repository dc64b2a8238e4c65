"""Connecting this process to Ray for `--distributed ray`: a local instance started for the run (its files
under --model-dir), the user's cluster (--ray-address), or a session the process already has. Ray is
imported only here and in doom_a3c/modes/ray/, so `import doom_a3c` never imports it."""
from __future__ import annotations

import logging
import os
from pathlib import Path
import shutil
import socket

from doom_a3c.config import TrainConfig
from doom_a3c.errors import ConfigError, one_line

REPO_ROOT = str(Path(__file__).resolve().parents[3])  # the checkout: doom_a3c/modes/ray/session.py is 3 below it
# AF_UNIX socket paths are limited to 107 bytes; Ray puts its sockets in
# <temp dir>/session_<date>_<time>_<microseconds>_<pid>/sockets/plasma_store (64 characters after the temp dir
# with a 7-digit pid). A temp dir longer than this is replaced by a short one in /tmp.
SOCKET_PATH_LIMIT = 107
SESSION_SOCKET_SUFFIX = len("/session_YYYY-MM-DD_hh-mm-ss_ffffff_PPPPPPP/sockets/plasma_store")
SHIPPED_TO_CLUSTER = ("doom_a3c",)  # the package; a resolved config needs no preset


def import_ray():
    try:
        import ray
    except ImportError as error:
        raise ConfigError(f"--distributed ray needs Ray, which is not installed ({error}): "
                          f"pip install -r requirements.txt (or pip install ray)") from None
    return ray


def local_temp_dir(model_dir: str, pid: int | None = None) -> tuple[str, bool]:
    """Where a local Ray instance keeps its session files: `<model_dir>/ray`, or `/tmp/doom_a3c_ray_<pid>`
    when the run folder's path is too long for Ray's AF_UNIX sockets. Returns (folder, fell back)."""
    preferred = os.path.join(os.path.abspath(model_dir), "ray")
    if len(preferred) + SESSION_SOCKET_SUFFIX < SOCKET_PATH_LIMIT:
        return preferred, False
    return f"/tmp/doom_a3c_ray_{os.getpid() if pid is None else pid}", True


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """A HOST:PORT that nothing answers on fails here in seconds; Ray itself would retry for minutes."""
    if address == "auto" or address.startswith(("ray://", "local")):
        return
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(f"--ray-address {address!r} must be 'auto' or HOST:PORT (the head node's GCS port, "
                          f"6379 by default)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as error:
        raise ConfigError(f"cannot reach the Ray cluster at --ray-address {address}: "
                          f"{error.strerror or error} (is `ray start --head` running there?)") from None


class RaySession:
    """Connects this process to Ray: a local instance started for this run, the user's cluster
    (--ray-address), or a session this process already has (tests); `close` undoes only what it did."""

    def __init__(self, config: TrainConfig):
        self.ray = import_ray()
        self.owned = False
        self.temp_dir: str | None = None
        self.removable_temp_dir = False
        ray = self.ray
        if ray.is_initialized():
            self.where = "the Ray session already open in this process"
            return
        address = config.ray_address.strip()
        options = dict(logging_level=logging.ERROR, log_to_driver=False)
        if address:
            check_reachable(address)
            # The nodes get the package and the presets from here (nothing else: not models/, frames/, .git);
            # their Python must have requirements.txt installed.
            excludes = [f"/{name}" for name in os.listdir(REPO_ROOT) if name not in SHIPPED_TO_CLUSTER]
            runtime_env = {"working_dir": REPO_ROOT, "excludes": excludes + ["__pycache__"]}
            try:
                ray.init(address=address, runtime_env=runtime_env, **options)
            except (ConnectionError, RuntimeError, ValueError, TimeoutError) as error:
                hint = ""
                if address != "auto" and "RAY_AUTH_MODE" not in os.environ:
                    hint = (" (a cluster with token authentication also needs RAY_AUTH_MODE=token here, and its "
                            "token in ~/.ray/auth_token or RAY_AUTH_TOKEN)")
                raise ConfigError(f"cannot connect to the Ray cluster at --ray-address {address}: "
                                  f"{one_line(error)}{hint}") from None
            self.where = f"the Ray cluster at {address}"
        else:
            self.temp_dir, self.removable_temp_dir = local_temp_dir(config.model_dir)
            if self.removable_temp_dir:
                print(f"note: --model-dir's path is too long for Ray's sockets; this run's Ray files are in "
                      f"{self.temp_dir} (removed at the end)", flush=True)
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # a local instance phones nobody
            # Ray (>= 2.59) guards the local instance with a token, which it keeps in ~/.ray/auth_token (made
            # on first use): the only file of a local run outside the run's folder.
            try:
                ray.init(num_cpus=max(os.cpu_count() or 1, config.workers), include_dashboard=False,
                         _temp_dir=self.temp_dir, runtime_env={"env_vars": {"PYTHONPATH": REPO_ROOT}}, **options)
            except (ConnectionError, RuntimeError, ValueError, OSError) as error:
                raise ConfigError(f"cannot start a local Ray instance in {self.temp_dir}: {one_line(error)}") from None
            self.where = f"a local Ray instance (logs in {self.temp_dir})"
        self.owned = True

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
        self.owned = False
        if self.removable_temp_dir and self.temp_dir:
            shutil.rmtree(self.temp_dir, ignore_errors=True)
            self.removable_temp_dir = False
