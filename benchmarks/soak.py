#!/usr/bin/env python
"""Soak test: train basic.wad for a long time while faults are thrown at it, and report what they cost.

    python benchmarks/soak.py --minutes 30 --out /tmp/soak [-- extra train.py flags]

Every `--engine-fault-every` seconds a random ViZDoom engine of the trainer is either killed (SIGKILL) or stopped
(SIGSTOP: alive, never answering, as an engine that died holding ViZDoom's message-queue lock leaves its game), a
share `--stop-share` of them stopped; every `--kill-trainer-every` seconds the trainer itself is `kill -9`-ed and
started again with `--resume`. The trainer runs with `--game-timeout` (10 s by default here), the watchdog's bound.
At the end the trainer is stopped with SIGTERM. Reports (and writes to OUT/soak.json, strict JSON):

- game restarts: the trainer's `warning: game ...` lines (each drops one unfinished episode), and each engine fault
  that no new warning line followed within --game-timeout + 15 s (in events.log too: which engine, when);
- hangs: engine faults without a restart warning, a worker that logged no episode for 60 s while its trainer
  ran (the log says which), and a final SIGTERM not obeyed within 60 s;
- episodes lost to trainer kills: rows progress.csv had at the kill minus the episodes of the checkpoint the
  resume starts from (played since the last save), and whether any checkpoint was lost (the resumed counters
  behind the last checkpoint seen before the kill) or the CSV has a gap or a duplicate;
- memory: peak proportional set size (PSS: shared pages split between the processes that share them) of the
  trainer and all its processes, and the mean of the first and last fifth of the samples (flat memory: about
  equal);
- leftover processes: engines still running 10 s after each kill -9, and any process of the trainer's still
  running after the end.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from doom_a3c.run.summaries import read_progress  # noqa: E402

SAMPLE_SECONDS = 2.0
LEFTOVER_GRACE_SECONDS = 10.0
RESTART_GRACE_SECONDS = 15.0  # beyond --game-timeout: a faulty engine's game must have been restarted by then
WORKER_SILENCE_SECONDS = 60.0  # a worker that logs no episode for this long while its trainer runs: a hang
STOP_SECONDS = 60.0  # the final SIGTERM


def process_table() -> dict[int, tuple[int, str, int]]:
    """pid -> (parent pid, state, resident KiB) of every process now."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            table[int(entry)] = (int(fields[1]), fields[0], int(fields[21]) * os.sysconf("SC_PAGESIZE") // 1024)
        except (OSError, ValueError, IndexError):
            continue
    return table


def family(pid: int, table: dict[int, tuple[int, str, int]]) -> list[int]:
    """`pid` and every running descendant."""
    found, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p, (ppid, state, _) in table.items() if ppid == parent and state != "Z"]
        found += children
        frontier += children
    return [p for p in found if p in table and table[p][1] != "Z"]


