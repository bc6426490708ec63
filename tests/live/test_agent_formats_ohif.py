"""Agent mode end to end on the real OHIF viewer: a Length measurement from marker A to marker
B (select the tool, drag), answered by UI-TARS-1.5 (`drag(start_box, end_box)`) and Qwen2.5-VL
(`mouse_move` then `left_click_drag`, two tool calls read as one drag) in their own formats,
served by the OpenAI test server; OHIF's measurement service holds the measurement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _agent_scripts import Plan, Writer, oracle_plans, qwen25, script, ui_tars
from _runner_support import live_request
from test_ohif_env import require_ohif_stack

from medspot.live.loop.request import LiveOutcome, run_live
from medspot.live.loop.steplog import StepRecord
from medspot.live.loop.steplog import read_live_journal as read
from medspot.runfolder.layout import LIVE_JOURNAL
from medspot.testing.openai_server import OpenAITestServer

pytestmark = pytest.mark.live

ENV = "ohif"
TASK = "measure-ab-ct-doe-john"


@pytest.fixture(autouse=True)
def _stack() -> None:
    require_ohif_stack()


def _run(tmp: Path, seed_cache: Path, model: str, **kw: Any) -> LiveOutcome:
    from _runner_support import env_options

    req = live_request(
        env=ENV, model=model, out=tmp / f"run-{model}", task_ids=(TASK,), mode="agent",
        env_options=env_options(seed_cache), n_boot=100, **kw,
    )  # fmt: skip
    return run_live(req)


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory, seed_cache: Path) -> Plan:
    tmp = tmp_path_factory.mktemp("oracle")
    out = _run(tmp, seed_cache, "oracle")
    assert out.metrics["task_success_rate"] == 1.0
    p = oracle_plans(tmp / "run-oracle", [TASK])[TASK]
    assert [a["kind"] for a in p.actions] == ["click", "drag"]
    return p


CASES = [
    ("ui-tars-1.5-7b", ui_tars(), "ui-tars"),
    ("qwen2.5-vl-7b", qwen25, "qwen2.5-computer-use"),
]


@pytest.mark.parametrize(("model", "writer", "source"), CASES, ids=[c[0] for c in CASES])
def test_agent_format_measures_with_a_drag(
    tmp_path: Path, seed_cache: Path, plan: Plan, model: str, writer: Writer, source: str
) -> None:
    with OpenAITestServer(answer=script([plan], writer)) as srv:
        out = _run(
            tmp_path, seed_cache, model,
            options={"backend": "openai", "base_urls": [srv.base_url], "api_key": "test"},
        )  # fmt: skip
        assert srv.request_count == 2 == out.stats.calls
    assert out.metrics["task_success_rate"] == 1.0
    steps = [r for r in read(tmp_path / f"run-{model}" / LIVE_JOURNAL) if isinstance(r, StepRecord)]
    drags = [r for r in steps if r.executed and r.action and r.action["kind"] == "drag"]
    assert len(drags) == 1 and drags[0].source == source and drags[0].hit_intended
