"""The Python examples of docs/live/library.md ("Use it from Python", "Gymnasium") run as
written, each as a script of its own, on the real orthanc-explorer environment (the session's
seeded studies as the default cache), and leave no process and no temporary folder behind."""

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
DOC = REPO / "docs" / "live" / "library.md"

pytestmark = pytest.mark.live


def python_examples() -> list[str]:
    """The ```python blocks from "## Use it from Python" up to the next section after
    "## Gymnasium"."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Use it from Python")
    gym = text.index("## Gymnasium", start)
    end = text.index("\n## ", gym + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], re.S)


def test_the_examples_are_there() -> None:
    blocks = python_examples()
    assert len(blocks) == 4
    assert "live.Episode(" in blocks[0] and "live.run_live(" in blocks[1]
    assert "gymnasium.make(" in blocks[2] and "gymnasium.make_vec(" in blocks[3]


def test_every_python_block_of_the_live_pages_is_run() -> None:
    """No ```python block of docs/live.md and its pages drops out unseen: those of library.md
    run here, those of serving.md in test_serve_docs_examples.py (one a section)."""
    pages = [REPO / "docs" / "live.md", *sorted((REPO / "docs" / "live").rglob("*.md"))]
    blocks = {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8").count("```python\n")
              for p in pages}  # fmt: skip
    shown = {page: n for page, n in blocks.items() if n}
    assert shown == {"docs/live/library.md": len(python_examples()), "docs/live/serving.md": 2}


def test_the_python_examples_run_as_written(tmp_path: Path, seed_cache: Path) -> None:
    require_orthanc_stack()
    pytest.importorskip("gymnasium")
    if not Path("/usr/bin/chromium").exists():  # the examples use the default chromium
        pytest.skip("/usr/bin/chromium is missing")
    cache = tmp_path / "cache"  # the session's seeded studies as the default cache's
    cache.mkdir()
    (cache / "live").symlink_to(seed_cache)
    tmp = Path(tempfile.mkdtemp(prefix="msdoc", dir="/tmp"))  # short: chromium's socket path
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), MEDSPOT_CACHE=str(cache), TMPDIR=str(tmp))
    outputs = []
    try:
        for i, code in enumerate(python_examples(), 1):
            script = tmp_path / f"example_{i}.py"
            script.write_text(code, encoding="utf-8")
            proc = subprocess.run(
                [sys.executable, str(script)], env=env, capture_output=True, text=True,
                timeout=600, cwd=tmp_path,
            )  # fmt: skip
            assert proc.returncode == 0, f"example {i}:\n{proc.stderr[-3000:]}"
            outputs.append(proc.stdout.strip().splitlines())
            assert not processes_mentioning(str(tmp)), f"example {i} left a process"
            assert list(tmp.iterdir()) == [], f"example {i} left {list(tmp.iterdir())}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    episode, run, gym, vec = outputs
    assert episode[-1] == "success - success checks hold" and len(episode) >= 3
    assert run[-1] == "complete 1.0"
    assert gym[-1] == "success 1.0" and "(800, 1280, 3)" in gym[0]
    assert vec[-1].endswith("[False, True]")  # the second answered done() at once
