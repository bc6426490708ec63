"""`medspot import-inspect LOG --out RUN_DIR`: a log of `inspect eval medspot/medspot` as a
medspot run folder (`report`, `leaderboard`, `compare` and `score` take it).

The log's samples hold the journal records of their calls (each written by `runner.call_record`,
as `medspot eval` journals them), and its task metadata the run settings; the run folder is
that journal (`predictions.jsonl`) scored by medspot's own pipeline (`score_run`,
`write_results`) against the dataset, run.json from the settings. A sample Inspect ended with
an error (a model call that failed after Inspect's retries) becomes an error record of the step
it was on, as `eval` journals a failed call: its task is left out of the metrics and the run
is incomplete. Epoch 1 of a multi-epoch log is imported. The log's own metrics are compared with
the rescoring; a difference is a note in run.json (`imported.notes`) and on stderr.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot._gc import gc_paused
from medspot.adapters.backends.openai import sanitize_url
from medspot.dataset.records import Dataset
from medspot.errors import ConfigError
from medspot.integrations.inspect.logfile import InspectSample, InspectStaticLog
from medspot.runfolder.journal import Journal, JournalRecord
from medspot.runfolder.lifecycle import RunLife, run_folder
from medspot.runfolder.runinfo import DatasetInfo, RunInfo, now_iso, package_versions
from medspot.runfolder.writer import write_results
from medspot.scoring.protocol import Protocol, get_protocol
from medspot.scoring.score import (
    RunScore,
    latest_predictions,
    next_step,
    score_run,
    steps_to_ask_all,
)

__all__ = ["ImportedRun", "import_inspect", "log_dataset_info", "sample_records"]

TOLERANCE = 1e-9  # how far the log's metrics may lie from the rescoring without a note


@dataclass(frozen=True)
class ImportedRun:
    info: RunInfo
    score: RunScore
    notes: tuple[str, ...]


def log_dataset_info(log: InspectStaticLog) -> DatasetInfo:
    """The dataset the log's run was made on, as its task recorded it."""
    return DatasetInfo.model_validate(log.settings.get("dataset") or {})


def _failed_step(
    ds: Dataset, sample: InspectSample, protocol: Protocol, all_steps: bool
) -> str | None:
    """The step a sample that ended with an error was on: the first step its records leave
    unanswered (sequential: the next one the walk asks)."""
    if not ds.has_step(f"{sample.id}/1"):
        return None
    task = ds.task(sample.id)
    ok, _ = latest_predictions(sample.records)
    if all_steps:
        left = [s for s in steps_to_ask_all(task) if s.uid not in ok]
        return left[0].uid if left else None
    nxt = next_step(task, protocol, ok)
    return nxt.uid if nxt is not None else None


def sample_records(
    ds: Dataset, samples: Iterable[InspectSample], protocol: Protocol, *, all_steps: bool
) -> list[JournalRecord]:
    """The journal of the log: every sample's records (epoch 1), and for a sample that ended
    with an error, an error record of the step it was on."""
    out: list[JournalRecord] = []
    for sample in samples:
        if sample.epoch != 1:
            continue
        out.extend(sample.records)
        if sample.error is None:
            continue
        uid = _failed_step(ds, sample, protocol, all_steps)
        if uid is None:
            continue
        step = ds.step(uid)
        why = sample.error.splitlines()[0][:500] if sample.error.strip() else "an error"
        out.append(
            JournalRecord(
                step=uid,
                task=step.task_uid,
                image_path=step.image_path,
                error=f"Inspect ended the sample: {why}",
                time=now_iso(),
            )
        )
    return out


def _metric_notes(log: Mapping[str, float], ours: Mapping[str, float | None]) -> list[str]:
    notes = []
    for key, value in log.items():
        mine = ours.get(key)
        if key in ours and (mine is None or not math.isclose(mine, value, abs_tol=TOLERANCE)):
            notes.append(f"the log's {key} is {value!r}, medspot's rescoring gives {mine!r}")
    return notes


def _run_info(log: InspectStaticLog, model: str | None, ds: Dataset) -> RunInfo:
    s = log.settings
    dataset = log_dataset_info(log)
    adapter: dict[str, Any] = dict(s.get("adapter") or {})
    base_url = sanitize_url(log.model_base_url) if log.model_base_url else None
    adapter.update(inspect_model=log.model, model_base_url=base_url)
    versions = package_versions()
    versions.update({k: str(v) for k, v in log.packages.items()})
    return RunInfo(
        model=model or log.model,
        adapter=adapter,
        protocol=str(s.get("protocol") or "medspot-v1"),
        tolerance_px=s.get("tolerance_px"),
        prompt_style=str(s.get("prompt_style") or "native"),
        history=str(s.get("history") or "none"),
        all_steps=bool(s.get("all_steps")),
        seed=int(s.get("seed") or 0),
        dataset=DatasetInfo.of(ds, dataset.limit),
        versions=versions,
        started=log.created,
    )


def import_inspect(
    log: InspectStaticLog,
    out: Path,
    dataset: Dataset,
    *,
    model: str | None = None,
    n_boot: int = 2000,
) -> ImportedRun:
    """Write the run folder `out` (new or empty) from `log`, scored against `dataset` (the
    one the log's run was made on: the same annotation files)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out} exists and is not empty; choose another --out")
    recorded = log_dataset_info(log)
    if recorded.fingerprint and dataset.fingerprint != recorded.fingerprint:
        raise ConfigError(
            f"the annotations at {dataset.root} differ from those the log's run was made on "
            f"({recorded.root or recorded.source}); pass --data with those"
        )
    info = _run_info(log, model, dataset)
    protocol = get_protocol(info.protocol, tolerance_px=info.tolerance_px)
    records = sample_records(dataset, log.samples, protocol, all_steps=info.all_steps)
    notes: list[str] = []
    if log.status != "success":
        notes.append(f"the Inspect eval ended with status {log.status!r}")
    if log.epochs > 1:
        notes.append(f"the log has {log.epochs} epochs; epoch 1 is imported")
    with run_folder(out) as folder:
        life = RunLife(folder, info)
        life.start()
        with life.failure_recorded():
            with Journal(folder.journal) as journal:
                for rec in records:
                    journal.append(rec)
            with gc_paused():
                score = score_run(
                    dataset, records, protocol, all_steps=info.all_steps, n_boot=n_boot,
                    seed=info.seed,
                )  # fmt: skip
                write_results(folder.path, score, dataset=dataset)
            if log.status == "success" and log.epochs == 1:
                notes.extend(_metric_notes(log.metrics, score.overall.values))
            info.calls = len(records)
            info.errors = sum(1 for r in records if r.error is not None)
            costs = [r.cost_usd for r in records if r.cost_usd is not None]
            info.cost_usd = round(sum(costs), 6) if costs else None
            imported = {
                "from": "inspect", "log": str(log.path), "eval_id": log.eval_id,
                "inspect_status": log.status, "notes": notes,
            }  # fmt: skip
            setattr(info, "imported", imported)  # noqa: B010  (run.json's extra field)
            life.finish(complete=score.complete)
    return ImportedRun(info, score, tuple(notes))
