"""The static benchmark as an Inspect task (`inspect eval medspot/medspot`).

A sample is a MedSPOT task (id `<App>/<index>`). The solver walks its steps as `medspot eval`
does: sequentially, asking the next step only after the previous one hit
(`scoring.score.next_step` decides, so a task ends at its first miss under the protocol), or
every annotated step (`all_steps`). Each step is one call of the card through Inspect's model
(`model_call.InspectCardAdapter`), its request built as the runner builds it
(`runner.step_request`), its record the runner's (`runner.call_record`), kept in the sample's
store (`rows.RECORDS_KEY`). The scorer scores the task from those records alone
(`scoring.score.score_task`); the metric pools the scored tasks by medspot's formulas
(`rows.pooled_metrics`), so the log's metrics are `medspot eval`'s.

The task's metadata (`SETTINGS_KEY`) records what `medspot import-inspect` needs to write the
run folder: the protocol, prompt style, history, seed, all-steps mode, the dataset (root,
fingerprint, apps, limit) and the card as run.json describes an adapter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageAssistant, ChatMessageUser
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from medspot.adapters.card import PromptStyle
from medspot.adapters.factory import resolve_card
from medspot.adapters.options import AdapterOptions
from medspot.dataset.images import ImageStore
from medspot.dataset.loading import load_dataset
from medspot.dataset.records import Dataset, Step
from medspot.dataset.records import Task as MedspotTask
from medspot.errors import ConfigError, DataError
from medspot.integrations.inspect.model_call import InspectCardAdapter, ServerExtras
from medspot.integrations.inspect.rows import (
    RECORDS_KEY,
    SETTINGS_KEY,
    pooled_metrics,
    record_rows,
    records_of,
    score_answer,
    score_metadata,
    score_value,
)
from medspot.runfolder.journal import JournalRecord
from medspot.runfolder.runinfo import DatasetInfo
from medspot.runner import HISTORY_MODES, HistoryMode, call_record, step_request
from medspot.scoring.protocol import Protocol, get_protocol
from medspot.scoring.score import latest_predictions, next_step, score_task, steps_to_ask_all

__all__ = ["StaticSettings", "medspot_metrics", "medspot_scorer", "static_task", "walk_steps"]


def _apps(apps: str | Sequence[str] | None) -> list[str] | None:
    if apps is None:
        return None
    names = apps.split(",") if isinstance(apps, str) else [str(a) for a in apps]
    return [a.strip() for a in names if a.strip()] or None


class StaticSettings:
    """The task's arguments, checked before any sample runs."""

    def __init__(
        self,
        *,
        data: str,
        protocol: str,
        card: str,
        prompt: str | None,
        all_steps: bool,
        history: str,
        seed: int,
        tolerance: float | None,
        convention: str | None,
        prompt_template: str | None,
        server_extras: str,
    ) -> None:
        self.protocol: Protocol = get_protocol(protocol, tolerance_px=tolerance)
        style = prompt or self.protocol.prompt_style
        if style not in (PromptStyle.NATIVE, PromptStyle.UPSTREAM):
            raise ConfigError(f"prompt {style!r}: the static benchmark asks native or upstream")
        self.style = PromptStyle(style)
        if history not in HISTORY_MODES:
            raise ConfigError(f"history {history!r}: use one of {', '.join(HISTORY_MODES)}")
        self.history: HistoryMode = history  # type: ignore[assignment]
        if isinstance(all_steps, str):
            raise ConfigError(f"all_steps {all_steps!r}: use true or false")
        self.all_steps = bool(all_steps)
        self.seed = int(seed)
        self.data = data
        options = AdapterOptions(convention=convention, prompt_template=prompt_template)
        card_ = resolve_card(card, options)
        extras: ServerExtras = server_extras  # type: ignore[assignment]
        self.adapter = InspectCardAdapter(card_, self.style, server_extras=extras)

    def record(self, ds: Dataset, limit: int | None) -> dict[str, Any]:
        """The run settings as run.json names them (`RunInfo`'s fields)."""
        return {
            "protocol": self.protocol.name,
            "tolerance_px": (
                self.protocol.tolerance_px if self.protocol.tolerance_overridden else None
            ),
            "prompt_style": str(self.style),
            "history": self.history,
            "all_steps": self.all_steps,
            "seed": self.seed,
            "dataset": DatasetInfo.of(ds, limit).model_dump(),
            "adapter": self.adapter.describe(),
        }


