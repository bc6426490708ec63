"""The container executor without an engine: its control channel (length-prefixed pickles
over a unix socket), the worker's side of it served in this process (greeting, refusals, a
runner that hangs up), the owner labels its sweep reads, and its options checked before
anything runs (exit 2, named): a missing engine, a missing or stale image."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from medspot._version import __version__
from medspot.cli import main
from medspot.errors import ConfigError
from medspot.live.core import processes
from medspot.live.core.contract import EnvironmentFault
from medspot.live.images.names import ImageLabels, image_ref, source_hash
from medspot.live.loop.executors import ContainerOptions, check_executor_options
from medspot.live.loop.executors.base import SlotConfig
from medspot.live.loop.executors.container import _owner_dead, _socket_base, owner_label
from medspot.live.loop.executors.container_worker import WorkerHello, _Worker
from medspot.live.loop.executors.control import picklable_error, receive, send

ENV = "orthanc-explorer"


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    yield a, b
    a.close()
    b.close()


def test_messages_cross_whole_and_a_closed_channel_is_told_apart(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    a, b = pair
    big = os.urandom(3 * 1024 * 1024)  # a screen is far smaller: more than one recv
    sender = threading.Thread(target=send, args=(a, ("step", (big, 1))))
    sender.start()
    assert receive(b) == ("step", (big, 1))
    sender.join(10)
    a.sendall(struct.pack("!Q", 10) + b"abc")  # a message cut short
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(ConnectionError, match="middle of a message"):
        receive(b)


def test_eof_between_messages_and_a_foreign_peer(pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    a.sendall(struct.pack("!Q", 1 << 40))
    with pytest.raises(ConnectionError, match="not a medspot peer"):
        receive(b)
    c, d = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    c.close()
    with pytest.raises(EOFError):
        receive(d)
    d.close()


class _Unpicklable(Exception):
    def __init__(self, a: int, b: int) -> None:
        super().__init__(f"{a} {b}")


def test_an_error_that_cannot_cross_becomes_an_environment_fault() -> None:
    kept = picklable_error(ConfigError("x"))
    assert isinstance(kept, ConfigError)
    crossed = picklable_error(_Unpicklable(1, 2))
    assert isinstance(crossed, EnvironmentFault) and "_Unpicklable: 1 2" in str(crossed)


def _serve(conn: socket.socket) -> tuple[threading.Thread, list[int]]:
    status: list[int] = []
    t = threading.Thread(target=lambda: status.append(_Worker(conn).serve()), daemon=True)
    t.start()
    return t, status


def test_the_worker_greets_refuses_and_ends_when_the_runner_hangs_up(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    runner, worker = pair
    thread, status = _serve(worker)
    send(runner, ("step", (None,)))  # before hello: no host yet
    ok, err = receive(runner)
    assert not ok and isinstance(err, RuntimeError) and "hello" in str(err)
    send(runner, ("hello", (SlotConfig(ENV), 0, "0.0.0", "sha256:other")))
    ok, err = receive(runner)
    assert not ok and isinstance(err, ConfigError) and "rebuild the image" in str(err)
    send(runner, ("hello", (SlotConfig(ENV), 0, __version__, source_hash())))
    ok, hello = receive(runner)
    assert ok and isinstance(hello, WorkerHello) and hello.version == __version__
    assert hello.source == source_hash() and hello.pid == os.getpid()
    send(runner, ("__init__", ()))  # only the host's methods
    ok, err = receive(runner)
    assert not ok and isinstance(err, ConfigError) and "no method '__init__'" in str(err)
    send(runner, ("echo", ({"x": 1},)))
    assert receive(runner) == (True, {"x": 1})
    runner.close()  # the runner is gone: the worker ends (closing its host)
    thread.join(10)
    assert not thread.is_alive() and status == [0]


def test_an_owner_is_dead_only_when_this_host_can_tell() -> None:
    assert not _owner_dead(owner_label())  # this process
    p = subprocess.Popen(["sleep", "30"])
    stamp = processes.stamp(p.pid)
    assert stamp is not None
    p.kill()
    p.wait()
    prefix = owner_label().rsplit("/", 2)[0]
    assert _owner_dead(f"{prefix}/{stamp.pid}/{stamp.start}")
    host, ns = prefix.split("/")
    assert not _owner_dead(f"another-{host}/{ns}/{stamp.pid}/{stamp.start}")  # another host
    assert not _owner_dead(f"{host}/1/{stamp.pid}/{stamp.start}")  # another pid namespace
    assert not _owner_dead("not a medspot label")


def test_container_options_are_checked_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigError, match="--engine needs --executor container"):
        check_executor_options("threads", container=ContainerOptions(engine="podman"))
    with pytest.raises(ConfigError, match="--container-memory 'lots'"):
        check_executor_options("container", container=ContainerOptions(memory="lots"))
    with pytest.raises(ConfigError, match="--container-cpus 0"):
        check_executor_options("container", container=ContainerOptions(cpus=0))
    check_executor_options("container", container=ContainerOptions(memory="512m", cpus=0.5))
    out = tmp_path / "run"
    base = ["live", "run", "--env", ENV, "--model", "oracle", "--out", str(out), "--no-progress"]
    assert main([*base, "--container-memory", "2g"]) == 2
    assert "--container-memory needs --executor container" in capsys.readouterr().err
    assert not out.exists()


def test_no_engine_is_exit_2_naming_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # neither podman nor docker here
    for cmd in (["live", "run", "--model", "oracle", "--no-progress"],
                ["live", "export", "--no-progress"], ["live", "audit", "--no-progress"],
                ["live", "serve", "--mcp"]):  # fmt: skip
        out = tmp_path / cmd[1]
        code = main([*cmd, "--env", ENV, "--executor", "container", "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 2, err
        assert "no container engine (podman, docker) answers here" in err
        assert "podman: not installed" in err and "apt-get install podman" in err
        assert not out.exists()  # refused before anything was written


def test_image_labels_read_back() -> None:
    labels = ImageLabels(ENV, "0.1.0", "sha256:ab", "sha256:cd", {"orthanc": "1.10"}, "b", False)
    assert ImageLabels.of(labels.to_labels()) == labels
    assert ImageLabels.of({"maintainer": "someone"}) is None
    assert image_ref(ENV, "1.2.3") == "localhost/medspot-orthanc-explorer:1.2.3"


def test_the_sockets_go_where_their_path_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unix socket's path is at most 107 bytes: a work root or a $TMPDIR too long for the
    slots' sockets gives way to the next (a server's $TMPDIR deep in a test's folder)."""
    short = Path("/tmp")
    deep = tmp_path / ("d" * 60)
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    assert _socket_base(short) == short
    assert _socket_base(deep) == short  # neither the work root nor $TMPDIR fits
    monkeypatch.setattr("tempfile.tempdir", "/var/tmp")
    assert _socket_base(deep) == Path("/var/tmp")
    assert _socket_base(None) == Path("/var/tmp")
