"""Which chromium BrowserGym launches for medspot's tasks: the one medspot's own environments use.

BrowserGym launches two browsers per episode with its own Playwright (`browsergym-core` pins
`playwright==1.44.0`): the environment's, with `pw_chromium_kwargs` added to its launch, and
its chat window's, with no executable path at all (Playwright's own chromium of its revision,
looked up under `PLAYWRIGHT_BROWSERS_PATH`). medspot points both at Debian's chromium:

- the environment's browser: the ids are registered with
  `pw_chromium_kwargs={"executable_path": "/usr/bin/chromium"}` where that file exists
  (`chromium_kwargs`); a `gym.make(..., pw_chromium_kwargs=...)` replaces it (`{}`: Playwright's
  own chromium);
- the chat window's: where Playwright has no chromium of its own installed and
  `PLAYWRIGHT_BROWSERS_PATH` is not set, `use_system_chromium` makes a folder of medspot's cache
  (`<cache>/playwright-browsers/`) that holds, under the name Playwright looks for
  (`chromium-<revision>/chrome-linux/chrome`), a link to Debian's chromium, and sets
  `PLAYWRIGHT_BROWSERS_PATH` to it for this process (its children inherit it). It must happen
  before BrowserGym starts its Playwright (the first reset of the process): a task does it when
  it is made, which is before.

Checked here: Playwright 1.44 launches Debian's chromium 156 by either road, clicks, takes
screenshots and reads the accessibility tree BrowserGym's observations use.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from medspot.cache import cache_root

__all__ = [
    "BROWSERS_FOLDER",
    "DEFAULT_CHROMIUM",
    "chromium_kwargs",
    "playwright_chromium_revision",
    "use_system_chromium",
]

log = logging.getLogger(__name__)
DEFAULT_CHROMIUM = "/usr/bin/chromium"  # Debian's, as every medspot web environment's default
BROWSERS_FOLDER = "playwright-browsers"  # below medspot's cache folder


def chromium_kwargs(chromium: str = DEFAULT_CHROMIUM) -> dict[str, Any]:
    """BrowserGym's `pw_chromium_kwargs` that launch `chromium` where it exists (else none:
    Playwright's own chromium)."""
    return {"executable_path": chromium} if os.access(chromium, os.X_OK) else {}


def playwright_chromium_revision() -> str | None:
    """The chromium revision the installed Playwright looks for (its `browsers.json`)."""
    try:
        import playwright
    except ImportError:
        return None
    path = Path(playwright.__file__).parent / "driver" / "package" / "browsers.json"
    try:
        browsers = json.loads(path.read_text(encoding="utf-8"))["browsers"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for b in browsers:
        if isinstance(b, dict) and b.get("name") == "chromium":
            return str(b.get("revision"))
    return None


def _default_browsers_path() -> Path:
    """Where Playwright keeps its browsers on Linux when `PLAYWRIGHT_BROWSERS_PATH` is unset."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "ms-playwright"


def _executable(folder: Path, revision: str) -> Path:
    return folder / f"chromium-{revision}" / "chrome-linux" / "chrome"


def use_system_chromium(chromium: str = DEFAULT_CHROMIUM) -> Path | None:
    """Point Playwright's own chromium lookup at `chromium` for this process when Playwright
    has none installed (see the module docstring); the folder set as
    `PLAYWRIGHT_BROWSERS_PATH`, or None when nothing was needed or possible (the variable
    already set, Playwright's chromium installed, no `chromium`, not Linux)."""
    if os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or not sys.platform.startswith("linux"):
        return None
    revision = playwright_chromium_revision()
    if revision is None or _executable(_default_browsers_path(), revision).exists():
        return None
    if not os.access(chromium, os.X_OK):
        return None
    folder = cache_root() / BROWSERS_FOLDER
    exe = _executable(folder, revision)
    if not (exe.is_symlink() and os.readlink(exe) == chromium):
        exe.parent.mkdir(parents=True, exist_ok=True)
        tmp = exe.with_name(f".chrome.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(chromium)
        tmp.replace(exe)  # atomic: another process may do the same
    os.environ["PLAYWRIGHT_BROWSERS_PATH"] = str(folder)
    log.info("Playwright has no chromium %s: PLAYWRIGHT_BROWSERS_PATH=%s (-> %s)",
             revision, folder, chromium)  # fmt: skip
    return folder
