"""Shared test fixtures: paths to the repo's bundled data and the project's shared references."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
SHARED = REPO.parent / "shared"


@pytest.fixture
def seeds_dir() -> Path:
    path = SHARED / "seeds"
    if not path.is_dir():
        pytest.skip(f"shared seeds not found at {path}")
    return path
