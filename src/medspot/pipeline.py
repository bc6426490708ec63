"""The `eval` and `score` pipelines: run a model into a run folder, score a run folder.

eval:  load data -> runner (journal) -> score from the journal -> results files, run.json
score: journal -> score under a protocol -> results files (no model call)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot._gc import gc_paused
from medspot.adapters import registry
from medspot.adapters.base import Adapter, AdapterContext
from medspot.adapters.options import AdapterOptions, PromptStyleName
from medspot.adapters.zoom import ZoomAdapter, ZoomSpec
from medspot.atomic_write import atomic_write_json
from medspot.dataset.images import ImageStore
from medspot.dataset.records import Dataset
from medspot.errors import ConfigError
from medspot.interrupts import run_async, sigterm_stops
from medspot.limits import (
    MAX_BOOTSTRAP,
    MAX_CONCURRENCY,
    MAX_RETRIES_LIMIT,
    check_number,
    check_seed,
    check_whole,
)
from medspot.runfolder.guard import refuse_foreign_folder
from medspot.runfolder.journal import (
    Journal,
    JournalRecord,
    JournalWriteError,
    ZoomPassJournal,
    read_journal,
    read_passes,
)
from medspot.runfolder.layout import JOURNAL, RunFolder
from medspot.runfolder.lifecycle import RunLife, run_folder
from medspot.runfolder.runinfo import (
    FORMAT_VERSION,
    DatasetInfo,
    RunInfo,
    ZoomInfo,
    git_revision,
    now_iso,
    package_versions,
)
from medspot.runfolder.writer import write_results
from medspot.runner import ProgressEvent, RunOptions, RunStats, run_model
from medspot.scoring.protocol import Protocol, get_protocol
from medspot.scoring.score import RunScore, score_run

__all__ = ["EvalOutcome", "EvalRequest", "evaluate", "rescore"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalRequest:
    """A static evaluation: the dataset, the model, the run folder, how the runner asks the
    model (`run`: the protocol, all steps or the sequential walk, concurrency, retries,
    history, seed, budget; held as the runner takes it) and what the request adds.

        EvalRequest(dataset=ds, model="oracle", out=Path("runs/o"),
                    run=RunOptions(protocol=get_protocol("upstream-a"), concurrency=4))
    """

    dataset: Dataset
    model: str
    out: Path
    run: RunOptions = field(default_factory=RunOptions)
    prompt_style: PromptStyleName = "native"
    n_boot: int = 2000
    options: AdapterOptions | Mapping[str, Any] | None = None  # backend, base URLs, ...
    limit: int | None = None
    zoom: ZoomSpec | None = None  # --zoom K: K model calls per step, later ones on crops

    @property
    def protocol(self) -> Protocol:
        return self.run.protocol

    @property
    def protocol_name(self) -> str:
        return self.run.protocol.name

    @property
    def tolerance_px(self) -> float | None:
        """The tolerance override the run records (None: the protocol's own)."""
        p = self.run.protocol
        return p.tolerance_px if p.tolerance_overridden else None


@dataclass(frozen=True)
class EvalOutcome:
    info: RunInfo
    score: RunScore
    stats: RunStats


def _dataset_info(ds: Dataset, limit: int | None) -> DatasetInfo:
    return DatasetInfo.of(ds, limit)


def evaluate(
    req: EvalRequest, on_progress: Callable[[ProgressEvent], None] | None = None
) -> EvalOutcome:
    """Run (or resume) `req.model` on the dataset into `req.out`, then score and write results.
    What can be refused is refused before the run folder is made: the request's options, a
    folder that is not ours, then the model (its key, its options, its files) and whether it
    can be zoomed (`--zoom` on a model that does not read the screenshot)."""
    _check_request(req)
    out = req.out
    refuse_foreign_folder(out)
    images = ImageStore(req.dataset.root)
    options = AdapterOptions.from_mapping(req.options).with_defaults(
        model=req.model, prompt_style=req.prompt_style, concurrency=req.run.concurrency
    )
    ctx = AdapterContext(dataset=req.dataset, images=images, seed=req.run.seed, options=options)
    adapter = registry.create(req.model, ctx)
    if req.zoom is not None and req.zoom.multi_pass:
        adapter = ZoomAdapter(adapter, req.zoom)
    with run_folder(out) as folder:
        return _evaluate_locked(req, folder, adapter, images, on_progress)


def _check_request(req: EvalRequest) -> None:
    """The request's own numbers (the command line checks them too; a library caller may
    not), against `medspot.limits`."""
    run = req.run
    check_whole("--concurrency", run.concurrency, 1, MAX_CONCURRENCY)
    check_whole("--max-retries", run.max_retries, 0, MAX_RETRIES_LIMIT)
    check_whole("--bootstrap", req.n_boot, 0, MAX_BOOTSTRAP)
    check_seed(run.seed)
    if run.max_cost is not None:
        check_number("--max-cost", run.max_cost)
    if req.limit is not None:
        check_whole("--limit", req.limit, 1)


def _evaluate_locked(
    req: EvalRequest,
    folder: RunFolder,
    adapter: Adapter,
    images: ImageStore,
    on_progress: Callable[[ProgressEvent], None] | None,
) -> EvalOutcome:
    zoom: ZoomInfo | None = None
    if isinstance(adapter, ZoomAdapter):  # made before the folder
        zoom = ZoomInfo(passes=adapter.spec.passes, crop=adapter.spec.crop)

    info = RunInfo(
        model=req.model,
        adapter=adapter.describe(),
        zoom=zoom,
        protocol=req.protocol_name,
        tolerance_px=req.tolerance_px,
        prompt_style=req.prompt_style,
        history=req.run.history,
        all_steps=req.run.all_steps,
        seed=req.run.seed,
        dataset=_dataset_info(req.dataset, req.limit),
        versions=package_versions(),
        git_revision=git_revision(),
        started=now_iso(),
    )
    life = RunLife(folder, info)
    life.start()
    with life.failure_recorded():  # from here on an interruption is recorded
        existing = list(read_journal(folder.journal))
        return _run_and_score(req, life, adapter, images, existing, on_progress)


def _run_and_score(
    req: EvalRequest,
    life: RunLife,
    adapter: Adapter,
    images: ImageStore,
    existing: list[JournalRecord],
    on_progress: Callable[[ProgressEvent], None] | None,
) -> EvalOutcome:
    folder, info = life.folder, life.info
    journal_path = folder.journal
    opts = req.run
    stats = RunStats()
    interrupted: KeyboardInterrupt | None = None
    try:
        with Journal(journal_path) as journal, ZoomPassJournal(folder.zoom_passes) as passes:
            try:
                run = run_model(
                    req.dataset, adapter, journal, images, opts, existing, on_progress, passes
                )
                stats = _run_async(run, adapter)
            except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (medspot.interrupts)
                interrupted = e
    except JournalWriteError as e:
        kept = sum(1 for _ in read_journal(journal_path))
        raise JournalWriteError(
            f"{e}. The {kept} answers journaled before it are kept; make room (or choose "
            "another --out) and run the same command again to resume."
        ) from None
    with gc_paused():
        records = list(read_journal(journal_path))
        score = score_run(
            req.dataset,
            records,
            req.run.protocol,
            all_steps=req.run.all_steps,
            n_boot=req.n_boot,
            seed=req.run.seed,
        )
        write_results(folder.path, score, dataset=req.dataset)
    info.calls = sum(r.request_count for r in records)  # what the model's server received
    info.errors = sum(1 for r in records if r.error is not None)
    info.retries = sum(r.retries for r in records)
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    info.cost_usd = round(sum(costs), 6) if costs else None
    if info.zoom is not None:  # every pass is a model call; the journal has one per step
        info.zoom.model_calls = len(read_passes(folder.zoom_passes))
    life.finish(
        complete=score.complete, budget_reached=stats.budget_reached, interrupted=interrupted
    )
    return EvalOutcome(info=info, score=score, stats=stats)


def _run_async(coro: Any, adapter: Any) -> RunStats:
    async def main() -> RunStats:
        try:
            result: RunStats = await coro
            return result
        finally:
            await adapter.aclose()

    # SIGTERM behaves like Ctrl-C: the journal is already on disk, results are written.
    with sigterm_stops():
        return run_async(main)


def rescore(
    run_dir: Path,
    dataset: Dataset,
    *,
    protocol_name: str | None = None,
    tolerance_px: float | None = None,
    out: Path | None = None,
    n_boot: int = 2000,
) -> tuple[RunInfo, RunScore]:
    """Score `run_dir`'s journal (under another protocol if asked) into `out` (default:
    the run folder itself). No model call."""
    RunInfo.load(RunFolder(run_dir).run_json)  # not a run folder: said before anything is made
    with run_folder(out or run_dir):
        return _rescore_locked(
            run_dir, dataset, protocol_name, tolerance_px, out=out, n_boot=n_boot
        )


def _rescore_locked(
    run_dir: Path,
    dataset: Dataset,
    protocol_name: str | None,
    tolerance_px: float | None,
    *,
    out: Path | None,
    n_boot: int,
) -> tuple[RunInfo, RunScore]:
    source = RunFolder(run_dir)
    info = RunInfo.load(source.run_json)
    journal_path = source.journal
    if not journal_path.exists():
        raise ConfigError(f"{run_dir} has no {JOURNAL}")
    name = protocol_name or info.protocol
    tol = (
        tolerance_px
        if tolerance_px is not None
        else (info.tolerance_px if protocol_name is None else None)
    )
    protocol = get_protocol(name, tolerance_px=tol)
    with gc_paused():
        records = list(read_journal(journal_path))
        score = score_run(
            dataset, records, protocol, all_steps=info.all_steps, n_boot=n_boot, seed=info.seed
        )
        target = out or run_dir
        target.mkdir(parents=True, exist_ok=True)
        write_results(target, score, dataset=dataset)
    new_info = info.model_copy(
        deep=True,
        update={
            "format_version": FORMAT_VERSION,
            "protocol": name,
            "tolerance_px": tol,
            "status": "complete" if score.complete else "incomplete",
            "rescored_from": str(run_dir),
        },
    )
    dest = RunFolder(target)
    atomic_write_json(dest.run_json, new_info.model_dump())
    if target != run_dir:
        dest.journal.write_bytes(journal_path.read_bytes())
        if source.zoom_passes.exists():  # a zoom-in run's passes go with its journal
            dest.zoom_passes.write_bytes(source.zoom_passes.read_bytes())
    return new_info, score
