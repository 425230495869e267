"""Process-pool workers that die like an OOM-killed ingest (for test_bad_input).

A module of their own, importing nothing heavy: each spawned worker imports it.
"""

from __future__ import annotations

import os
from pathlib import Path


def die_once(path: str, cache: str | None) -> dict:
    """Killed (``os._exit``) the first time it sees a file named ``*die*``."""
    marker = Path(cache) / (Path(path).name + ".died")
    if "die" in Path(path).name and not marker.exists():
        marker.touch()
        os._exit(9)
    return {"source": path}


def die_always(path: str, cache: str | None) -> dict:
    """Killed every time it sees a file named ``*die*``."""
    if "die" in Path(path).name:
        os._exit(9)
    return {"source": path}


def out_of_memory_once(path: str, cache: str | None) -> dict:
    """Raises MemoryError the first time it sees a file named ``*oom*``, as when overcommit
    refuses an allocation instead of the OOM killer ending the process."""
    marker = Path(cache) / (Path(path).name + ".oom")
    if "oom" in Path(path).name and not marker.exists():
        marker.touch()
        raise MemoryError
    return {"source": path}
