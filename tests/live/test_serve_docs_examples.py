"""The Python agents of docs/live/serving.md "MCP" and "OpenEnv" run as written (each a script of
its own, `medspot` on the PATH, the session's seeded studies as the default cache) on the real
orthanc-explorer environment, the run folders they leave go through the commands the sections
name (`medspot report`, `medspot leaderboard`), and nothing is left running."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _orthanc_support import require_orthanc_stack
from _runner_support import processes_mentioning

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "live" / "serving.md"

pytestmark = pytest.mark.live


def section_examples(heading: str) -> list[str]:
    """The ```python blocks of one `## heading` section of docs/live/serving.md."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def test_the_examples_are_there() -> None:
    (mcp,) = section_examples("MCP")
    (openenv,) = section_examples("OpenEnv")
    assert "stdio_client(" in mcp and "ClientSession(" in mcp
    assert "MedspotEnvClient(" in openenv and "--openenv" in openenv


@pytest.mark.parametrize(
    ("heading", "out", "last"),
    [("MCP", "results/mcp-example", "success - success checks hold"),
     ("OpenEnv", "results/openenv-example", "success 1.0")],
)  # fmt: skip
def test_the_agent_examples_run_as_written(
    heading: str, out: str, last: str, tmp_path: Path, seed_cache: Path
) -> None:
    require_orthanc_stack()
    pytest.importorskip("mcp" if heading == "MCP" else "openenv")
    if not Path("/usr/bin/chromium").exists():  # the examples use the default chromium
        pytest.skip("/usr/bin/chromium is missing")
    cache = tmp_path / "cache"  # the session's seeded studies as the default cache's
    cache.mkdir()
    (cache / "live").symlink_to(seed_cache)
    tmp = Path(tempfile.mkdtemp(prefix="msdoc", dir="/tmp"))  # short: chromium's socket path
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MEDSPOT_CACHE=str(cache), TMPDIR=str(tmp),
               PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])  # fmt: skip
    try:
        (code,) = section_examples(heading)
        script = tmp_path / "example.py"
        script.write_text(code, encoding="utf-8")
        proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                              text=True, timeout=600, cwd=tmp_path)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert proc.stdout.strip().splitlines()[-1] == last, proc.stdout
        for cmd in (["report", out, "--out", f"{out}-report"], ["leaderboard", out]):
            ran = subprocess.run(["medspot", *cmd], env=env, capture_output=True, text=True,
                                 timeout=300, cwd=tmp_path)  # fmt: skip
            assert ran.returncode == 0, ran.stderr
        assert "my-" in ran.stdout  # the agent's name is the run's model
        assert not processes_mentioning(str(tmp)), "the example left a process"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
