"""The one cache-folder rule of medspot: `$MEDSPOT_CACHE` (the folder itself), else
`$XDG_CACHE_HOME/medspot`, else `~/.cache/medspot`. The demo's synthetic suites, the live
environments' seeded studies (`<cache>/live/`), the pinned OHIF viewer (`<cache>/ohif/`) and the
words the `ocr` baseline read (`<cache>/ocr/`) all live under it."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root() -> Path:
    own = os.environ.get("MEDSPOT_CACHE")
    if own:
        return Path(own)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "medspot" if xdg else Path.home() / ".cache" / "medspot"
