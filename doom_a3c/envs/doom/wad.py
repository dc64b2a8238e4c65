"""What a Doom WAD file holds, read from its directory alone: whether it is a WAD at all, and its maps.

A WAD starts with a 12-byte header: "IWAD" or "PWAD", the number of lumps and the offset of the directory,
whose 16-byte entries end with the lump's 8-byte name. A map is a marker lump (MAP01, E1M1) followed by its
data lumps, the first of which is THINGS (Doom and Hexen formats) or TEXTMAP (UDMF).
"""
from __future__ import annotations

import struct

from doom_a3c.errors import ConfigError

WAD_KINDS = (b"IWAD", b"PWAD")
HEADER = struct.Struct("<4sii")
DIRECTORY_ENTRY = 16
FIRST_MAP_LUMPS = ("THINGS", "TEXTMAP")


def wad_lumps(path: str) -> list[str]:
    """The lump names of the WAD at `path`, upper case; ConfigError if it is not a whole WAD file."""
    try:
        with open(path, "rb") as handle:
            header = handle.read(HEADER.size)
            if len(header) < HEADER.size or header[:4] not in WAD_KINDS:
                raise ConfigError(f"{path} is not a WAD file: it starts with {header[:4]!r}, not IWAD or PWAD")
            _, count, offset = HEADER.unpack(header)
            if count < 0 or offset < HEADER.size:
                raise ConfigError(f"{path} is a damaged WAD file (its directory is at {offset}, {count} lumps)")
            handle.seek(offset)
            directory = handle.read(count * DIRECTORY_ENTRY)
    except OSError as error:
        raise ConfigError(f"cannot read {path}: {error.strerror or error}") from None
    if len(directory) < count * DIRECTORY_ENTRY:
        raise ConfigError(f"{path} is a truncated WAD file: its directory of {count} lumps runs past the end")
    return [directory[i + 8:i + DIRECTORY_ENTRY].split(b"\0")[0].decode("ascii", "replace").upper()
            for i in range(0, len(directory), DIRECTORY_ENTRY)]


def wad_maps(path: str) -> list[str]:
    """The names of the maps in the WAD at `path` (MAP01, E1M1, ...), in file order."""
    lumps = wad_lumps(path)
    return [lumps[i - 1] for i in range(1, len(lumps)) if lumps[i] in FIRST_MAP_LUMPS]
