"""The processes an environment starts die with the run, even when the run is SIGKILLed.

Three nets, each for what the one before cannot reach:

1. **A parent-death signal on every child** (`popen`, `run`): the child is started through
   util-linux's `setpriv --pdeathsig KILL` (a `prctl(PR_SET_PDEATHSIG)` in the child where
   setpriv is missing), so the kernel SIGKILLs it when the thread that started it ends, the
   run's death included. `popen` returns once the child is past setpriv (the signal is set
   by then). The signal is not inherited: grandchildren die through what they
   depend on (X clients and the AT-SPI bus with Xvfb and the session D-Bus; chromium and its
   helpers with Playwright's driver, which ends when its pipe to the run closes).
2. **A marker in every child's environment** (`MEDSPOT_LIVE_DIR=<its folder>`), inherited by
   grandchildren (D-Bus activations, the JVM's helpers): what a folder's processes started can
   be found in `/proc/PID/environ` (`marked`).
3. **A record in the folder**: its owner (this process, `claim`) and every child's pid with its
   start time (`record`; a recycled pid is never killed). When an environment starts it
   `sweep`s the folders beside its own: a folder whose owner is dead has what is left of its
   processes killed (`stop_folder`), and is removed when the runner made it
   (`WORKDIR_PREFIX`; other folders keep their files, e.g. logs a user asked for).

The parent-death signal follows the *thread* that started a child: an environment must be
started and used from one long-lived thread (the runner's slot thread, a Gym caller's thread).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import logging
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.live.core.contract import EnvironmentFault

__all__ = [
    "MARKER_ENV",
    "OWNER_FILE",
    "RECORD_FILE",
    "WORKDIR_PREFIX",
    "ProcStamp",
    "child_env",
    "child_subreaper",
    "claim",
    "marked",
    "popen",
    "record",
    "run",
    "running",
    "set_child_subreaper",
    "stamp",
    "stop_folder",
    "sweep",
]

log = logging.getLogger(__name__)

MARKER_ENV = "MEDSPOT_LIVE_DIR"
OWNER_FILE = ".medspot-owner.json"
RECORD_FILE = ".medspot-processes.jsonl"
WORKDIR_PREFIX = "medspot-live-"  # the runner's private folders: removed when found stale
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37
_RECORD_DEPTH = 3  # records are looked for this deep below a folder (env/component/...)


@dataclass(frozen=True, slots=True)
class ProcStamp:
    """A process as the kernel knows it: pid and start time (clock ticks after boot)."""

    pid: int
    start: int


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def stamp(pid: int) -> ProcStamp | None:
    """The stamp of a running (not zombie) process; None when there is none."""
    f = _stat_fields(pid)
    if f is None or len(f) < 20 or f[0] in ("Z", "X"):
        return None
    return ProcStamp(pid, int(f[19]))


def running(s: ProcStamp) -> bool:
    """Whether that very process (not a later one with the same pid) still runs."""
    return stamp(s.pid) == s


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


# -- starting children --------------------------------------------------------------------


def _pdeathsig_prefix() -> list[str]:
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


def _set_pdeathsig() -> None:  # runs in the child between fork and exec (setpriv missing)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def child_subreaper() -> int:
    """This process's child-subreaper flag (Linux `prctl`; 0 where it cannot be read): a
    subreaper inherits its descendants' orphans and must reap them."""
    value = ctypes.c_int(0)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)
    except (OSError, AttributeError):
        return 0
    return value.value


def set_child_subreaper(value: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, value, 0, 0, 0)


def default_sigchld() -> None:
    """SIGCHLD back to its default disposition, from any thread. Ignored, the kernel reaps
    the children: every later `subprocess` sees exit status 0 and the children inherit the
    ignored signal (Xvfb then fails to start). `signal.signal` works in the main thread only;
    elsewhere (a Gymnasium environment's run opening Ray on its own loop) libc's `signal`
    sets the process's disposition, which Python's own record already says is the default."""
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        return
    except ValueError:  # not the main thread
        pass
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        libc.signal(int(signal.SIGCHLD), None)  # None: SIG_DFL, the null handler


def _dying_with_parent(argv: Sequence[str], kw: dict[str, Any]) -> list[str]:
    exe = argv[0]
    if os.sep not in exe and shutil.which(exe) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), exe)
    prefix = _pdeathsig_prefix()
    if not prefix:
        kw["preexec_fn"] = _set_pdeathsig
    return [*prefix, *argv]


def child_env(env: Mapping[str, str] | None, folder: Path) -> dict[str, str]:
    """`env` (default: this process's) with the marker naming `folder`."""
    out = dict(os.environ if env is None else env)
    out[MARKER_ENV] = str(Path(folder).resolve())
    return out


def popen(
    argv: Sequence[str], folder: Path, *, env: Mapping[str, str] | None = None, **kw: Any
) -> subprocess.Popen[bytes]:
    """Start a long-lived child that dies with this process, marked and recorded in `folder`."""
    full = _dying_with_parent(argv, kw)
    proc: subprocess.Popen[bytes] = subprocess.Popen(full, env=child_env(env, folder), **kw)
    if full[0] != argv[0]:
        _await_exec(proc, full[0])
    record(folder, proc.pid)
    return proc


def _await_exec(proc: subprocess.Popen[bytes], setpriv: str, seconds: float = 5.0) -> None:
    """Until the child is past setpriv (its `exe` is the program itself): setpriv sets the
    parent-death signal after Popen returns, and a parent killed in between would leave the
    child running. Bounded; a child that ends first is left to its caller."""
    wrapper = os.path.realpath(setpriv)
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            if os.readlink(f"/proc/{proc.pid}/exe") != wrapper:
                return
        except OSError:
            return
        time.sleep(0.001)


