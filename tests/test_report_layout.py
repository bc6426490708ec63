"""Report polish: the metrics come first on the summary page (run metadata below, folded),
both failure tables of a run use one column order, count axes have whole-number ticks, no
legend covers a bar, no separator dangles after a click's coordinates, and the progress of a
sequential run is counted in tasks, whose total never shrinks."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from _builders import step, write_app
from _report_runs import PLAN_A, PLAN_B, make_run, write_dataset
from medspot.adapters.base import Convention, Prediction, StepRequest
from medspot.dataset.images import ImageStore
from medspot.dataset.loading import load_dataset
from medspot.geometry import Point
from medspot.report import html as report_html
from medspot.report.build import build_report
from medspot.runfolder.journal import Journal
from medspot.runfolder.reader import load_run
from medspot.runner import ProgressEvent, RunOptions, run_model
from medspot.scoring.protocol import get_protocol


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("polish")
    root = write_dataset(d / "data")
    return {
        "root": root,
        "a": make_run(d / "a", root, PLAN_A, model="model-a"),
        "b": make_run(d / "b", root, PLAN_B, model="model-b"),
        "dir": d,
    }


def test_metrics_come_first_and_run_metadata_is_folded(runs: dict[str, Path]) -> None:
    out = runs["dir"] / "site1"
    build_report([runs["a"], runs["b"]], out, plots=False, n_boot=20)
    index = (out / "index.html").read_text()
    assert index.index("<h2>Metrics</h2>") < index.index("<h2>Runs</h2>")
    card = index[index.index('<div class="runcard">') :]
    assert card.index("<details><summary>run metadata") < card.index("<dt>dataset fingerprint")


def test_no_separator_dangles_after_the_click(runs: dict[str, Path]) -> None:
    out = runs["dir"] / "site2"
    build_report([runs["a"]], out, plots=False, n_boot=20)
    page = (out / "tasks-1.html").read_text()
    assert "click (" in page
    assert not re.search(r"(click \([^)]*\)|no click) · </span>", page)


def test_both_failure_tables_use_one_column_order(runs: dict[str, Path]) -> None:
    run = load_run(runs["a"])
    run = dataclasses.replace(
        run,
        app_failures={
            "Alpha": {"failure_type_histogram": {"near_miss": 1, "far_miss": 3}},
            "Beta": {"failure_type_histogram": {"far_miss": 1}},
        },
        overall_failures={"failure_by_difficulty": {"small": {"far_miss": 2, "near_miss": 1}}},
    )
    text = report_html._failures(run, 0)
    heads = re.findall(r"<thead><tr>(.*?)</tr></thead>", text)
    assert len(heads) == 2
    cols = [re.findall(r"<th>(.*?)</th>", h)[1:] for h in heads]
    assert cols[0] == cols[1] == ["far_miss", "near_miss", "total"]


def _figures(runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    pytest.importorskip("matplotlib")
    from medspot.report import plots

    seen: dict[str, Any] = {}
    real_save = plots._save

    def keep(plt: Any, fig: Any, out_dir: Path, stem: str) -> list[Path]:
        fig.canvas.draw()
        seen[stem] = {
            "yticks": [list(ax.get_yticks()) for ax in fig.axes],
            "ylabels": [ax.get_ylabel() for ax in fig.axes],
            "overlaps": _legend_overlaps(fig),
        }
        return list(real_save(plt, fig, out_dir, stem))

    monkeypatch.setattr(plots, "_save", keep)
    plots.write_plots([load_run(runs["a"]), load_run(runs["b"])], runs["dir"] / "plots")
    return seen


def _legend_overlaps(fig: Any) -> int:
    from matplotlib.patches import Rectangle

    renderer = fig.canvas.get_renderer()
    n = 0
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        box = leg.get_window_extent(renderer)
        for other in fig.axes:
            for p in other.patches:
                is_bar = isinstance(p, Rectangle) and p.get_height() > 0
                if is_bar and box.overlaps(p.get_window_extent(renderer)):
                    n += 1
    return n


def test_count_axes_have_whole_ticks_and_legends_hide_no_bar(
    runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _figures(runs, monkeypatch)
    fail = seen["failure_types"]
    for label, ticks in zip(fail["ylabels"], fail["yticks"], strict=True):
        if label == "failed tasks":
            assert all(float(t).is_integer() for t in ticks), ticks
    assert fail["overlaps"] == 0
    assert seen["per_app_tca"]["overlaps"] == 0


class _MissSecond:
    """Hits the first step of every task and misses the second: a sequential run asks fewer
    steps than the tasks hold."""

    name = "miss-second"
    convention = Convention.NORMALISED
    max_concurrency = 1

    async def predict(self, request: StepRequest) -> Prediction:
        p = Point(0.15, 0.15) if request.step_uid.endswith("/1") else Point(0.9, 0.9)
        return Prediction(raw_text=str(p), point=p)

    def describe(self) -> dict[str, str]:
        return {"name": self.name}

    async def aclose(self) -> None:
        return None


def test_progress_is_counted_in_tasks_with_a_total_that_never_shrinks(tmp_path: Path) -> None:
    box = (10.0, 10.0, 10.0, 10.0)  # centre (0.15, 0.15)
    tasks = [[step(f"Images/t{t}s{k}.png", "Go", box) for k in range(4)] for t in range(3)]
    write_app(tmp_path, "A", tasks)
    ds = load_dataset(tmp_path)
    events: list[ProgressEvent] = []
    opts = RunOptions(protocol=get_protocol("medspot-v1"), concurrency=1)
    with Journal(tmp_path / "out" / "p.jsonl", fsync=False) as j:
        asyncio.run(run_model(ds, _MissSecond(), j, ImageStore(ds.root), opts, [], events.append))
    assert len(events) == 6  # two calls per task
    assert {ev.units_total for ev in events} == {3} and events[0].unit == "task"
    done = [ev.units_done for ev in events]
    assert done == sorted(done) and done[-1] == 3
