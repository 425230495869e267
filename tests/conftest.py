"""Shared test fixtures: paths to the repository's bundled data (nothing outside the clone)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
MAIL = DATA / "mail"


@pytest.fixture
def seeds_dir() -> Path:
    """data/mail/: the seed threads, committed byte for byte (data/mail/README.md).

    A missing directory is a failure, not a skip: a clone without its seeds is broken.
    """
    assert MAIL.is_dir(), f"seed mails missing: {MAIL}"
    return MAIL
