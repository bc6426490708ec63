"""The runner: sequential scheduling, concurrency, retries, errors, resume, budget."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from _builders import step, write_app
from medspot.adapters.base import Convention, Prediction, StepRequest
from medspot.dataset.images import ImageStore
from medspot.dataset.loading import load_dataset
from medspot.dataset.records import Dataset
from medspot.errors import ModelCallError, TransientModelError
from medspot.geometry import Point
from medspot.runfolder.journal import Journal, read_journal
from medspot.runner import RunOptions, run_model
from medspot.scoring.protocol import get_protocol

HIT_BOX = (10.0, 10.0, 20.0, 20.0)  # percent: centre (0.2, 0.2)


@dataclass
class Scripted:
    """A test double for the runner: answers per step from a script; counts calls."""

    dataset: Dataset
    misses: set[str] = field(default_factory=set)
    transient_failures: dict[str, int] = field(default_factory=dict)
    permanent_failures: set[str] = field(default_factory=set)
    crash: set[str] = field(default_factory=set)
    delay: float = 0.0
    cost: float | None = None
    name: str = "scripted"
    convention: Convention = Convention.NORMALISED
    max_concurrency: int = 64
    calls: list[str] = field(default_factory=list)
    in_flight: int = 0
    peak: int = 0

    async def predict(self, request: StepRequest) -> Prediction:
        self.calls.append(request.step_uid)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            left = self.transient_failures.get(request.step_uid, 0)
            if left:
                self.transient_failures[request.step_uid] = left - 1
                raise TransientModelError("503 from server", retry_after=0.0)
            if request.step_uid in self.permanent_failures:
                raise ModelCallError("401 unauthorised")
            if request.step_uid in self.crash:
                raise RuntimeError("adapter bug")
            if request.step_uid in self.misses:
                p = Point(0.9, 0.9)
            else:
                p = self.dataset.step(request.step_uid).boxes[0].center
            return Prediction(raw_text=str(p), point=p, cost_usd=self.cost)
        finally:
            self.in_flight -= 1

    def describe(self) -> dict[str, Any]:
        return {"name": self.name}

    async def aclose(self) -> None:
        return None


def _dataset(tmp_path: Path, n_tasks: int = 3, n_steps: int = 3) -> Dataset:
    tasks = [
        [step(f"Images/A/t{t}s{k}.png", f"Click thing {k}", HIT_BOX) for k in range(n_steps)]
        for t in range(n_tasks)
    ]
    write_app(tmp_path, "A", tasks)
    return load_dataset(tmp_path)


def _run(ds: Dataset, adapter: Scripted, tmp_path: Path, **kw: Any) -> Any:
    opts = RunOptions(protocol=get_protocol("medspot-v1"), backoff_base=0.0, **kw)
    path = tmp_path / "out" / "predictions.jsonl"
    existing = list(read_journal(path))
    with Journal(path, fsync=False) as j:
        return asyncio.run(run_model(ds, adapter, j, ImageStore(ds.root), opts, existing))


def test_a_miss_ends_the_task_and_later_steps_are_not_asked(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=2, n_steps=3)
    ad = Scripted(ds, misses={"A/0/2"})
    stats = _run(ds, ad, tmp_path)
    # task 0: steps 1 (hit), 2 (miss) -> 2 calls; task 1: all 3 hit -> 3 calls
    assert sorted(ad.calls) == ["A/0/1", "A/0/2", "A/1/1", "A/1/2", "A/1/3"]
    assert stats.calls == 5 and stats.errors == 0


def test_step_k_plus_1_is_asked_only_after_step_k(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=4, n_steps=3)
    ad = Scripted(ds, delay=0.01)
    _run(ds, ad, tmp_path, concurrency=8)
    for t in range(4):
        order = [c for c in ad.calls if c.startswith(f"A/{t}/")]
        assert order == [f"A/{t}/1", f"A/{t}/2", f"A/{t}/3"]


def test_concurrency_reaches_n_and_never_more(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=20, n_steps=1)
    ad = Scripted(ds, delay=0.05)
    stats = _run(ds, ad, tmp_path, concurrency=8)
    assert ad.peak == 8
    assert stats.max_in_flight == 8


def test_all_steps_asks_every_step_even_after_a_miss(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=2, n_steps=3)
    ad = Scripted(ds, misses={"A/0/1"})
    _run(ds, ad, tmp_path, all_steps=True)
    assert len(ad.calls) == 6


def test_transient_failures_are_retried_and_counted(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=1, n_steps=2)
    ad = Scripted(ds, transient_failures={"A/0/1": 2})
    stats = _run(ds, ad, tmp_path, max_retries=3)
    recs = list(read_journal(tmp_path / "out" / "predictions.jsonl"))
    assert [r.step for r in recs] == ["A/0/1", "A/0/2"]
    assert recs[0].retries == 2 and recs[0].error is None
    assert stats.retries == 2


def test_exhausted_retries_are_an_error_not_a_miss_and_resume_completes(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=2, n_steps=2)
    ad = Scripted(ds, transient_failures={"A/0/1": 10})
    stats = _run(ds, ad, tmp_path, max_retries=2)
    recs = list(read_journal(tmp_path / "out" / "predictions.jsonl"))
    err = [r for r in recs if r.step == "A/0/1"]
    assert len(err) == 1 and err[0].error is not None and err[0].point is None
    assert stats.errors == 1
    assert "A/0/2" not in ad.calls  # the task waits for its errored step
    # second run: the server recovered; only the errored step and its successor are asked
    ad2 = Scripted(ds)
    stats2 = _run(ds, ad2, tmp_path)
    assert ad2.calls == ["A/0/1", "A/0/2"]
    assert stats2.errors == 0


def test_non_transient_error_and_adapter_crash_are_errors(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=3, n_steps=1)
    ad = Scripted(ds, permanent_failures={"A/0/1"}, crash={"A/1/1"})
    stats = _run(ds, ad, tmp_path)
    recs = {r.step: r for r in read_journal(tmp_path / "out" / "predictions.jsonl")}
    assert recs["A/0/1"].error and "401" in recs["A/0/1"].error
    assert recs["A/1/1"].error and "RuntimeError" in recs["A/1/1"].error
    assert recs["A/2/1"].error is None
    assert ad.calls.count("A/0/1") == 1  # not retried: not transient
    assert stats.errors == 2


def test_resume_asks_nothing_already_answered(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=3, n_steps=2)
    _run(ds, Scripted(ds), tmp_path)
    again = Scripted(ds)
    stats = _run(ds, again, tmp_path)
    assert again.calls == [] and stats.calls == 0


def test_max_cost_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=5, n_steps=1)
    ad = Scripted(ds, cost=1.0)
    stats = _run(ds, ad, tmp_path, concurrency=1, max_cost=2.5)
    # spent before each dispatch: 0, 1, 2 (< 2.5: go), 3 (stop)
    assert stats.budget_reached and stats.calls == 3
    ad2 = Scripted(ds, cost=1.0)
    stats2 = _run(ds, ad2, tmp_path, concurrency=1, max_cost=10.0)
    assert stats2.calls == 2 and not stats2.budget_reached
    assert len(set(ad.calls) | set(ad2.calls)) == 5


def test_history_text_gives_overview_and_earlier_instructions(tmp_path: Path) -> None:
    ds = _dataset(tmp_path, n_tasks=1, n_steps=3)
    seen: list[StepRequest] = []

    class Recording(Scripted):
        async def predict(self, request: StepRequest) -> Prediction:
            seen.append(request)
            return await super().predict(request)

    _run(ds, Recording(ds), tmp_path, history="actions")
    assert seen[0].history == () and seen[0].task_overview == "A task 0"
    assert seen[2].history[0].startswith("Step 1: Click thing 0 -> clicked at (0.200, 0.200)")
    assert seen[2].history[1].startswith("Step 2: Click thing 1")


@pytest.mark.parametrize("n", [1, 4])
def test_random_baseline_is_order_independent(tmp_path: Path, n: int) -> None:
    from medspot.adapters.baselines import RandomAdapter

    a, b = RandomAdapter(seed=3), RandomAdapter(seed=3)
    uids = [f"X/{i}/1" for i in range(n)]
    assert [a.point_for(u) for u in uids] == [b.point_for(u) for u in reversed(uids)][::-1]
    assert RandomAdapter(seed=4).point_for("X/0/1") != a.point_for("X/0/1")
