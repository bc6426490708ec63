"""What this machine needs for the live environments: `medspot live doctor` and `medspot live
setup` as functions. Each environment declares its Debian packages, Python modules and its own
`doctor` / `setup` hooks on its registry entry (`EnvEntry`); this module checks and installs
them (dpkg-query and apt-get), and never prints: the command line does."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence

from medspot.errors import ConfigError
from medspot.live.core.contract import EnvEntry

__all__ = [
    "apt_commands",
    "can_install",
    "install_packages",
    "installed_versions",
    "missing_for",
    "run_setup_hooks",
]


def _package_installed(pkg: str) -> bool:
    if shutil.which("dpkg-query") is None:
        return False
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True, check=False
    )
    return "install ok installed" in out.stdout


def installed_versions(entry: EnvEntry) -> dict[str, str]:
    """The versions of the entry's Debian packages installed here (the application versions
    `medspot live doctor` reports, on a machine and in an environment image alike)."""
    if shutil.which("dpkg-query") is None or not entry.system_packages:
        return {}
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package}\t${Status}\t${Version}\n", *entry.system_packages],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    found = {}
    for line in out.stdout.splitlines():
        name, status, version = [*line.split("\t"), "", ""][:3]
        if "install ok installed" in status and version:
            found[name] = version
    return {p: found[p] for p in entry.system_packages if p in found}


def missing_for(entry: EnvEntry) -> list[str]:
    """What `entry` lacks on this machine, each thing named once, in a stable order."""
    problems: list[str] = []
    for pkg in entry.system_packages:
        if not _package_installed(pkg):
            problems.append(f"Debian package {pkg} is not installed")
    for mod in entry.python_modules:
        try:
            importlib.import_module(mod)
        except ImportError:
            problems.append(f"Python package {mod} is missing (pip install 'medspot[live]')")
    if entry.doctor is not None:
        problems.extend(str(p) for p in entry.doctor())
    return list(dict.fromkeys(problems))


def apt_commands(entries: Sequence[EnvEntry]) -> list[list[str]]:
    """The apt-get commands that install every package the entries declare (none: empty)."""
    pkgs = list(dict.fromkeys(p for e in entries for p in e.system_packages))
    if not pkgs:
        return []
    return [["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", *pkgs]]


def can_install() -> bool:
    """Root with apt-get: `medspot live setup` installs; otherwise it prints the commands."""
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get") is not None


def install_packages(
    commands: Sequence[Sequence[str]], echo: Callable[[str], None] | None = None
) -> None:
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for c in commands:
        if echo is not None:
            echo("+ " + " ".join(c))
        if subprocess.run(list(c), env=env, check=False).returncode != 0:
            raise ConfigError(f"`{' '.join(c)}` failed")


def run_setup_hooks(entries: Sequence[EnvEntry]) -> list[tuple[str, str]]:
    """Each entry's `setup` hook (fetch what apt-get cannot): (name, what it did)."""
    done = []
    for e in entries:
        if e.setup is not None:
            done.append((e.name, str(e.setup() or "set up")))
    return done
