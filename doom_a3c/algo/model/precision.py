"""--precision: the floating-point type the network computes in, and why.

float32 everywhere, or bfloat16 mixed precision: the torso, the dense layer and the LSTM's matrix products in
bfloat16, every weight, the heads, the LSTM state and the loss in float32 (doom_a3c/algo/model/actor_critic.py).
bfloat16 pays only where the CPU multiplies bfloat16 matrices in hardware: AVX-512 BF16 (`avx512_bf16`) or AMX tiles
(`amx_bf16`) in /proc/cpuinfo's flags. Elsewhere TensorFlow still runs it, emulated and slower, so asking for it there
is refused.

No TensorFlow here: a bad --precision is one line on stderr before TensorFlow's import.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import NamedTuple

from doom_a3c.config import PRECISIONS
from doom_a3c.errors import ConfigError

# The CPU flags of fast bfloat16 matrix products, in the order a message names them.
BFLOAT16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")

# The switch: auto picks bfloat16 on a CPU with those flags only once bfloat16 is measured to train
# faster there and to learn no worse per env step (basic.wad and ALE/Breakout-v5, on a quiet machine). Until that
# measurement, auto runs float32 everywhere; flip this to True when it says bfloat16 pays.
AUTO_PICKS_BFLOAT16 = False

# Test hook: a file read instead of /proc/cpuinfo (a fake CPU with or without the flags, for a test's subprocess).
CPUINFO_ENV = "DOOM_A3C_CPUINFO"
CPUINFO = "/proc/cpuinfo"


class PrecisionChoice(NamedTuple):
    name: str  # "float32" or "bfloat16": what the network computes in
    reason: str  # why, for the run's first lines

    def line(self) -> str:
        return f"precision: {self.name} ({self.reason})"


def read_cpuinfo() -> str:
    """/proc/cpuinfo's text (or the file $DOOM_A3C_CPUINFO names); "" where there is none (macOS, Windows)."""
    try:
        with open(os.environ.get(CPUINFO_ENV) or CPUINFO) as handle:
            return handle.read()
    except OSError:
        return ""


def cpu_flags(cpuinfo: Callable[[], str] = read_cpuinfo) -> set[str]:
    """The CPU's feature flags: the words of cpuinfo's `flags` lines (x86) or `Features` lines (Arm)."""
    flags: set[str] = set()
    for line in cpuinfo().splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            flags.update(value.split())
    return flags


def bfloat16_flags(flags: Iterable[str]) -> list[str]:
    """Those of BFLOAT16_CPU_FLAGS the CPU has."""
    flags = set(flags)
    return [flag for flag in BFLOAT16_CPU_FLAGS if flag in flags]


def _cpu_has(found: list[str]) -> str:
    return f"this CPU has {' and '.join(found)}" if found else \
        f"this CPU has neither {' nor '.join(BFLOAT16_CPU_FLAGS)}"


def choose_precision(requested: str, flags: Iterable[str] | None = None, trained: str | None = None) -> PrecisionChoice:
    """What `requested` ("auto", "float32" or "bfloat16") runs as on a CPU with these flags (None: this CPU's).
    `trained`: a resumed run's saved precision, when --precision was not given again; bfloat16 then falls back to
    float32 on a CPU without it (the weights are float32 either way). ConfigError for bfloat16 asked for on a
    CPU without it."""
    if requested not in PRECISIONS:
        raise ConfigError(f"--precision must be one of {', '.join(PRECISIONS)}, got {requested!r}")
    found = bfloat16_flags(cpu_flags() if flags is None else flags)
    if trained is not None and trained != "auto":
        if trained == "bfloat16" and not found:
            return PrecisionChoice("float32", f"the run trained in bfloat16, but {_cpu_has(found)}")
        return PrecisionChoice(trained, f"as the run trained; {_cpu_has(found)}" if trained == "bfloat16"
                               else "as the run trained")
    if requested == "float32":
        return PrecisionChoice("float32", "asked")
    if requested == "bfloat16":
        if not found:
            raise ConfigError(f"--precision bfloat16: {_cpu_has(found)} (fast bfloat16 matrix products; see "
                              f"/proc/cpuinfo's flags); give --precision float32 or auto")
        return PrecisionChoice("bfloat16", f"asked; {_cpu_has(found)}")
    if not found:
        return PrecisionChoice("float32", f"auto: {_cpu_has(found)}")
    if AUTO_PICKS_BFLOAT16:
        return PrecisionChoice("bfloat16", f"auto: {_cpu_has(found)}")
    return PrecisionChoice("float32", f"auto: {_cpu_has(found)}, but bfloat16 is not yet measured faster here")