def pss_kib(pid: int) -> int:
    """Proportional set size: a page shared by n processes counts 1/n in each (forked game processes share most of
    the trainer's pages, which their resident sizes would each count whole)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def is_engine(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return os.path.basename(handle.read().split(b"\0")[0]) == b"vizdoom"
    except OSError:
        return False


def running(pids: list[int]) -> list[int]:
    table = process_table()
    return [p for p in pids if p in table and table[p][1] != "Z"]


def checkpoint_counters(model_dir: str) -> dict[str, float]:
    from doom_a3c.runtime.checkpoint import read_checkpoint, resolve_prefix

    return read_checkpoint(resolve_prefix(model_dir)).counters


class ProgressTail:
    """progress.csv read as it grows: when each worker last logged an episode (the soak's clock)."""

    def __init__(self, path: str):
        self.path = path
        self.offset = 0
        self.identity: tuple[int, int] | None = None  # (device, inode): a resumed trainer writes a new file
        self.columns: list[str] | None = None
        self.last_seen: dict[int, float] = {}

    def read(self) -> None:
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            return
        if (status.st_dev, status.st_ino) != self.identity or status.st_size < self.offset:
            self.identity, self.offset, self.columns = (status.st_dev, status.st_ino), 0, None
        with open(self.path) as handle:
            handle.seek(self.offset)
            chunk = handle.read()
        complete = chunk[:chunk.rfind("\n") + 1]  # a line still being written waits for the next read
        self.offset += len(complete.encode())
        now = time.time()
        for line in complete.splitlines():
            if self.columns is None:
                self.columns = line.split(",")
            elif len(line.split(",")) == len(self.columns) and line != ",".join(self.columns):
                self.last_seen[int(line.split(",")[self.columns.index("worker")])] = now


class Soak:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.model_dir = os.path.join(args.out, "model")
        self.stderr_path = os.path.join(args.out, "stderr.log")
        self.rng = random.Random(args.seed)
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.began = time.time()
        self.seen: set[int] = set()  # every process of the trainer's ever sampled
        self.memory: list[float] = []  # MiB of the trainer and its processes, one sample every SAMPLE_SECONDS
        self.unanswered: tuple[int, float, int] | None = None  # (engine, when, warnings then): no restart seen yet
        self.grace = args.game_timeout + RESTART_GRACE_SECONDS
        self.progress = ProgressTail(os.path.join(self.model_dir, "progress.csv"))
        self.trainer_started = time.time()
        self.report = {"minutes": args.minutes, "engine_kills": 0, "engine_stops": 0, "trainer_kills": 0,
                       "game_restarts": 0, "engine_faults_without_restart": 0, "engine_faults_undecided": 0,
                       "silent_workers": 0, "final_stop_seconds": 0.0,
                       "episodes_lost_to_trainer_kills": 0, "checkpoints_lost": 0, "csv_gaps_or_duplicates": 0,
                       "engines_left_after_kill_9": 0, "processes_left_at_end": 0}

    def start(self, resume: bool) -> None:
        flags = ["--resume", "--model-dir", self.model_dir] if resume else [
            "--scenario", "basic.wad", "--model-dir", self.model_dir, "--frames-dir", os.path.join(self.args.out, "frames"),
            "--max-minutes", str(self.args.minutes * 2), "--game-timeout", str(self.args.game_timeout),
            *self.args.train_flags]
        with open(os.path.join(self.args.out, "stdout.log"), "a") as out, open(self.stderr_path, "a") as err:
            self.proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "train.py"), *flags], cwd=ROOT,
                                         stdout=out, stderr=err, start_new_session=True)
        self.starts += 1
        self.trainer_started = time.time()
        self.event(f"trainer started (pid {self.proc.pid}{', --resume' if resume else ''})")

    def event(self, what: str) -> None:
        with open(os.path.join(self.args.out, "events.log"), "a") as handle:
            handle.write(f"{time.time() - self.began:8.1f} s  {what}\n")

    def training(self) -> bool:
        """The latest trainer has printed its start line (its signal handlers are in place)."""
        with open(os.path.join(self.args.out, "stdout.log")) as handle:
            return sum(line.startswith("training ") for line in handle) >= self.starts

    def sample(self) -> None:
        table = process_table()
        members = family(self.proc.pid, table)
        self.seen.update(members)
        self.memory.append(sum(pss_kib(p) for p in members) / 1024)

    def engines(self) -> list[int]:
        return [p for p in family(self.proc.pid, process_table()) if is_engine(p)]

    def warnings(self) -> int:
        with open(self.stderr_path) as handle:
            return sum(line.startswith("warning: game") for line in handle)

    def engine_fault(self) -> None:
        """Kill or stop a random engine of the trainer's."""
        engines = self.engines()
        if engines:
            engine = self.rng.choice(engines)
            faults = self.report["engine_stops"] + self.report["engine_kills"]
            # Fault i is a stop when it raises the stops' count to the share: kill, stop, kill, stop... at 0.5.
            stop = int((faults + 1) * self.args.stop_share) > int(faults * self.args.stop_share)
            os.kill(engine, signal.SIGSTOP if stop else signal.SIGKILL)
            self.report["engine_stops" if stop else "engine_kills"] += 1
            self.event(f"engine {engine} {'stopped (SIGSTOP)' if stop else 'killed'}")
            self.unanswered = (engine, time.time(), self.warnings())

    def check_workers(self) -> None:
        """Every worker logs episodes: one silent for WORKER_SILENCE_SECONDS while its trainer runs is a hang."""
        now = time.time()
        self.progress.read()
        if now - self.trainer_started < WORKER_SILENCE_SECONDS:
            return
        for worker, last in self.progress.last_seen.items():
            if now - max(last, self.trainer_started) > WORKER_SILENCE_SECONDS:
                self.report["silent_workers"] += 1
                self.event(f"worker {worker}: no episode for {WORKER_SILENCE_SECONDS:g} s")
                self.progress.last_seen[worker] = now  # counted once per silence

    def check_restart(self, trainer_killed: bool = False) -> None:
        """Has the last killed engine's game been restarted? A trainer killed first leaves it undecided."""
        if self.unanswered is None:
            return
        engine, when, before = self.unanswered
        if self.warnings() > before:
            self.unanswered = None
        elif trainer_killed:
            self.unanswered = None
            self.report["engine_faults_undecided"] += 1
            self.event(f"engine {engine}: the trainer was killed before its game's restart showed")
        elif time.time() - when > self.grace:
            self.unanswered = None
            self.report["engine_faults_without_restart"] += 1
            self.event(f"engine {engine}: no restart warning within {self.grace:g} s")

    def kill_and_resume_the_trainer(self) -> None:
        self.check_restart()
        engines = self.engines()
        rows_at_kill = len(read_progress(os.path.join(self.model_dir, "progress.csv")))
        saved_before = checkpoint_counters(self.model_dir)
        self.proc.kill()
        self.proc.wait()
        self.check_restart(trainer_killed=True)
        self.report["trainer_kills"] += 1
        self.event(f"trainer {self.proc.pid} killed with kill -9 ({rows_at_kill} episodes in progress.csv)")
        time.sleep(LEFTOVER_GRACE_SECONDS)
        left = running(engines)
        self.report["engines_left_after_kill_9"] += len(left)
        for pid in left:  # so that one leak is not counted again at the end
            os.kill(pid, signal.SIGKILL)
        resumed_from = checkpoint_counters(self.model_dir)
        if resumed_from["env_steps"] < saved_before["env_steps"]:
            self.report["checkpoints_lost"] += 1
        self.report["episodes_lost_to_trainer_kills"] += max(0, rows_at_kill - int(resumed_from["episodes"]))
        self.start(resume=True)

    def run(self) -> dict:
        os.makedirs(self.args.out, exist_ok=True)
        self.began = began = time.time()
        self.start(resume=False)
        next_engine_fault = began + self.args.engine_fault_every
        next_trainer_kill = began + self.args.kill_trainer_every
        while time.time() - began < self.args.minutes * 60:
            time.sleep(SAMPLE_SECONDS)
            if self.proc.poll() is not None:
                raise SystemExit(f"error: the trainer exited by itself (code {self.proc.returncode}); see "
                                 f"{self.stderr_path}")
            self.sample()
            self.check_restart()
            self.check_workers()
            now = time.time()
            if now >= next_trainer_kill:
                self.kill_and_resume_the_trainer()
                next_trainer_kill = now + self.args.kill_trainer_every
                next_engine_fault = max(next_engine_fault, now + self.args.engine_fault_every)
            elif now >= next_engine_fault and self.unanswered is None:  # one fault at a time: each one is judged
                self.engine_fault()
                next_engine_fault = now + self.args.engine_fault_every
        while self.unanswered is not None:  # the last engine kill's restart: wait for it, or count it missing
            time.sleep(SAMPLE_SECONDS)
            self.check_restart()
        while not self.training() and self.proc.poll() is None:  # a SIGTERM before that would find no handler
            time.sleep(SAMPLE_SECONDS)
        self.proc.send_signal(signal.SIGTERM)
        sent = time.time()
        try:
            self.report["final_exit_code"] = self.proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.event(f"the trainer ignored SIGTERM for {STOP_SECONDS:g} s: killed")
            self.proc.kill()
            self.report["final_exit_code"] = self.proc.wait()
        self.report["final_stop_seconds"] = round(time.time() - sent, 1)
        time.sleep(LEFTOVER_GRACE_SECONDS)
        left = running(sorted(self.seen))
        self.report["processes_left_at_end"] = len(left)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        return self.summarise()

    def summarise(self) -> dict:
        self.report["game_restarts"] = self.warnings()
        self.report["hangs"] = (self.report["engine_faults_without_restart"] + self.report["silent_workers"]
                                + int(self.report["final_stop_seconds"] >= STOP_SECONDS))
        rows = read_progress(os.path.join(self.model_dir, "progress.csv"))
        episodes = [int(r["episode"]) for r in rows]
        self.report["csv_gaps_or_duplicates"] = int(episodes != list(range(1, len(episodes) + 1)))
        self.report["episodes"] = len(rows)
        self.report["env_steps"] = int(checkpoint_counters(self.model_dir)["env_steps"])
        fifth = max(1, len(self.memory) // 5)
        self.report["peak_memory_mib"] = round(max(self.memory, default=0.0), 1)
        self.report["memory_first_fifth_mib"] = round(sum(self.memory[:fifth]) / fifth, 1) if self.memory else 0.0
        self.report["memory_last_fifth_mib"] = round(sum(self.memory[-fifth:]) / fifth, 1) if self.memory else 0.0
        return self.report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--engine-fault-every", type=float, default=25.0,
                        help="seconds between engine faults (one at a time: the next waits for the last one's restart)")
    parser.add_argument("--stop-share", type=float, default=0.5, help="share of engine faults that are SIGSTOP, not SIGKILL (spread evenly)")
    parser.add_argument("--game-timeout", type=float, default=10.0, help="the trainer's --game-timeout (watchdog bound)")
    parser.add_argument("--kill-trainer-every", type=float, default=300.0, help="seconds between kill -9 + --resume")
    parser.add_argument("--out", default="/tmp/soak", help="run folder and soak.json (a fresh folder)")
    parser.add_argument("--seed", type=int, default=0, help="which engine is hit")
    parser.add_argument("train_flags", nargs="*", help="after --: extra train.py flags for the first start")
    args = parser.parse_args()
    report = Soak(args).run()
    with open(os.path.join(args.out, "soak.json"), "w") as handle:
        handle.write(json.dumps(report, indent=2, allow_nan=False) + "\n")
    print(json.dumps(report, indent=2, allow_nan=False))
    failed = (report["engines_left_after_kill_9"] or report["processes_left_at_end"] or report["checkpoints_lost"]
              or report["csv_gaps_or_duplicates"] or report["final_exit_code"] != 0 or report["hangs"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
