"""Agent mode end to end on the real orthanc-explorer (a real Orthanc, real chromium): each
agent model, served by the OpenAI test server through the real openai client, answers in its
own format what the oracle did (a lookup by name: click the field, type, look up, open the
result) and completes the task; its answers are read by its own format's reader. Several
actions in one answer (UI-TARS's type + click, CogAgent's TYPE that clicks its box) run one per
turn without a new request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _agent_scripts import (
    Plan,
    Script,
    Writer,
    aguvis,
    cogagent,
    gui_owl,
    mai_ui,
    oracle_plans,
    qwen25,
    script,
    ui_tars,
)
from _orthanc_support import require_orthanc_stack
from _runner_support import ENV, env_options, live_request

from medspot.live.agents.turn import QUEUED
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.request import LiveOutcome, LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import StepRecord
from medspot.live.loop.steplog import read_live_journal as read
from medspot.runfolder.layout import LIVE_JOURNAL
from medspot.testing.openai_server import OpenAITestServer

pytestmark = pytest.mark.live

TASK = "lookup-doe-joan"  # click 'Patient Name', type DOE^JOAN, click 'Do lookup', open result


@pytest.fixture(autouse=True)
def _stack() -> None:
    require_orthanc_stack()


def _run(tmp: Path, seed_cache: Path, model: str, **kw: Any) -> LiveOutcome:
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
    assert [a["kind"] for a in p.actions] == ["click", "type", "click", "click"]
    return p


CASES = [
    # model, its writer, oracle actions per answer, the source its answers are read as
    ("ui-tars-1.5-7b", ui_tars(), [1, 2, 1], "ui-tars"),  # type + click in one answer
    ("qwen2.5-vl-7b", qwen25, [1, 1, 1, 1], "qwen2.5-computer-use"),
    ("aguvis-7b-720p", aguvis, [1, 1, 1, 1], "aguvis"),
    ("cogagent-9b", cogagent, [2, 1, 1], "cogagent"),  # TYPE(box, text): click, then type
    ("mai-ui", mai_ui, [1, 1, 1, 1], "mai-ui"),
    ("gui-owl-1.5", gui_owl, [1, 1, 1, 1], "gui-owl-computer-use"),
]


@pytest.mark.parametrize(("model", "writer", "groups", "source"), CASES, ids=[c[0] for c in CASES])
def test_agent_format_completes_a_typing_task(
    tmp_path: Path,
    seed_cache: Path,
    plan: Plan,
    model: str,
    writer: Writer,
    groups: list[int],
    source: str,
) -> None:
    answers: Script = script([plan], writer, groups)
    with OpenAITestServer(answer=answers) as srv:
        out = _run(
            tmp_path, seed_cache, model,
            options={"backend": "openai", "base_urls": [srv.base_url], "api_key": "test"},
        )  # fmt: skip
        n_requests = srv.request_count
    assert out.info.prompt_style == "agent" and getattr(out.info, "mode", None) == "agent"
    assert out.metrics["task_success_rate"] == 1.0
    assert n_requests == len(groups) == out.stats.calls == out.info.calls
    steps = [r for r in read(tmp_path / f"run-{model}" / LIVE_JOURNAL) if isinstance(r, StepRecord)]
    executed = [r for r in steps if r.executed]
    assert [r.action["kind"] for r in executed if r.action] == ["click", "type", "click", "click"]
    typed = next(r for r in executed if r.action and r.action["kind"] == "type")
    assert typed.action == {"kind": "type", "text": "DOE^JOAN"}
    queued = [r for r in executed if QUEUED in r.flags]
    assert len(queued) == len(plan.actions) - len(groups)
    assert all(r.source == f"{source}:queued" and r.raw_text is None for r in queued)
    fresh = [r for r in executed if QUEUED not in r.flags]
    assert all(r.source == source and r.raw_text for r in fresh)
    # the model was told the goal and its own history, never the oracle's step instructions
    for req in answers.seen:
        assert plan.goal in req.text
        assert "Click 'Do lookup'" not in req.text + " ".join(req.assistant)


def test_planner_and_grounder_complete_the_task(
    tmp_path: Path, seed_cache: Path, plan: Plan
) -> None:
    """`--planner gpt-4o-mini --grounder uground-v1-7b`: a scripted planner names the elements
    in words (and types), a scripted UGround points at them in its own rel1000 convention, from
    its own prompt; two test servers."""
    w, h = plan.screen
    clicks = [a for a in plan.actions if a["kind"] == "click"]
    names = [
        "the Patient Name field of the lookup form",
        "the 'Do lookup' button under the form",
        "the result 'DOE^JOAN - CT CHEST'",
    ]
    where = {n: (c["x"] / w * 1000, c["y"] / h * 1000) for n, c in zip(names, clicks, strict=True)}
    plans = iter([
        f'Thought: open the name field.\nAction: click(element="{names[0]}")',
        f'Thought: type the name and look it up.\nAction: type("DOE^JOAN")\n'
        f'click(element="{names[1]}")',
        f'Thought: open the study.\nAction: click(element="{names[2]}")',
    ])  # fmt: skip
    planner_seen, grounder_seen = [], []

    def planner(req: Any) -> str:
        planner_seen.append(req)
        return next(plans)

    def grounder(req: Any) -> str:
        grounder_seen.append(req)
        x, y = where[req.text.split("Description: ", 1)[1].split("\n", 1)[0]]
        return f"({x:.0f}, {y:.0f})"

    with OpenAITestServer(answer=planner) as p, OpenAITestServer(answer=grounder) as g:
        req = LiveRequest(
            spec=EnvSpec(ENV, task_ids=(TASK,), env_options=env_options(seed_cache)),
            model="gpt-4o-mini+uground-v1-7b",
            out=tmp_path / "run-pair",
            n_boot=100,
            planner="gpt-4o-mini",
            grounder="uground-v1-7b",
            options={"backend": "openai", "base_urls": [p.base_url], "api_key": "test"},
            grounder_options={"base_urls": [g.base_url]},
            loop=LiveOptions(mode="agent"),
        )
        out = run_live(req)
    assert out.metrics["task_success_rate"] == 1.0
    assert len(planner_seen) == 3 and len(grounder_seen) == 3
    assert out.info.prompt_style == "planner+native"
    assert out.info.adapter["kind"] == "planner+grounder"
    steps = [r for r in read(tmp_path / "run-pair" / LIVE_JOURNAL) if isinstance(r, StepRecord)]
    executed = [r for r in steps if r.executed]
    assert [r.action["kind"] for r in executed if r.action] == ["click", "type", "click", "click"]
    calls = [c for r in executed for c in r.model_calls or []]
    assert [c.role for c in calls] == [
        "planner",
        "grounder",
        "planner",
        "grounder",
        "planner",
        "grounder",
    ]
    assert [c.element for c in calls if c.role == "grounder"] == names
    assert all(c.raw_text and c.raw_text.startswith("(") for c in calls if c.role == "grounder")
    assert [c.raw_text for c in calls if c.role == "planner"] == [
        r.raw_text for r in executed if r.raw_text
    ]
    assert all(r.hit_intended for r in executed)
    # the planner's three answers are journaled; the click planned with the typing has none
    planned = [r for r in executed if r.raw_text]
    assert len(planned) == 3 and all("Action:" in (r.raw_text or "") for r in planned)
    later = executed[2]
    assert later.raw_text is None and "planned_earlier" in later.flags
    assert [c.role for c in later.model_calls or []] == ["grounder"]
