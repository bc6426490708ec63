"""InVesalius's TMPDIR (`instance.private_tmp`): in its workdir where InVesalius's
`multiprocessing` sockets fit in a Unix socket path, elsewhere (and removed on close) where the
workdir is too deep. The shared `invesalius_env` fixture runs in a too-deep workdir, so its
tests that build a surface show that surfaces are built there."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from medspot.live.core import processes
from medspot.live.envs.invesalius.instance import MAX_TMPDIR, private_tmp


def test_a_short_workdir_keeps_its_tmp_inside() -> None:
    short = Path(tempfile.mkdtemp(prefix="m", dir="/tmp"))
    try:
        tmp, own = private_tmp(short / "w")
        assert (tmp, own) == (short / "w" / "tmp", False) and tmp.is_dir()
    finally:
        shutil.rmtree(short)


def test_a_deep_workdir_gets_a_tmp_where_a_socket_path_fits(tmp_path: Path) -> None:
    deep = tmp_path / ("x" * 100) / "w"
    tmp, own = private_tmp(deep)
    try:
        assert own and not tmp.is_relative_to(deep) and tmp.is_dir()
        assert len(os.fsencode(tmp)) <= MAX_TMPDIR
        assert tmp.name.startswith(processes.WORKDIR_PREFIX)  # a later run's sweep removes it
        assert (tmp / processes.OWNER_FILE).exists()
        # what InVesalius's multiprocessing manager would bind there: 107 bytes at most
        assert len(os.fsencode(tmp / "pymp-abcdefgh" / "listener-abcdefgh")) <= 107
    finally:
        shutil.rmtree(tmp)


def test_a_deep_system_tempdir_falls_back_to_slash_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / ("t" * 90)))
    tmp, own = private_tmp(tmp_path / ("x" * 100))
    try:
        assert own and tmp.parent == Path("/tmp")
    finally:
        shutil.rmtree(tmp)
