"""The Python examples of docs/browsergym.md run as written, each as a script of its own in
BrowserGym's environment, on the real Orthanc Explorer (the session's seeded studies as the
default cache's): the environment solved by `cheat()` after a `noop` that did not; a task file
registered under a namespace; AgentLab's generic agent with `OPENAI_BASE_URL` the project's
scripted server (AgentLab's token statistics count words: no network; `test_agentlab.py`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _bgym_support import bid_script, require_stack

from medspot.cache import cache_root
from medspot.live.envs.taskfiles import env_task_file
from medspot.testing.openai_server import OpenAITestServer

pytestmark = pytest.mark.live

DOC = Path(__file__).resolve().parents[2] / "docs" / "browsergym.md"
# runs an example with AgentLab's token statistics counting words (tiktoken would download)
AGENTLAB_RUNNER = (
    "import sys, runpy\n"
    "import agentlab.experiments.loop as loop\n"
    "loop.count_tokens = lambda text, model='': len(str(text).split())\n"
    "runpy.run_path(sys.argv[1], run_name='__main__')\n"
)


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


def test_the_examples_are_there() -> None:
    blocks = examples()
    assert len(blocks) == 3
    assert "gym.make(" in blocks[0] and ".cheat(" in blocks[0]
    assert "register_task_file(" in blocks[1] and "ExpArgs(" in blocks[2]


def _env(tmp_path: Path, seed_cache: Path) -> dict[str, str]:
    cache = tmp_path / "cache"  # the session's seeded studies as the default cache's
    cache.mkdir()
    (cache / "live").symlink_to(seed_cache)
    if (cache_root() / "ohif").is_dir():
        (cache / "ohif").symlink_to(cache_root() / "ohif")
    return dict(os.environ, MEDSPOT_CACHE=str(cache), LITELLM_LOCAL_MODEL_COST_MAP="True")


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> str:
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc.stdout


def test_the_examples_run_as_written(tmp_path: Path, seed_cache: Path) -> None:
    require_stack("orthanc-explorer")
    pytest.importorskip("agentlab", reason="AgentLab (make install-browsergym)")
    env = _env(tmp_path, seed_cache)
    first, task_file, agentlab = examples()
    (tmp_path / "first.py").write_text(first, encoding="utf-8")
    out = _run([sys.executable, "first.py"], env, tmp_path).splitlines()
    assert out == ["Delete the CT CHEST study of patient DOE^JOHN", "0.0 False", "1.0 True success"]

    tasks = [
        t.model_dump(mode="json", exclude_defaults=True) for t in env_task_file("ohif")[0].tasks
    ]
    (tmp_path / "my-tasks.json").write_text(
        json.dumps({"format_version": 1, "env": "ohif", "tasks": tasks[:2]}), encoding="utf-8"
    )
    (tmp_path / "second.py").write_text(task_file + "print(ids)\n", encoding="utf-8")
    out = _run([sys.executable, "second.py"], env, tmp_path).splitlines()
    assert out == [str([f"browsergym/mine.ohif.{t['id']}" for t in tasks[:2]])]

    (tmp_path / "third.py").write_text(agentlab, encoding="utf-8")
    with OpenAITestServer(answer=bid_script("MS0001")) as srv:
        env.update(OPENAI_BASE_URL=srv.base_url, OPENAI_API_KEY="test")
        printed = _run([sys.executable, "-c", AGENTLAB_RUNNER, "third.py"], env, tmp_path)
        assert srv.request_count == 2
    assert printed.splitlines()[-1] == "1.0"
