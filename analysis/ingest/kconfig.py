"""Kernel build configuration (``/proc/config.gz``, mmtests' ``kconfig-*.txt.gz``)."""

from __future__ import annotations

import re

__all__ = ["config_hz", "page_size"]

_CONFIG_HZ = re.compile(r"^CONFIG_HZ=(\d+)\s*$", re.MULTILINE)
# CONFIG_PAGE_SHIFT (6.9+), else the architecture's page-size choice (powerpc, arm64, and
# the generic CONFIG_PAGE_SIZE_<n>KB of 6.9+); x86 has 4 KiB pages only.
_PAGE_SHIFT = re.compile(r"^CONFIG_PAGE_SHIFT=(\d+)\s*$", re.MULTILINE)
_PAGE_CHOICE = re.compile(
    r"^CONFIG_(?:PPC_|ARM64_|PAGE_SIZE_)(4|16|64|256)K(?:B|_PAGES)=y\s*$", re.MULTILINE
)
_X86 = re.compile(r"^CONFIG_X86=y\s*$", re.MULTILINE)


def config_hz(kconfig: str | None) -> int | None:
    """``CONFIG_HZ`` (timer ticks per second: the jiffy is 1/HZ s) from kconfig text.

    None when the text is missing or has no ``CONFIG_HZ=`` line (only the ``CONFIG_HZ_<n>``
    choice symbols are not enough to be sure).

    >>> config_hz("# CONFIG_HZ_100 is not set\\nCONFIG_HZ_250=y\\nCONFIG_HZ=250\\n")
    250
    """
    match = _CONFIG_HZ.search(kconfig or "")
    return int(match.group(1)) if match else None


def page_size(kconfig: str | None) -> int | None:
    """The base page size in bytes (``PAGE_SIZE``): what one "page" of /proc/vmstat is.

    None when the text does not say. mmtests' trees from ppc64le (``data/mmtests-ci``)
    have 64 KiB pages, so their page counts are 16 times the bytes of an x86 count.

    >>> page_size("CONFIG_PPC_64K_PAGES=y\n"), page_size("CONFIG_X86=y\n"), page_size("")
    (65536, 4096, None)
    """
    text = kconfig or ""
    if match := _PAGE_SHIFT.search(text):
        return 1 << int(match.group(1))
    if match := _PAGE_CHOICE.search(text):
        return int(match.group(1)) * 1024
    return 4096 if _X86.search(text) else None
