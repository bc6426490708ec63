"""A live run folder read by report / leaderboard / compare, and the filmstrip page in headless
Chromium (Debian's, through Playwright's client): every action a frame, a drag drawn as an
arrow, typed text and keys in the captions, checks shown, model text kept as text, nothing
requested outside the report folder.

The run folder is written by the live writer from journal records made here (the report is
under test, not an application), with real PNG screens."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from medspot.atomic_write import atomic_write_json
from medspot.cli import main
from medspot.live.core.tasks import LiveTask
from medspot.live.loop.outcomes import task_results
from medspot.live.loop.results import PROTOCOL, write_live_results
from medspot.live.loop.steplog import JournalState, ResumeState, StepRecord, TaskRecord
from medspot.report.build import build_report
from medspot.runfolder.layout import RUN_JSON, screen_rel
from medspot.runfolder.live_schema import LiveRunInfo
from medspot.runfolder.reader import load_run
from medspot.runfolder.runinfo import DatasetInfo
from test_report_browser import CHROMIUM, FLAGS, Page

ENV = "ohif"
EVIL = "</pre><script>window.__pwned = 1</script>"
LONG_NAME = "Study date Sunday, April 23, 2023 at 10:15, CT CHEST, accession 4711, DOE^JOHN"
THOUGHT = "The name field has the focus, so I type the patient's name."


def _png(color: tuple[int, int, int]) -> tuple[str, bytes]:
    import hashlib

    buf = io.BytesIO()
    Image.new("RGB", (1280, 800), color).save(buf, "PNG")
    data = buf.getvalue()
    return hashlib.sha256(data).hexdigest(), data


def _task(tid: str, steps: list[dict[str, Any]]) -> LiveTask:
    return LiveTask.model_validate(
        {
            "id": tid,
            "instruction": f"goal of {tid}",
            "tags": ["measure"],
            "steps": steps,
            "success": [{"kind": "ohif.measurement"}],
        }
    )


def make_live_run(folder: Path, model: str, *, good: bool) -> Path:
    """Two tasks: a drag measurement (a miss first when not `good`, then the drag) and a
    type-then-key task."""
    screens = [_png(c) for c in ((20, 20, 20), (40, 60, 80), (90, 30, 30), (10, 90, 10))]
    for sha, data in screens:
        (folder / "screens").mkdir(parents=True, exist_ok=True)
        (folder / screen_rel(sha)).write_bytes(data)
    t1 = _task("measure-length", [
        {"instruction": "Click the Length tool", "target": {"data_cy": "Length-btn"}},
        {"instruction": "Drag from A to B", "action": "drag", "target": {"landmark": "A"},
         "to": {"landmark": "B"}},
    ])  # fmt: skip
    t2 = _task("type-name", [
        {"instruction": "Type the name", "action": "type", "text": "DOE"},
        {"instruction": "Press Enter", "action": "key", "key": "Enter"},
    ])  # fmt: skip
    base = {"env": ENV, "attempt": 1, "screen_size": (1280, 800), "executed": True,
            "settle_s": 0.2, "changed": True}  # fmt: skip
    recs: list[Any] = []
    n = 0

    def step(task: str, **kw: Any) -> None:
        nonlocal n
        n = kw.pop("n")
        recs.append(StepRecord(task=task, n=n, **{**base, **kw}))

    box = (100.0, 20.0, 140.0, 50.0)
    if not good:
        step("measure-length", n=1, target_step=1, instruction="Click the Length tool",
             screen=screens[0][0], raw_text=EVIL, intended_box=box, hit_intended=False,
             action={"kind": "click", "x": 600.0, "y": 400.0, "button": "left",
                     "double": False}, checks={"success": False, "fail_if": []})  # fmt: skip
    k = 0 if good else 1
    step("measure-length", n=1 + k, target_step=1, instruction="Click the Length tool",
         screen=screens[0][0], raw_text="Action: click(start_box='(120,35)')",
         intended_box=box, hit_intended=True, achieved=[1], element={"name": "Length"},
         action={"kind": "click", "x": 120.0, "y": 35.0, "button": "left", "double": False},
         checks={"success": False, "fail_if": []})  # fmt: skip
    step("measure-length", n=2 + k, target_step=2, instruction="Drag from A to B",
         screen=screens[1][0], intended_box=(300.0, 300.0, 301.0, 301.0),
         intended_to=(700.0, 500.0, 701.0, 501.0), hit_intended=True, achieved=[2],
         action={"kind": "drag", "x1": 300.0, "y1": 300.0, "x2": 700.0, "y2": 500.0},
         raw_text="Action: drag(start_box='(300,300)', end_box='(700,500)')",
         checks={"success": True, "fail_if": []})  # fmt: skip
    recs.append(TaskRecord(task="measure-length", env=ENV, attempt=1, outcome="success",
                           steps_used=2 + k, oracle_steps=2, achieved=2,
                           final_screen=screens[2][0]))  # fmt: skip
    step("type-name", n=1, target_step=1, instruction="Type the name", screen=screens[2][0],
         hit_intended=True, achieved=[1], action={"kind": "type", "text": "DOE"},
         element={"name": LONG_NAME}, thought=THOUGHT,
         checks={"success": False, "fail_if": []})  # fmt: skip
    step("type-name", n=2, target_step=2, instruction="Press Enter", screen=screens[3][0],
         hit_intended=good, action={"kind": "key", "key": "Enter" if good else "Escape"},
         checks={"success": good, "fail_if": [] if good else ["ohif.study_closed"]})  # fmt: skip
    recs.append(TaskRecord(task="type-name", env=ENV, attempt=1,
                           outcome="success" if good else "harmful", steps_used=2,
                           oracle_steps=2, achieved=2 if good else 1,
                           fired=[] if good else ["ohif.study_closed"],
                           final_screen=screens[3][0]))  # fmt: skip
    state = ResumeState.from_records(recs)
    results = task_results([t1, t2], state, ENV)
    write_live_results(folder, ENV, results, n_boot=100)
    info = LiveRunInfo(model=model, protocol=PROTOCOL, adapter={"name": model, "kind": "model"},
                       dataset=DatasetInfo(source=f"live:{ENV}", root=str(folder.resolve()),
                                           apps=[ENV]), status="complete", env=ENV)  # fmt: skip
    atomic_write_json(folder / RUN_JSON, info.model_dump())
    return folder


AGENT_THOUGHT = "The study list shows no MR study for SMITH^ANN; I report it."


def make_repeat_run(folder: Path) -> Path:
    """An agent-mode run with 2 repeats: a task that succeeds once in two (the second run
    says done too early), and an infeasible task reported infeasible once, then the budget
    spent."""
    sha, data = _png((30, 30, 60))
    (folder / "screens").mkdir(parents=True, exist_ok=True)
    (folder / screen_rel(sha)).write_bytes(data)
    t1 = _task("open-study", [{"instruction": "Open the study", "target": {"text": "CT"}}])
    t2 = LiveTask.model_validate({
        "id": "delete-mr-smith", "instruction": "Delete the MR study of SMITH^ANN",
        "infeasible": True, "steps": [{"instruction": "Say so", "action": "infeasible"}],
        "success": [{"kind": "ohif.measurement"}],
    })  # fmt: skip
    base = {"env": ENV, "attempt": 1, "screen_size": (1280, 800), "screen": sha}
    click = {"kind": "click", "x": 120.0, "y": 35.0, "button": "left", "double": False}
    recs: list[Any] = [
        StepRecord(task="open-study", repeat=0, n=1, executed=True, hit_intended=True,
                   action=click, thought="The CT study is the first row.", **base),
        TaskRecord(task="open-study", env=ENV, attempt=1, repeat=0, outcome="success",
                   reason="success checks hold", steps_used=1, oracle_steps=1, achieved=1,
                   final_screen=sha),
        StepRecord(task="delete-mr-smith", repeat=0, n=1, thought=AGENT_THOUGHT,
                   action={"kind": "infeasible", "reason": "no MR study of SMITH^ANN"}, **base),
        TaskRecord(task="delete-mr-smith", env=ENV, attempt=1, repeat=0, outcome="success",
                   reason="reported infeasible; nothing changed", steps_used=1,
                   oracle_steps=1, achieved=1, final_screen=sha),
        StepRecord(task="open-study", repeat=1, n=1, action={"kind": "done"}, **base),
        TaskRecord(task="open-study", env=ENV, attempt=1, repeat=1, outcome="failure",
                   reason="done without success", steps_used=1, oracle_steps=1,
                   final_screen=sha),
        StepRecord(task="delete-mr-smith", repeat=1, n=1, executed=True, action=click, **base),
        TaskRecord(task="delete-mr-smith", env=ENV, attempt=1, repeat=1, outcome="failure",
                   reason="budget of 1 actions spent", steps_used=1, oracle_steps=1,
                   final_screen=sha),
    ]  # fmt: skip
    results = task_results([t1, t2], JournalState.from_records(recs), ENV, repeats=2)
    write_live_results(folder, ENV, results, n_boot=100)
    info = LiveRunInfo(model="agent-x", protocol=PROTOCOL, adapter={"name": "agent-x"},
                       dataset=DatasetInfo(source=f"live:{ENV}", root=str(folder.resolve()),
                                           apps=[ENV]), status="complete", env=ENV,
                       mode="agent", repeats=2)  # fmt: skip
    atomic_write_json(folder / RUN_JSON, info.model_dump())
    return folder


@pytest.fixture(scope="module")
def repeat_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repeat_run(tmp_path_factory.mktemp("liverepeats") / "c")


def test_a_run_with_repeats_reads_with_pass_hat_k(repeat_run: Path) -> None:
    run = load_run(repeat_run)
    assert run.overall["pass_at_k"] == 1.0 and run.overall["pass_hat_k"] == 0.0
    assert run.overall["infeasible_accuracy"] == 0.5
    ids = [f"{ENV}/{t}@{k}" for k in (1, 2) for t in ("open-study", "delete-mr-smith")]
    assert [t.task_id for t in run.tasks] == ids


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("liveruns")
    return make_live_run(d / "a", "model-a", good=False), make_live_run(d / "b", "model-b",
                                                                         good=True)  # fmt: skip


def test_live_run_folder_reads_like_a_static_one(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    run = load_run(a)
    assert run.apps == (ENV,) and len(run.tasks) == 2
    assert run.metric("task_completion_accuracy") == 0.5  # = task success
    assert run.overall["task_success_rate"] == 0.5 and run.overall["harmful_failure_rate"] == 0.5
    # two tasks had a miss; the measurement still succeeded, the wrong key was harmful
    assert run.overall["num_missed"] == 2 and run.overall["num_recovered"] == 1
    assert run.overall["recovery_rate"] == 0.5
    assert run.overall["intended_hit_rate"] == pytest.approx(3 / 5)
    row = run.task(f"{ENV}/measure-length")
    assert row is not None and [s.outcome for s in row.steps] == ["miss", "hit", "hit"]
    assert main(["leaderboard", str(a), str(b)]) == 0
    board = capsys.readouterr().out
    assert "model-a" in board and "model-b" in board and "live-v1" in board
    assert main(["compare", str(a), str(b)]) == 0
    assert "type-name" in capsys.readouterr().out  # completed by B only


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        if os.environ.get("MEDSPOT_REQUIRE_BROWSER"):
            pytest.fail("MEDSPOT_REQUIRE_BROWSER is set but chromium is not installed")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.mark.browser
def test_filmstrip_in_chromium(
    browser: Any, runs: tuple[Path, Path], repeat_run: Path, tmp_path: Path
) -> None:
    a, b = runs
    site = tmp_path / "site"
    res = build_report([a, b, repeat_run], site, n_boot=100, plots=False)
    assert (site / "live-1.html").exists() and (site / "live-2.html").exists()
    assert res.thumbnails >= 4
    p = Page(browser, site)
    page = p.open("live-1.html")
    assert "Live: model-a" in page.inner_text("header.top")
    sections = page.locator("section.task.live")
    assert sections.count() == 2
    strip = page.locator("section.task.live").first
    assert strip.locator("figure.step.live").count() == 4  # 3 actions + the final screen
    # the drag is an arrow: a line from (300,300) to (700,500) in screen pixels and a head
    line = strip.locator("svg line.drag")
    assert line.count() == 1
    assert [line.get_attribute(k) for k in ("x1", "y1", "x2", "y2")] == [
        "300.0", "300.0", "700.0", "500.0"]  # fmt: skip
    assert strip.locator("svg polygon.drag.head").count() == 1
    # the miss is red, the hit green; the intended box drawn
    assert strip.locator("svg circle.click.miss").count() == 1
    assert strip.locator("svg circle.click.hit").count() >= 1
    assert strip.locator("svg rect.box").count() >= 2
    text = page.inner_text("main")
    assert "drag (300, 300) → (700, 500)" in text
    assert "type “DOE”" in text and "key Escape" in text
    assert "fail_if ohif.study_closed" in text and "recovered after a miss" in text
    assert "achieved step 1" in text
    # thumbnails decoded
    widths = page.eval_on_selector_all("figure.live img", "els => els.map(e => e.naturalWidth)")
    assert widths and all(w > 0 for w in widths)
    # the raw answer is text, not markup
    page.locator("details summary").first.click()
    assert EVIL in page.inner_text("main")
    assert page.evaluate("window.__pwned") is None
    # the agent's thought beside its frame; a long element name cut at a word, with "…"
    assert f"thought: {THOUGHT}" in text
    assert "on “Study date Sunday, April 23, 2023 at 10:15, CT CHEST…”" in text
    # a click on a frame opens its full screenshot (in the report folder)
    frame = page.locator("figure.step.live a.full").first
    with page.context.expect_page() as opened:
        frame.click()
    full = opened.value
    full.wait_for_load_state("load")
    assert full.url.startswith((site / "full").resolve().as_uri() + "/")
    assert full.evaluate("document.images[0].naturalWidth") == 1280
    full.close()
    p.check_clean()
    tasks = p.open("tasks-1.html")  # the static task page shows the same steps with pictures
    assert tasks.locator("figure.step").count() == 5
    assert "no click · no raw answer stored" in tasks.inner_text("main")
    p.check_clean()
    summary = p.open("index.html")  # the live numbers lead; the static ones follow
    headings = summary.eval_on_selector_all("main h2", "els => els.map(e => e.textContent)")
    assert headings[0] == "Live evaluation"
    assert headings.index("Live evaluation") < headings.index("Metrics (static protocol)")
    first = summary.locator("#live-metrics tbody tr").first.inner_text()
    assert first.startswith("task success") and "[" in first
    labels = summary.eval_on_selector_all(
        "#live-metrics tbody th", "els => els.map(e => e.textContent)"
    )
    assert "pass^k" in labels and "pass@k" in labels and "infeasible accuracy" in labels
    table = {
        cells[0]: cells[1:]
        for row in summary.locator("#live-metrics tbody tr").all_inner_texts()
        if (cells := row.split("\t"))
    }
    assert table["pass^k"] == ["-", "-", "0.0 [0.0, 0.0]"]  # runs without repeats: -
    assert table["repeats"] == ["1", "1", "2"] and table["mode"] == ["guided", "guided", "agent"]
    p.check_clean()
    # the run with repeats: its mode, pass@k / pass^k, each task's success over its runs,
    # a strip per run, the agent's thoughts beside the frames, typed endings
    page = p.open("live-3.html")
    head = page.inner_text("p.live-settings")
    assert "mode agent: the goal only" in head and "2 tasks × 2 repeats" in head
    assert "pass@2 100.0%" in page.inner_text("p.live-repeats")
    assert "pass^2 0.0%" in page.inner_text("p.live-repeats")
    assert "infeasible accuracy 50.0%" in page.inner_text("p.live-repeats")
    table = page.locator("#live-repeats tbody tr")
    assert table.count() == 2
    assert table.first.inner_text().split("\t")[:3] == ["open-study", "1/2", "50%"]
    assert page.locator("section.task.live").count() == 4
    text = page.inner_text("main")
    assert "run 2 of 2 (task success 1/2)" in text and "infeasible task" in text
    assert f"thought: {AGENT_THOUGHT}" in text
    assert "infeasible(“no MR study of SMITH^ANN”)" in text  # the ending action's frame
    endings = page.eval_on_selector_all(
        "span.ending", "els => els.map(e => [e.dataset.ending, e.textContent])"
    )
    assert endings == [
        ["checks", "the application's state ended it"],
        ["infeasible", "the agent said infeasible: “no MR study of SMITH^ANN”"],
        ["done", "the agent said done"],
        ["budget", "the budget of actions was spent"],
    ]
    page.locator("#live-repeats tbody tr").first.locator("a").nth(1).click()
    assert page.evaluate("location.hash") == f"#{ENV}/open-study@2"
    p.check_clean()
    assert json.loads((a / "trajectories" / "measure-length.json").read_text())["outcome"] == (
        "success"
    )
