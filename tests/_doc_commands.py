"""The commands that README.md and the docs (docs/**/*.md) show, and running one exactly as written.

A command is a line of a shell code block (a fence with no language or sh, bash, shell,
console, zsh) that starts with `medspot `, `make ` or `inspect ` (Inspect's `inspect eval
medspot/...`; after an optional `$ ` prompt), with the lines that a trailing backslash
continues. It runs as `bash -c TEXT`, TEXT being the
lines as written (a trailing `# comment` included), either with its output piped or on a
pseudo-terminal, as a user at a terminal runs it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import re
import select
import shlex
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from _children import start

__all__ = [
    "SHELL_LANGUAGES",
    "DocCommand",
    "Ran",
    "commands_in",
    "documented_commands",
    "ports_named",
    "run_on_pty",
    "run_piped",
    "tail",
]

SHELL_LANGUAGES = frozenset({"", "sh", "bash", "shell", "console", "zsh"})
PROGRAMS = ("medspot ", "make ", "inspect ")
# `medspot live` sub-commands that start no environment; any other one (run, export, ...)
# starts one.
NOT_LIVE = frozenset({"tasks", "doctor", "setup"})
INSPECT_LIVE = ["inspect", "eval", "medspot/medspot_live"]  # starts the `-T env=ENV` it names

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


@dataclass(frozen=True)
class DocCommand:
    file: str  # relative to the repository root, e.g. "docs/live/running.md"
    line: int  # 1-based line of its first line
    section: str  # the heading above it ("" before the first)
    text: str  # exactly as written: its lines joined by newlines

    @property
    def argv(self) -> list[str]:
        """The words the shell reads (continuations joined, the comment dropped)."""
        return shlex.split(self.text.replace("\\\n", " "), comments=True)

    @property
    def key(self) -> str:
        """The command as one line of words, as the tables of the test name it."""
        return " ".join(self.argv)

    @property
    def starts_live_environment(self) -> bool:
        a = self.argv
        if a[:3] == INSPECT_LIVE:
            return True
        return a[:2] == ["medspot", "live"] and len(a) > 2 and a[2] not in NOT_LIVE

    @property
    def needs_container_engine(self) -> bool:
        """`medspot live image ...`, or a live command with `--executor container`."""
        a = self.argv
        return a[:3] == ["medspot", "live", "image"] or (
            a[:2] == ["medspot", "live"] and "--executor" in a
            and a[a.index("--executor") + 1 : a.index("--executor") + 2] == ["container"]
        )  # fmt: skip

    @property
    def env(self) -> str | None:
        """The `--env` it names (Inspect's live task: `-T env=ENV`)."""
        a = self.argv
        for i, w in enumerate(a):
            if w == "--env" and i + 1 < len(a):
                return a[i + 1]
            if w.startswith("--env="):
                return w.partition("=")[2]
            if w == "-T" and i + 1 < len(a) and a[i + 1].startswith("env="):
                return a[i + 1].partition("=")[2]
        return None

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def commands_in(text: str, file: str) -> list[DocCommand]:
    """Every command in the shell code blocks of one markdown text."""
    out: list[DocCommand] = []
    lines = text.splitlines()
    section = ""
    fence: str | None = None  # the open fence's marker
    shell = False
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence, shell = m.group(2), m.group(3).lower() in SHELL_LANGUAGES
            elif h := _HEADING.match(line):
                section = h.group(2)
            i += 1
            continue
        if m and m.group(2).startswith(fence) and not m.group(3):
            fence = None
            i += 1
            continue
        body = line.strip()
        if body.startswith("$ "):
            body = body[2:]
        if shell and body.startswith(PROGRAMS):
            start, parts = i, [body]
            while parts[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                parts.append(lines[i])
            out.append(DocCommand(file, start + 1, section, "\n".join(parts)))
        i += 1
    return out


def documented_commands(root: Path) -> list[DocCommand]:
    """The commands of README.md and every page under docs/ (docs/live/ and its subfolders
    too), in file order."""
    files = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    out: list[DocCommand] = []
    for f in files:
        out.extend(commands_in(f.read_text(encoding="utf-8"), f.relative_to(root).as_posix()))
    return out


@dataclass(frozen=True)
class Ran:
    code: int  # the exit status; -N killed by signal N; None: timed out
    output: str  # stdout and stderr together
    seconds: float
    timed_out: bool = False


def run_piped(text: str, cwd: Path, env: Mapping[str, str], timeout: float) -> Ran:
    """`bash -c text` with stdin from /dev/null and its output into a pipe."""
    t0 = time.monotonic()
    p = start(
        ["bash", "-c", text], cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        out, _ = p.communicate()
        return Ran(p.returncode, out.decode(errors="replace"), time.monotonic() - t0, True)
    return Ran(p.returncode, out.decode(errors="replace"), time.monotonic() - t0)


def run_on_pty(
    text: str, cwd: Path, env: Mapping[str, str], timeout: float, size: tuple[int, int] = (40, 120)
) -> Ran:
    """`bash -c text` with stdin, stdout and stderr on a pseudo-terminal of `size` (rows,
    columns), read until it exits."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    t0 = time.monotonic()
    try:
        p = start(
            ["bash", "-c", text], cwd=cwd, env={**env, "TERM": "xterm-256color"}, stdin=slave,
            stdout=slave, stderr=slave, start_new_session=True,
        )  # fmt: skip
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    timed_out = False
    try:
        while True:
            left = timeout - (time.monotonic() - t0)
            if left <= 0:
                timed_out = True
                _kill_group(p)
                break
            ready, _, _ = select.select([master], [], [], min(left, 1.0))
            if not ready:
                if p.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError as e:  # EIO: every writer has closed the terminal
                if e.errno != errno.EIO:
                    raise
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    code = p.wait()
    return Ran(code, b"".join(chunks).decode(errors="replace"), time.monotonic() - t0, timed_out)


def _kill_group(p: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the command's own process group (it was started in a session of its own),
    then SIGKILL after a grace period."""
    for sig, grace in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            return
        try:
            p.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def tail(text: str, lines: int = 60) -> str:
    """The last lines of an output, for an assertion message."""
    return "\n".join(text.splitlines()[-lines:])


def ports_named(commands: Sequence[DocCommand]) -> list[int]:
    """The loopback ports the commands' URLs name (`http://127.0.0.1:8000/v1`)."""
    found: list[int] = []
    for c in commands:
        for m in re.finditer(r"https?://(?:127\.0\.0\.1|localhost):(\d+)", c.text):
            if int(m.group(1)) not in found:
                found.append(int(m.group(1)))
    return found
