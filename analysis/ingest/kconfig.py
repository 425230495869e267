"""Kernel build configuration (``/proc/config.gz``, mmtests' ``kconfig-*.txt.gz``)."""

from __future__ import annotations

import re

__all__ = ["config_hz"]

_CONFIG_HZ = re.compile(r"^CONFIG_HZ=(\d+)\s*$", re.MULTILINE)


def config_hz(kconfig: str | None) -> int | None:
    """``CONFIG_HZ`` (timer ticks per second: the jiffy is 1/HZ s) from kconfig text.

    None when the text is missing or has no ``CONFIG_HZ=`` line (only the ``CONFIG_HZ_<n>``
    choice symbols are not enough to be sure).

    >>> config_hz("# CONFIG_HZ_100 is not set\\nCONFIG_HZ_250=y\\nCONFIG_HZ=250\\n")
    250
    """
    match = _CONFIG_HZ.search(kconfig or "")
    return int(match.group(1)) if match else None