def _sample(task: MedspotTask) -> Sample:
    evaluable = sum(1 for s in task.steps if s.annotated)
    lines = [f"Step {s.position}: {s.instruction}" for s in task.steps]
    text = "\n".join([task.overview, *lines]) if task.overview else "\n".join(lines)
    return Sample(
        id=task.uid,
        input=text,
        metadata={"task": task.uid, "app": task.app, "index": task.index, "steps": evaluable},
    )


def static_task(
    *,
    data: str,
    protocol: str = "medspot-v1",
    card: str,
    prompt: str | None = None,
    all_steps: bool = False,
    history: str = "none",
    seed: int = 0,
    tolerance: float | None = None,
    limit: int | None = None,
    apps: str | Sequence[str] | None = None,
    convention: str | None = None,
    prompt_template: str | None = None,
    server_extras: str = "auto",
) -> Task:
    """The Inspect task of the static benchmark (the arguments of `medspot eval`)."""
    settings = StaticSettings(
        data=data, protocol=protocol, card=card, prompt=prompt, all_steps=all_steps,
        history=history, seed=seed, tolerance=tolerance, convention=convention,
        prompt_template=prompt_template, server_extras=server_extras,
    )  # fmt: skip
    n = int(limit) if limit is not None else None
    ds = load_dataset(data, apps=_apps(apps), limit=n)
    return Task(
        dataset=MemoryDataset([_sample(t) for t in ds.tasks()], name="medspot"),
        solver=walk_steps(ds, settings),
        scorer=medspot_scorer(ds, settings.protocol, all_steps=settings.all_steps),
        metrics=[medspot_metrics(all_steps=settings.all_steps)],
        metadata={SETTINGS_KEY: settings.record(ds, n)},
        name="medspot",
    )


def _ask(
    task: MedspotTask, protocol: Protocol, preds: dict[str, JournalRecord], every: bool
) -> list[Step]:
    """The steps to ask now: every annotated one not answered, or the sequential next one."""
    if every:
        return [s for s in steps_to_ask_all(task) if s.uid not in preds]
    nxt = next_step(task, protocol, preds)
    return [nxt] if nxt is not None else []


@solver
def walk_steps(ds: Dataset, settings: StaticSettings) -> Solver:
    """Ask the card each step of the sample's task the protocol reaches."""
    images = ImageStore(ds.root)
    adapter = settings.adapter

    async def ask(task: MedspotTask, step: Step, preds: dict[str, JournalRecord]) -> JournalRecord:
        try:
            path, size = await asyncio.to_thread(images.check, step.image_path)
        except DataError as e:
            raise DataError(f"step {step.uid}: {e.message}", e.location) from None
        req = step_request(
            task, step, path, size, preds, history=settings.history, seed=settings.seed
        )
        pred = await adapter.predict(req)
        return call_record(req, pred, latency_s=float(pred.meta.get("latency_s", 0.0)), retries=0)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        task = ds.task(str(state.metadata["task"]))
        preds: dict[str, JournalRecord] = {}
        records: list[JournalRecord] = []
        while steps := _ask(task, settings.protocol, preds, settings.all_steps):
            for step in steps:
                rec = await ask(task, step, preds)
                records.append(rec)
                preds[step.uid] = rec
                state.store.set(RECORDS_KEY, record_rows(records))
                state.messages.append(
                    ChatMessageUser(content=f"Step {step.position}: {step.instruction}")
                )
                state.messages.append(ChatMessageAssistant(content=rec.raw_text or ""))
        return state

    return solve


@metric
def medspot_metrics(all_steps: bool = False) -> Metric:
    """medspot's metrics (TCA, S1A, SHR, CSA, ACP, WPS, nWPS; ISA and the gap in all-steps
    mode) pooled over the scored tasks, by `scoring.metrics.metrics_from_sums`."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        pairs = [
            (s.score.value, str((s.score.metadata or {}).get("status", "")))
            for s in scores
            if isinstance(s.score.value, dict)
        ]
        return pooled_metrics(pairs, all_steps=all_steps)

    return compute  # type: ignore[return-value]


@scorer(metrics=[medspot_metrics()])
def medspot_scorer(ds: Dataset, protocol: Protocol, *, all_steps: bool = False) -> Scorer:
    """medspot's score of a task from its journal records (`scoring.score.score_task`)."""

    async def score(state: TaskState, target: Target) -> Score:
        task = ds.task(str(state.metadata["task"]))
        ok, errored = latest_predictions(records_of(state.store.get(RECORDS_KEY, [])))
        ts = score_task(task, protocol, ok, errored, all_steps=all_steps)
        return Score(
            value=score_value(ts),  # type: ignore[arg-type]
            answer=score_answer(ts),
            metadata=score_metadata(ts),
        )

    return score
