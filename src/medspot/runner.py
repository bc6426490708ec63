"""Running a model over a dataset: scheduling, concurrency, retries, the journal, resume.

Sequential scheduling asks step k+1 of a task only after step k hits (`scoring.next_step`
decides), so a run makes the fewest calls the protocol allows, while many tasks run at once.
Ready steps wait in a priority queue ordered by the length of their task's remaining chain, so
long tasks start first and the run ends close to the critical path. `all_steps` asks every
annotated step. Every call is journaled when it completes; a step already in the journal is
never asked again. A failed call is retried with exponential backoff (honouring Retry-After)
and, after the retries, journaled as an error and retried on the next run. A zoom-in adapter's
passes (`adapters.zoom`) are kept in the store the runner is given (`ZoomPassJournal`: each pass
journaled as it is answered, the passes answered before reused), around every step it asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from asyncio import FIRST_COMPLETED
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from medspot.adapters.base import Adapter, Prediction, StepRequest, requests_counted
from medspot.adapters.retry import (
    BACKOFF_BASE_S,
    BACKOFF_MAX_S,
    MAX_RETRIES,
    RETRY_AFTER_MAX_S,
    CallFailed,
    RetryPolicy,
    call_with_retries,
)
from medspot.adapters.zoom import PassStore, passes_kept
from medspot.dataset.images import ImageStore
from medspot.dataset.loading import ANNOTATION_SUFFIX, ANNOTATIONS_DIR
from medspot.dataset.records import Dataset, Step, Task
from medspot.errors import DataError, Location, MedspotError, TransientModelError
from medspot.progress import ProgressEvent
from medspot.runfolder.journal import Journal, JournalRecord, now_stamp, prompt_hash
from medspot.scoring.protocol import Protocol, get_protocol
from medspot.scoring.score import latest_predictions, next_step, steps_to_ask_all

__all__ = [
    "HISTORY_MODES",
    "HistoryMode",
    "ProgressEvent",
    "RunOptions",
    "RunStats",
    "call_record",
    "run_model",
    "step_request",
]

log = logging.getLogger(__name__)

HistoryMode = Literal["none", "text", "actions"]
HISTORY_MODES: tuple[str, ...] = get_args(HistoryMode)


def call_record(
    req: StepRequest,
    pred: Prediction | None,
    *,
    latency_s: float,
    retries: int,
    error: str | None = None,
) -> JournalRecord:
    """The journal record of one call (`pred` None: an error record)."""
    return JournalRecord.of_prediction(
        pred,
        latency_s=latency_s,
        retries=retries,
        step=req.step_uid,
        task=req.task_uid,
        image_path=req.image_rel,
        image_size=req.image_size,
        prompt_hash=prompt_hash(pred.prompt if pred and pred.prompt else req.instruction),
        extra_points=[(p.x, p.y) for p in pred.extra_points] if pred else [],
        error=error,
        time=now_stamp(),
    )


def step_request(
    task: Task,
    step: Step,
    image_path: Path,
    image_size: tuple[int, int],
    preds: Mapping[str, JournalRecord],
    *,
    history: HistoryMode = "none",
    seed: int = 0,
) -> StepRequest:
    """What a model is asked for `step` of `task` (its screenshot checked already: `image_path`
    and `image_size`); in a history mode, with the task's overview and its earlier steps (and,
    in "actions", where the answers in `preds` clicked)."""
    overview: str | None = None
    lines: list[str] = []
    if history != "none":
        overview = task.overview
        for s in task.steps:
            if s.position >= step.position:
                break
            line = f"Step {s.position}: {s.instruction}"
            rec = preds.get(s.uid)
            if history == "actions" and rec is not None and rec.point is not None:
                line += f" -> clicked at ({rec.point[0]:.3f}, {rec.point[1]:.3f})"
            lines.append(line)
    return StepRequest(
        step_uid=step.uid,
        task_uid=step.task_uid,
        image_rel=step.image_path,
        image_path=image_path,
        image_size=image_size,
        instruction=step.instruction,
        task_overview=overview,
        history=tuple(lines),
        seed=seed,
    )


@dataclass(frozen=True)
class RunOptions:
    """How the runner asks a model (an `EvalRequest` holds one: `EvalRequest.run`)."""

    # resolved once, where the options are made (the CLI: `get_protocol(--protocol, --tolerance)`)
    protocol: Protocol = field(default_factory=lambda: get_protocol("medspot-v1"))
    all_steps: bool = False
    concurrency: int = 16
    max_retries: int = MAX_RETRIES  # the model-call retries (`medspot.adapters.retry`)
    backoff_base: float = BACKOFF_BASE_S
    backoff_max: float = BACKOFF_MAX_S
    retry_after_max: float = RETRY_AFTER_MAX_S
    history: HistoryMode = "none"
    seed: int = 0
    max_cost: float | None = None

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(
            self.max_retries, self.backoff_base, self.backoff_max, self.retry_after_max
        )


@dataclass
class RunStats:
    calls: int = 0  # the steps asked (journal records written)
    requests: int = 0  # the model requests they cost (`JournalRecord.requests`)
    errors: int = 0
    retries: int = 0
    cost_usd: float = 0.0
    budget_reached: bool = False
    interrupted: bool = False
    previous_cost_usd: float = 0.0
    max_in_flight: int = 0
    errored_steps: list[str] = field(default_factory=list)


class _Scheduler:
    def __init__(
        self,
        dataset: Dataset,
        adapter: Adapter,
        journal: Journal,
        images: ImageStore,
        opts: RunOptions,
        existing: Iterable[JournalRecord],
        on_progress: Callable[[ProgressEvent], None] | None,
        passes: PassStore | None = None,
    ) -> None:
        self.dataset = dataset
        self.adapter = adapter
        self.journal = journal
        self.passes = passes
        self.images = images
        self.opts = opts
        self.on_progress = on_progress
        self.preds, _ = latest_predictions(existing)
        self.stats = RunStats()
        self.stats.previous_cost_usd = sum(r.cost_usd or 0.0 for r in self.preds.values())
        self.queue: asyncio.PriorityQueue[tuple[int, int, str]] = asyncio.PriorityQueue()
        self.seq = 0
        self.pending_tasks = 0
        self.units_total = 0
        self.total = 0
        self.in_flight = 0
        self.idle = asyncio.Event()
        self.done_event = asyncio.Event()
        self.stop = False
        self.fatal: DataError | None = None  # bad data found while asking: ends the run

    # -- what to ask -------------------------------------------------------------------------
    def _remaining(self, task: Task) -> int:
        return sum(1 for s in task.steps if s.annotated and s.uid not in self.preds)

    def _ready(self, task: Task) -> list[Step]:
        if self.opts.all_steps:
            return [s for s in steps_to_ask_all(task) if s.uid not in self.preds]
        nxt = next_step(task, self.opts.protocol, self.preds)
        return [nxt] if nxt is not None else []

    def _push(self, step: Step, remaining: int) -> None:
        self.seq += 1
        self.queue.put_nowait((-remaining, self.seq, step.uid))

    def seed_queue(self) -> None:
        for task in self.dataset.tasks():
            ready = self._ready(task)
            if not ready:
                continue
            remaining = self._remaining(task)
            self.total += len(ready) if self.opts.all_steps else remaining
            self.pending_tasks += 1 if not self.opts.all_steps else len(ready)
            for s in ready:
                self._push(s, remaining)
        self.units_total = self.pending_tasks

    # -- asking ------------------------------------------------------------------------------
    async def _request(self, step: Step) -> StepRequest:
        """The request for `step`. The screenshot is checked first (path inside the root,
        header, complete data; once per image, off the event loop when it means reading the
        file): a bad image raises `DataError`, which becomes a step error with no call made."""
        rel = step.image_path
        if self.images.known(rel):
            path, size = self.images.check(rel)
        else:
            path, size = await asyncio.to_thread(self.images.check, rel)
        task = self.dataset.task(step.task_uid)
        return step_request(
            task, step, path, size, self.preds, history=self.opts.history, seed=self.opts.seed
        )

    async def _call(self, req: StepRequest) -> JournalRecord:
        t0 = time.perf_counter()

        def counted(_n: int, _delay: float, _e: TransientModelError) -> None:
            self.stats.retries += 1

        with requests_counted() as sent, self._passes_kept():
            try:
                pred: Prediction
                pred, retries, latency = await call_with_retries(
                    functools.partial(self.adapter.predict, req),
                    self.opts.retry,
                    label=req.step_uid,
                    passthrough=(DataError,),  # bad data is not a failed call: no retry helps
                    on_retry=counted,
                )
            except CallFailed as e:  # an adapter bug must not kill the run or become a miss
                rec = self._error(req, t0, e.retries, str(e))
            else:
                rec = call_record(req, pred, latency_s=latency, retries=retries)
        # the requests its model received: every try, retry and re-ask a backend sent; an
        # adapter that sends none (a baseline, OCR) is asked once a try
        counts = getattr(self.adapter, "counts_requests", False)
        requests = sent() if counts else 1 + rec.retries
        self.stats.requests += requests
        return rec.model_copy(update={"requests": requests})

    def _passes_kept(self) -> contextlib.AbstractContextManager[None]:
        """The block in which a zoom-in adapter keeps its passes in `self.passes`."""
        return passes_kept(self.passes) if self.passes is not None else contextlib.nullcontext()

    async def _ask(self, step: Step) -> JournalRecord:
        t0 = time.perf_counter()
        try:
            req = await self._request(step)
        except DataError as e:  # a bad screenshot: a data error of the run, no call made
            raise _step_data_error(step, e, "image_path") from None
        except MedspotError as e:
            req = StepRequest(step.uid, step.task_uid, step.image_path, Path(), (0, 0), "")
            rec = self._error(req, t0, 0, str(e))  # no request was sent
            return rec.model_copy(update={"image_size": None, "prompt_hash": "", "requests": 0})
        try:
            return await self._call(req)
        except DataError as e:  # bad data the adapter found (an undecodable image, a replay
            raise _step_data_error(step, e, None) from None  # file without this step)

    def _error(self, req: StepRequest, t0: float, retries: int, msg: str) -> JournalRecord:
        return call_record(
            req, None, latency_s=time.perf_counter() - t0, retries=retries, error=msg
        )

    def _over_budget(self) -> bool:
        cap = self.opts.max_cost
        spent = self.stats.previous_cost_usd + self.stats.cost_usd
        return cap is not None and spent >= cap

    async def worker(self) -> None:
        while not self.stop:
            try:
                _prio, _, uid = await self.queue.get()
            except asyncio.CancelledError:
                return
            if self.stop:
                return
            if self._over_budget():
                self.stats.budget_reached = True
                self.stop = True
                self.done_event.set()
                return
            step = self.dataset.step(uid)
            task = self.dataset.task(step.task_uid)
            self.in_flight += 1
            self.idle.clear()
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.in_flight)
            try:
                rec = await self._ask(step)
            except DataError as e:  # stop asking; calls in flight finish and are journaled
                self.fatal = self.fatal or e
                self.stop = True
                self.done_event.set()
                return
            finally:
                self.in_flight -= 1
                if self.in_flight == 0:
                    self.idle.set()
            self.journal.append(rec)
            self.stats.calls += 1
            self.stats.cost_usd += rec.cost_usd or 0.0
            if rec.error is not None:
                self.stats.errors += 1
                self.stats.errored_steps.append(uid)
                log.warning("%s: call failed: %s", uid, rec.error)
                self._task_finished(task, failed=True)
            else:
                self.preds[uid] = rec
                if self.opts.all_steps:
                    self._task_finished(task, failed=False)
                else:
                    ready = self._ready(task)
                    if ready:
                        self._push(ready[0], self._remaining(task))
                    else:
                        self._task_finished(task, failed=False)
            if self.on_progress:
                self.on_progress(
                    ProgressEvent(
                        self.stats.calls,
                        self.total,
                        self.stats.errors,
                        self.stats.previous_cost_usd + self.stats.cost_usd,
                        units_done=self.units_total - self.pending_tasks,
                        units_total=self.units_total,
                        unit="step" if self.opts.all_steps else "task",
                    )
                )

    def _task_finished(self, task: Task, *, failed: bool) -> None:
        if not self.opts.all_steps:
            # steps of this task that will not be asked leave the estimate (an errored step
            # was asked, so it stays in it)
            self.total -= self._remaining(task) - (1 if failed else 0)
        self.pending_tasks -= 1
        if self.pending_tasks <= 0:
            self.done_event.set()


def _step_data_error(step: Step, e: DataError, field: str | None) -> DataError:
    """Bad data met while asking `step` (a screenshot that cannot be used, a replay file that
    lacks the step), located at the step: the run stops (exit 2) rather than recording a
    failed call that every resume would try again."""
    name = f"{ANNOTATIONS_DIR}/{step.app}{ANNOTATION_SUFFIX}"
    where = Location(name, step.task_index, step.position, field)
    hint = " (`medspot validate` checks every screenshot)" if field == "image_path" else ""
    return DataError(e.message + hint, where)


async def run_model(
    dataset: Dataset,
    adapter: Adapter,
    journal: Journal,
    images: ImageStore,
    opts: RunOptions,
    existing: Iterable[JournalRecord] = (),
    on_progress: Callable[[ProgressEvent], None] | None = None,
    passes: PassStore | None = None,
) -> RunStats:
    """Ask `adapter` every step the protocol needs that `existing` does not already answer; a
    zoom-in adapter's passes are kept in `passes` (`runfolder.journal.ZoomPassJournal`)."""
    sch = _Scheduler(dataset, adapter, journal, images, opts, existing, on_progress, passes)
    sch.seed_queue()
    if sch.pending_tasks == 0:
        return sch.stats
    n_workers = max(1, min(opts.concurrency, adapter.max_concurrency))
    workers = [asyncio.create_task(sch.worker()) for _ in range(n_workers)]
    done = asyncio.create_task(sch.done_event.wait())
    try:
        while True:
            finished, _ = await asyncio.wait({done, *workers}, return_when=FIRST_COMPLETED)
            for t in finished:
                if t is not done and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]  # e.g. the journal cannot be written
            if done in finished:
                break
        sch.stop = True
        if sch.in_flight:  # budget reached: let the calls already paid for finish
            await sch.idle.wait()
        if sch.fatal is not None:
            raise sch.fatal
    except asyncio.CancelledError:
        sch.stats.interrupted = True
        raise
    finally:
        sch.stop = True
        done.cancel()
        for w in workers:
            w.cancel()
        await asyncio.gather(done, *workers, return_exceptions=True)
    return sch.stats
