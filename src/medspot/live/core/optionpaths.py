"""The path-like options of an environment (a program it runs, a folder it reads or writes),
declared as `typing.Annotated` types on its constructor's parameters and checked with the
other option values before anything starts (`medspot.live.envs.envoptions`):

    python: Annotated[str, Program(imports=("wx", "vtkmodules"))] = "/usr/bin/python3"
    invesalius_dir: Annotated[Path, Folder(holds=("app.py",))] = INVESALIUS_DIR
    chromium: ProgramPath = "/usr/bin/chromium"     (Annotated[str, Program()])
    seed_cache: CachePath | None = None

A value that cannot be what it names (no such program, not executable, a Python that cannot
import what the application needs, no such folder) is the option's error, exit 2 naming it,
never an environment fault after environments have started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from medspot.live.core import processes

__all__ = [
    "CacheFolder",
    "CachePath",
    "Folder",
    "FolderPath",
    "OptionCheck",
    "Program",
    "ProgramPath",
]


_IMPORTED = "medspot-imported"


class OptionCheck:
    """What an option's value must be beyond its type: `problem(value)` says why it is not
    (None: it is); `describe()` what the option expects, in words."""

    def describe(self) -> str:
        raise NotImplementedError

    def problem(self, value: Any) -> str | None:
        raise NotImplementedError


@dataclass(frozen=True)
class Program(OptionCheck):
    """A program to run: a path (with a `/`) to an executable file, or a name found on PATH;
    with `imports`, a Python that can import those modules (run once, within `timeout_s`)."""

    imports: tuple[str, ...] = ()
    timeout_s: float = 60.0

    def describe(self) -> str:
        what = "a program (a path, or a name on PATH)"
        return f"{what} that imports {', '.join(self.imports)}" if self.imports else what

    def problem(self, value: Any) -> str | None:
        text = str(value)
        if "/" in text:
            path = Path(text).expanduser()
            if not path.exists():
                return "no such file"
            if not path.is_file() or not os.access(path, os.X_OK):
                return "not an executable file"
            exe = str(path)
        else:
            found = shutil.which(text)
            if found is None:
                return f"no program {text!r} on PATH"
            exe = found
        if not self.imports:
            return None
        # the word printed after the imports: a program that ignores its arguments and exits
        # 0 (`/bin/true`) is no Python
        code = "import " + ", ".join(self.imports) + f"; print({_IMPORTED!r})"
        try:
            out = processes.run([exe, "-c", code], capture_output=True, text=True,
                                timeout=self.timeout_s, check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"cannot run it to import {', '.join(self.imports)} ({exc})"
        if out.returncode != 0 or _IMPORTED not in out.stdout.split():
            last = (out.stderr.strip().splitlines() or ["not a Python"])[-1][-200:]
            return f"it cannot import {', '.join(self.imports)}: {last}"
        return None


@dataclass(frozen=True)
class Folder(OptionCheck):
    """A folder that must exist, holding the files `holds` names."""

    holds: tuple[str, ...] = ()

    def describe(self) -> str:
        return "an existing folder" + (f" holding {', '.join(self.holds)}" if self.holds else "")

    def problem(self, value: Any) -> str | None:
        path = Path(value).expanduser()
        if not path.is_dir():
            return "no such folder" if not path.exists() else "not a folder"
        missing = [h for h in self.holds if not (path / h).exists()]
        return f"no {', '.join(missing)} in it" if missing else None


@dataclass(frozen=True)
class CacheFolder(OptionCheck):
    """A folder the environment writes into (a cache): a folder, or one that can be made (its
    nearest existing parent is a folder this process may write in)."""

    def describe(self) -> str:
        return "a folder (made when missing)"

    def problem(self, value: Any) -> str | None:
        path = Path(value).expanduser().absolute()
        if path.exists():
            return None if path.is_dir() else "not a folder"
        parent = path.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            return f"cannot be made: {parent} is not a folder"
        if not os.access(parent, os.W_OK | os.X_OK):
            return f"cannot be made: {parent} is not writable"
        return None


ProgramPath = Annotated[str, Program()]  # a program to run: a path, or a name on PATH
FolderPath = Annotated[Path, Folder()]  # a folder that must exist
CachePath = Annotated[Path, CacheFolder()]  # a folder written into, made when missing