def run(
    argv: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    **kw: Any,
) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run` of a short-lived tool with a timeout and the parent-death signal."""
    full = _dying_with_parent(argv, kw)
    return subprocess.run(full, env=None if env is None else dict(env), timeout=timeout, **kw)


# -- the record of a folder ---------------------------------------------------------------


def record(folder: Path, pid: int) -> None:
    """Add a process (started here or by a library, e.g. chromium) to `folder`'s record."""
    s = stamp(pid)
    if s is None:
        return
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / RECORD_FILE).open("a", encoding="utf-8") as f:
        f.write(json.dumps({"pid": s.pid, "start": s.start}) + "\n")


def _records(folder: Path) -> Iterator[ProcStamp]:
    for depth in range(_RECORD_DEPTH):
        for path in folder.glob("/".join(["*"] * depth + [RECORD_FILE])):
            try:
                lines = path.read_text(encoding="utf-8").splitlines()
            except OSError:
                continue
            for line in lines:
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    d = json.loads(line)
                    yield ProcStamp(int(d["pid"]), int(d["start"]))


def marked(folder: Path) -> list[ProcStamp]:
    """Running processes whose environment carries the marker of `folder` or a folder in it."""
    want = str(Path(folder).resolve())
    key = MARKER_ENV.encode() + b"="
    out: list[ProcStamp] = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            environ = Path(f"/proc/{d}/environ").read_bytes()
        except OSError:
            continue
        for item in environ.split(b"\0"):
            if item.startswith(key):
                value = item[len(key) :].decode(errors="replace")
                if value == want or value.startswith(want + os.sep):
                    s = stamp(int(d))
                    if s is not None:
                        out.append(s)
                break
    return out


def _kill(s: ProcStamp) -> bool:
    if not running(s):
        return False
    f = _stat_fields(s.pid)
    with contextlib.suppress(OSError):
        if f is not None and int(f[2]) == s.pid:  # a group leader: its group goes too
            os.killpg(s.pid, signal.SIGKILL)
        os.kill(s.pid, signal.SIGKILL)
        return True
    return False


def stop_folder(folder: Path) -> int:
    """SIGKILL what still runs of `folder`'s processes (recorded ones, if still the same
    process, and marked ones); returns how many were killed."""
    folder = Path(folder)
    seen: set[ProcStamp] = set()
    killed = 0
    for s in [*_records(folder), *marked(folder)]:
        if s not in seen:
            seen.add(s)
            killed += _kill(s)
    return killed


# -- owners and stale folders -------------------------------------------------------------


def _owner(folder: Path) -> dict[str, Any] | None:
    try:
        d = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def _owner_alive(d: Mapping[str, Any]) -> bool | None:
    """True/False; None when it cannot be judged (another pid namespace, a broken file)."""
    try:
        ns, pid, start = int(d.get("ns", 0)), int(d["pid"]), int(d["start"])
    except (KeyError, TypeError, ValueError):
        return None
    if ns and ns != _pid_namespace():
        return None
    return running(ProcStamp(pid, start))


def claim(folder: Path) -> None:
    """Make this process the owner of `folder` (an environment's private folder). A folder a
    dead run owned has its processes stopped and its record cleared first; one that another
    running process owns is refused."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    me = stamp(os.getpid())
    assert me is not None
    old = _owner(folder)
    if old is not None and (int(old.get("pid", -1)), int(old.get("start", -1))) != (
        me.pid,
        me.start,
    ):
        alive = _owner_alive(old)
        if alive:
            raise EnvironmentFault(
                f"{folder} is the private folder of another running process ({old.get('pid')})"
            )
        if alive is False:
            stop_folder(folder)
            for depth in range(_RECORD_DEPTH):
                for path in folder.glob("/".join(["*"] * depth + [RECORD_FILE])):
                    path.unlink(missing_ok=True)
    tmp = folder / (OWNER_FILE + ".tmp")
    tmp.write_text(
        json.dumps({"pid": me.pid, "start": me.start, "ns": _pid_namespace()}), encoding="utf-8"
    )
    os.replace(tmp, folder / OWNER_FILE)


def sweep(root: Path, *, keep: Path | None = None) -> list[Path]:
    """Clean up after dead runs: every folder directly in `root` whose owner is dead has its
    processes stopped; the runner's folders (`WORKDIR_PREFIX`) are removed, others lose their
    marks. Returns the folders cleaned."""
    root = Path(root)
    keep_r = Path(keep).resolve() if keep is not None else None
    cleaned: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return cleaned
    for e in entries:
        try:
            if not e.is_dir(follow_symlinks=False) or not os.path.exists(
                os.path.join(e.path, OWNER_FILE)
            ):
                continue
        except OSError:
            continue
        folder = Path(e.path)
        if keep_r is not None and folder.resolve() == keep_r:
            continue
        owner = _owner(folder)
        if owner is None or _owner_alive(owner) is not False:
            continue
        killed = stop_folder(folder)
        if e.name.startswith(WORKDIR_PREFIX):
            shutil.rmtree(folder, ignore_errors=True)
        else:
            (folder / OWNER_FILE).unlink(missing_ok=True)
        log.info("removed what a dead run left in %s (%d processes stopped)", folder, killed)
        cleaned.append(folder)
    return cleaned
