"""Code, help, docs and tests speak to the project's users, not of its own past: no dates, commit hashes as history,
"sittings", "seed 00N" (the reference implementations the project started from: docs/design/algorithm.md names
them once, in words) or issue numbers. Each finding is named file:line; train.py's help is checked as printed.
"""
import dataclasses
import re
from pathlib import Path

import pytest

from doom_a3c.cli import TRAIN_DESCRIPTION
from doom_a3c.config import TrainConfig, build_parser, is_flag

REPO = Path(__file__).resolve().parents[2]
AREAS = {"code": ["doom_a3c", "benchmarks", "scenarios", "train.py", "play.py", "pyproject.toml", "requirements.txt"],
         "docs": ["docs", "README.md"],
         "tests": ["tests"]}
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".sh", ".rst", ".yml", ".yaml"}
SKIPPED = {Path(__file__).resolve()}  # this file: its patterns and samples
PATTERNS = {
    "a date": re.compile(r"\b20\d\d-(?:0[1-9]|1[0-2])(?:-\d\d)?\b"),
    # 7 to 12 hex digits, at least one a letter and one a digit, on their own (not in a path, a digest or a name)
    "a commit hash": re.compile(r"(?<![\w/.#-])(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,12}(?![\w/.-])"),
    "a sitting": re.compile(r"\bsittings?\b", re.IGNORECASE),
    "a seed document": re.compile(r"\bseeds? 00\d\b|\bthe seed's\b", re.IGNORECASE),
    "an issue number": re.compile(r"\b(?:issue|PR|pull request)s? #?\d+\b|(?<![\w&/#])#\d{2,}\b", re.IGNORECASE),
    "a session": re.compile(r"\b(?:this|last|previous|next|earlier|a later) session\b", re.IGNORECASE),
}
# Text that matches a pattern and is no history: a log line's own timestamp that a parser is tested on, a value.
NOT_HISTORY = [re.compile(r"\[20\d\d-\d\d-\d\d \d\d:\d\d:\d\d,\d+\]"),  # Sample Factory's log lines (a fixture)
               re.compile(r'--base 01f8852|default="01f8852"')]  # network_speed.py's base commit: a flag's value


def scanned_files(area):
    for name in AREAS[area]:
        root = REPO / name
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in paths:
            if path.suffix in TEXT_SUFFIXES and path not in SKIPPED and "fixtures" not in path.parts:
                yield path


def findings_in(lines, where):
    found = []
    for number, line in enumerate(lines, 1):
        for allowed in NOT_HISTORY:
            line = allowed.sub("", line)
        for what, pattern in PATTERNS.items():
            match = pattern.search(line)
            if match:
                found.append(f"{where}:{number}: {what}: {match.group(0)!r}")
    return found


@pytest.mark.parametrize("area", sorted(AREAS))
def test_no_dates_hashes_sittings_seed_documents_or_issue_numbers(area):
    found = []
    for path in scanned_files(area):
        found += findings_in(path.read_text(errors="replace").splitlines(), path.relative_to(REPO))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("line", ["measured 2026-11-23 on a quiet machine", "as measured at 3232e2c",
                                  "seeds run in two sittings", "(seed 002)", "seeds 001 and 003",
                                  "the seed's ELU", "see issue 83", "fixed in #83", "in this session"])
def test_each_pattern_finds_what_it_is_for(line):
    assert findings_in([line], "sample")


@pytest.mark.parametrize("line", ["--seed 3: worker i uses seed + i", "pytest==9.0.3, ViZDoom 1.3.2",
                                  "policy #0", "sha256 " + "0123456789abcdef" * 4, "Agarwal et al., NeurIPS 2021",
                                  "[2026-11-23 08:01:29,114][25860] Fps is", "--base 01f8852 --minutes 2",
                                  "Ray's session folder", "colour #1f77b4"])
def test_what_is_no_history_passes(line):
    assert not findings_in([line], "sample")


def test_train_help_says_what_each_flag_does_in_two_lines():
    """At most about two lines of text a flag (200 characters) besides its default, and no seed document."""
    assert "seed 00" not in build_parser(TRAIN_DESCRIPTION).format_help().lower()
    long = {f.name: len(f.metadata["help"]) for f in dataclasses.fields(TrainConfig)
            if is_flag(f) and len(f.metadata["help"]) > 200}
    assert not long, long
    long_defaults = {f.name: f.metadata["shown_default"] for f in dataclasses.fields(TrainConfig)
                     if len(f.metadata.get("shown_default", "")) > 100}
    assert not long_defaults, long_defaults
