"""What a Doom WAD file holds, read from its directory: whether it is a WAD at all, its maps, and the named ACS
scripts a map's compiled scripts hold.

A WAD starts with a 12-byte header: "IWAD" or "PWAD", the number of lumps and the offset of the directory,
whose 16-byte entries are the lump's offset, its size and its 8-byte name. A map is a marker lump (MAP01, E1M1)
followed by its data lumps, the first of which is THINGS (Doom and Hexen formats) or TEXTMAP (UDMF); a map with
ACS scripts has them compiled in its BEHAVIOR lump, which holds each named script's name as a string.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

from doom_a3c.errors import ConfigError

WAD_KINDS = (b"IWAD", b"PWAD")
HEADER = struct.Struct("<4sii")
DIRECTORY_ENTRY = struct.Struct("<ii8s")
FIRST_MAP_LUMPS = ("THINGS", "TEXTMAP")
COMPILED_SCRIPTS = "BEHAVIOR"


class Lump(NamedTuple):
    name: str  # upper case
    offset: int
    size: int


def wad_directory(path: str) -> list[Lump]:
    """The lumps of the WAD at `path`, in file order; ConfigError if it is not a whole WAD file."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(HEADER.size)
            if len(header) < HEADER.size or header[:4] not in WAD_KINDS:
                raise ConfigError(f"{path} is not a WAD file: it starts with {header[:4]!r}, not IWAD or PWAD")
            _, count, offset = HEADER.unpack(header)
            if count < 0 or offset < HEADER.size:
                raise ConfigError(f"{path} is a damaged WAD file (its directory is at {offset}, {count} lumps)")
            handle.seek(offset)
            directory = handle.read(count * DIRECTORY_ENTRY.size)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror or error}") from None
    if len(directory) < count * DIRECTORY_ENTRY.size:
        raise ConfigError(f"{path} is a truncated WAD file: its directory of {count} lumps runs past the end")
    lumps = []
    for start in range(0, len(directory), DIRECTORY_ENTRY.size):
        offset, size, name = DIRECTORY_ENTRY.unpack_from(directory, start)
        lumps.append(Lump(name.split(b"\0")[0].decode("ascii", "replace").upper(), offset, size))
    return lumps


def wad_lumps(path: str) -> list[str]:
    """The lump names of the WAD at `path`, upper case; ConfigError if it is not a whole WAD file."""
    return [lump.name for lump in wad_directory(path)]


def _map_starts(lumps: list[str]) -> list[int]:
    """The indices of the map markers among `lumps`."""
    return [i - 1 for i in range(1, len(lumps)) if lumps[i] in FIRST_MAP_LUMPS]


def wad_maps(path: str) -> list[str]:
    """The names of the maps in the WAD at `path` (MAP01, E1M1, ...), in file order."""
    lumps = wad_lumps(path)
    return [lumps[i] for i in _map_starts(lumps)]


def has_acs_script(path: str, map_name: str, script: str) -> bool:
    """Whether map `map_name` of the WAD at `path` has a named ACS script `script` (any case, as ZDoom matches
    names): its name among the strings of the map's BEHAVIOR lump. False for a map with no compiled scripts, or
    no such map."""
    directory = wad_directory(path)
    names = [lump.name for lump in directory]
    starts = _map_starts(names)
    for first, end in zip(starts, starts[1:] + [len(names)]):
        if names[first] != map_name.upper():
            continue
        behavior = next((lump for lump in directory[first + 1:end] if lump.name == COMPILED_SCRIPTS), None)
        if behavior is None:
            return False
        with open(path, "rb") as handle:
            handle.seek(behavior.offset)
            compiled = handle.read(behavior.size)
        return script.lower().encode("ascii") + b"\0" in compiled.lower()
    return False
