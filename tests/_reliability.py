"""Helpers of the reliability tests: the scripted model (benchmarks/scripted.py) served by the
OpenAI test server, `medspot eval` as a subprocess, and the results files of a run folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _children import start

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

from scripted import ScriptedAnswers, protocol_minimum  # noqa: E402

__all__ = [
    "REPO_ROOT",
    "ScriptedAnswers",
    "eval_args",
    "journal_lines",
    "protocol_minimum",
    "results_of",
    "start_eval",
    "wait_for_lines",
]

APPS = "Orthanc,Bluelight"  # 22 tasks, 52 steps: small and real


def eval_args(root: Path, out: Path, url: str, *extra: str, apps: str = APPS) -> list[str]:
    return [
        "eval",
        "--data",
        str(root),
        "--apps",
        apps,
        "--model",
        "openai:scripted",
        "--convention",
        "rel1000",
        "--base-url",
        url,
        "--out",
        str(out),
        "--no-progress",
        "--bootstrap",
        "100",
        *extra,
    ]


def start_eval(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """`python -m medspot <args>` in a subprocess, stdout and stderr captured."""
    full_env = {**os.environ, "OPENAI_API_KEY": "test-key", **(env or {})}
    return start(
        [sys.executable, "-m", "medspot", *args],
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO_ROOT,
    )


def journal_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def wait_for_lines(proc: subprocess.Popen[bytes], path: Path, k: int, timeout: float = 60) -> int:
    """Wait until the journal at `path` has at least `k` lines (or the process ended)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        n = journal_lines(path)
        if n >= k or proc.poll() is not None:
            return n
        time.sleep(0.002)
    raise AssertionError(f"the journal never reached {k} lines")


RESULT_FILES = ("task_results.json", "task_failures.json", "task_metrics.json")
OVERALL_FILES = (
    "overall_dataset_metrics.json",
    "overall_failure_statistics.json",
)


def results_of(out: Path) -> dict[str, Any]:
    """Every results file of a run folder (not run.json, not the journal), parsed."""
    info = json.loads((out / "run.json").read_text())
    got: dict[str, Any] = {}
    for app in info["dataset"]["apps"]:
        for name in (*RESULT_FILES, "failure_statistics.json"):
            got[f"{app}/{name}"] = json.loads((out / app / name).read_text())
    for name in OVERALL_FILES:
        got[name] = json.loads((out / name).read_text())
    return got
