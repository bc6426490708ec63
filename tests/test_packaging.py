"""Packaging and the try-it-without-a-key path: the wheel builds without a deprecation
warning (an SPDX license string), and `medspot serve-test` runs the OpenAI-compatible test
server as a command that `medspot eval` can be pointed at."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from _builders import step, write_app
from _children import start, stop

REPO = Path(__file__).resolve().parents[1]


def test_the_license_is_an_spdx_string() -> None:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert "setuptools>=77" in meta["build-system"]["requires"]  # the first to read it


@pytest.mark.slow
def test_the_wheel_builds_without_a_deprecation_warning(tmp_path: Path) -> None:
    pytest.importorskip("setuptools")
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, tree / name)
    shutil.copytree(REPO / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            ".",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "whl"),
            "-v",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    log = proc.stdout + proc.stderr
    assert "deprecated" not in log.lower(), [ln for ln in log.splitlines() if "deprecat" in ln]


def test_serve_test_is_a_command_eval_can_use(tmp_path: Path) -> None:
    root = tmp_path / "data"
    write_app(root, "A", [[step("Images/a.png", "Click", (45.0, 45.0, 10.0, 10.0))]])
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("OPENAI_API_KEY", None)
    srv = start(
        [sys.executable, "-m", "medspot", "serve-test"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert srv.stdout is not None
        first = srv.stdout.readline()
        url = first.split()[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), first
        out = tmp_path / "run"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "medspot",
                "eval",
                "--data",
                str(root),
                "--model",
                "openai:test",
                "--convention",
                "rel1000",
                "--base-url",
                url,
                "--out",
                str(out),
                "--no-progress",
                "--bootstrap",
                "10",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
        assert "1 new calls" in proc.stdout
    finally:
        stopped = stop(srv)  # Ctrl-C; killed after a bounded wait if it ignored it
        err = stopped.err
    assert not stopped.killed and srv.returncode == 0, err
    assert "1 request(s)" in err
