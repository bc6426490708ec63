"""A static run as "Every Eval Ever" records (EvalEval Coalition, github evaleval/every_eval_ever,
schema version 0.3.0: `every_eval_ever/schemas/eval.schema.json` for the aggregate log,
`instance_level_eval.schema.json` for the per-item sidecar): the evaluation-records format
peers use to compare results across harnesses.

- The aggregate log (`<uuid>.json`): the run's model, the harness (`eval_library`: medspot, its
  version, protocol, prompt style, zoom-in), and one `evaluation_results` item per metric with
  its 95% bootstrap interval (`score_details.uncertainty.confidence_interval`), its direction
  (`lower_is_better`: the propagation gap only) and bounds (`min_score`, `max_score`, which the
  validator requires of a continuous score: 0..1 for shares, -1..1 for the gap; ACP and WPS
  are in steps, their maximum the run's own, the score had every evaluable step been hit).
- The sidecar (`<uuid>_samples.jsonl`, linked from the log's `detailed_evaluation_results` with
  its sha256 and row count): one closed record per task, `multi_turn`: each asked step is a user
  turn (the instruction) and an assistant turn (the model's raw answer), its click the
  `answer_attribution` of that turn; the task's score is 1 when every evaluable step was hit
  (task completion), linked to the `task_completion_accuracy` result.

Files go where the repository's datastore keeps them:
`data/medspot/<developer>/<model>/<uuid>.json` and `..._samples.jsonl` (the uuid is a UUIDv4
derived from the run, so an export is reproducible; the folder names follow the validator's
datastore rules: the checkpoint's owner and name, further slashes and colons as `_`, portable
file names). Live runs are not exported this way yet.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from medspot.errors import ConfigError
from medspot.report.comparable import passes_label
from medspot.report.hub_results import DEFAULT_DATASET, check_dataset_id, folder_name, model_id
from medspot.runfolder.live_schema import LiveRunInfo
from medspot.runfolder.reader import Run
from medspot.runfolder.schema import TaskRow
from medspot.scoring.metrics import (
    ACP,
    GAP,
    LOWER_IS_BETTER,
    METRIC_KEYS,
    SHORT_NAMES,
    TCA,
    WPS,
)
from medspot.scoring.protocol import get_protocol

__all__ = ["COLLECTION", "SCHEMA_VERSION", "EeeExport", "eee_export"]

SCHEMA_VERSION = "0.3.0"
COLLECTION = "medspot"


@dataclass(frozen=True)
class EeeExport:
    """The two files of one run: paths relative to the export root, and their text."""

    log_path: str
    log: dict[str, Any]
    samples_path: str
    samples: str


def _ids(run: Run) -> tuple[str, str, str]:
    """(model id in hub form, developer, model name) of the run: the datastore's folders are
    the id's owner and its name (further slashes flattened to `_`); a flat id's owner is
    `model_info.developer`."""
    checkpoint = model_id(run)
    if "/" in checkpoint:
        developer, model = checkpoint.split("/", 1)
    else:  # a flat id: medspot's own baselines are its; a served model's owner is not known
        developer, model = ("medspot" if run.kind == "baseline" else "unknown"), checkpoint
    return checkpoint, folder_name(developer), folder_name(model.replace("/", "_"))


def _max_steps_scores(run: Run) -> dict[str, float]:
    """The most ACP and WPS the run could have scored (every evaluable step of its scored
    tasks hit), the bounds of those two step-counting metrics."""
    scored = [t for t in run.tasks if t.status == "scored"]
    try:
        protocol = get_protocol(run.protocol)
    except ConfigError:  # a protocol this medspot does not know: each weight is at most 1
        protocol = None
    acp = wps = 0.0
    for t in scored:
        positions = [s.position for s in t.steps if s.evaluable]
        n_eval = max(t.num_evaluable_steps, len(positions), t.correct_steps)
        acp += n_eval
        top = (
            protocol.max_weighted_prefix(positions, len(t.steps))
            if protocol is not None and positions
            else float(n_eval)
        )
        wps += max(top, t.weighted_prefix_score)
    n = len(scored) or 1
    return {ACP: acp / n, WPS: wps / n}


def _uuid(run: Run) -> str:
    digest = hashlib.sha256(
        json.dumps(
            [run.info.model, run.info.started, run.info.finished, run.protocol,
             run.info.dataset.fingerprint, str(run.path.resolve())]
        ).encode()
    ).digest()  # fmt: skip
    return str(uuid.UUID(bytes=digest[:16], version=4))


def _epoch(iso: str | None) -> str:
    if not iso:
        return "0"
    try:
        return str(int(datetime.fromisoformat(iso).timestamp()))
    except ValueError:
        return "0"


def _metric(
    run: Run, key: str, dataset: str, n_boot: int | None, maxima: dict[str, float]
) -> dict[str, Any]:
    v = run.metric(key)
    assert v is not None
    steps = key in (ACP, WPS)
    low, high = (-1.0, 1.0) if key == GAP else (0.0, maxima[key] if steps else 1.0)
    score: dict[str, Any] = {"score": v}
    ci = run.interval(key)
    if ci is not None:
        uncertainty: dict[str, Any] = {
            "confidence_interval": {
                "lower": ci[0],
                "upper": ci[1],
                "confidence_level": 0.95,
                "method": "bootstrap over tasks",
            },
            "num_samples": int(run.overall.get("num_tasks", len(run.tasks))),
        }
        if n_boot:
            uncertainty["num_bootstrap_samples"] = n_boot
        score["uncertainty"] = uncertainty
    return {
        "evaluation_result_id": key,
        "evaluation_name": f"MedSPOT {SHORT_NAMES.get(key, key)}",
        "source_data": {
            "dataset_name": "MedSPOT",
            "source_type": "hf_dataset",
            "hf_repo": dataset,
            "samples_number": int(run.overall.get("num_tasks", len(run.tasks))),
        },
        "evaluation_timestamp": run.info.finished or run.info.started,
        "metric_config": {
            "evaluation_description": f"{key} of the medspot harness (docs/protocol.md)",
            "metric_id": f"medspot.{key}",
            "metric_name": SHORT_NAMES.get(key, key),
            "metric_unit": "steps" if steps else "proportion",
            "lower_is_better": key in LOWER_IS_BETTER,
            "score_type": "continuous",
            "min_score": low,
            "max_score": high,
        },
        "score_details": score,
    }


def _sample(run: Run, task: TaskRow, evaluation_id: str, model_id: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    attribution: list[dict[str, Any]] = []
    asked = [s for s in task.steps if s.outcome != "not_reached"]
    for s in asked:
        messages.append({"turn_idx": len(messages), "role": "user", "content": s.instruction})
        messages.append(
            {"turn_idx": len(messages), "role": "assistant", "content": s.raw_output or ""}
        )
        point = "" if s.pred_point is None else f"{s.pred_point[0]:.6f},{s.pred_point[1]:.6f}"
        attribution.append({
            "turn_idx": len(messages) - 1,
            "source": f"messages[{len(messages) - 1}].content",
            "extracted_value": point,
            "extraction_method": f"medspot card parser ({run.info.model}), normalised x,y",
            "is_terminal": s is asked[-1],
        })  # fmt: skip
    steps = "\n".join(f"{s.position}. {s.instruction}" for s in task.steps)
    raw = f"{task.task_overview}\n{steps}"
    reference = [
        json.dumps({"step": s.position, "boxes": [list(b) for b in s.target_boxes]})
        for s in task.steps
    ]
    return {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "model_id": model_id,
        "evaluation_name": f"MedSPOT {SHORT_NAMES[TCA]}",
        "evaluation_result_id": TCA,
        "sample_id": task.task_id,
        "interaction_type": "multi_turn",
        "input": {"raw": raw, "reference": reference},
        "output": None,
        "messages": messages or None,
        "answer_attribution": attribution,
        "evaluation": {
            "score": 1.0 if task.completed else 0.0,
            "is_correct": bool(task.completed),
            "num_turns": max(1, len(messages)),
        },
    }


def eee_export(run: Run, *, organization: str, dataset: str = DEFAULT_DATASET) -> EeeExport:
    """The aggregate log and the per-task sidecar of a finished static run."""
    check_dataset_id(dataset)
    if LiveRunInfo.of(run.info) is not None:
        raise ConfigError(f"{run.path} is a live run: its per-task records are not exported yet")
    if not run.complete:
        raise ConfigError(f"{run.path} is an incomplete run: finish it before exporting it")
    if run.kind == "oracle":
        raise ConfigError(f"{run.path} is the oracle (a pipeline check), not a model's result")
    model_id, developer, model = _ids(run)
    file_uuid = _uuid(run)
    timestamp = _epoch(run.info.finished or run.info.started)
    evaluation_id = f"medspot/{model_id}/{timestamp}"
    folder = f"data/{COLLECTION}/{developer}/{model}"
    samples_path = f"{folder}/{file_uuid}_samples.jsonl"
    scored = [t for t in run.tasks if t.status == "scored"]
    if not scored:  # the datastore wants a record per task: an empty sidecar is refused
        raise ConfigError(f"{run.path} has no scored task: nothing to export")
    lines = [
        json.dumps(_sample(run, t, evaluation_id, model_id), ensure_ascii=False) for t in scored
    ]
    samples = "".join(line + "\n" for line in lines)
    backend = str(run.info.adapter.get("backend", ""))
    library_details = {
        "protocol": run.protocol,
        "prompt_style": run.info.prompt_style,
        "all_steps": str(run.info.all_steps).lower(),
        "dataset_fingerprint": run.info.dataset.fingerprint,
    }
    if passes_label(run):
        library_details["zoom"] = passes_label(run)
    keys = [k for k in METRIC_KEYS if run.metric(k) is not None]
    maxima = _max_steps_scores(run)
    n_boot = run.overall.get("bootstrap_resamples")
    log: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "evaluation_id": evaluation_id,
        "evaluation_timestamp": run.info.finished or run.info.started,
        "retrieved_timestamp": timestamp,
        "source_metadata": {
            "source_name": "MedSPOT (medspot harness)",
            "source_type": "evaluation_run",
            "source_organization_name": organization,
            "evaluator_relationship": "third_party",
        },
        "model_info": {
            "name": str(run.info.adapter.get("title") or run.info.model),
            "id": model_id,
            "developer": developer,
            "inference_platform": {"hf": "transformers", "openai": "OpenAI-compatible API"}.get(
                backend, backend or "unknown"
            ),
            "additional_details": {
                "deployment_type": "self_deployed" if backend == "hf" else "unknown",
                "model_availability": "unknown",
                "medspot_card": run.info.model,
            },
        },
        "eval_library": {
            "name": "medspot",
            "version": run.info.medspot_version,
            "additional_details": library_details,
        },
        "evaluation_results": [
            _metric(run, k, dataset, n_boot if isinstance(n_boot, int) else None, maxima)
            for k in keys
        ],
        "detailed_evaluation_results": {
            "format": "jsonl",
            "file_path": samples_path,
            "hash_algorithm": "sha256",
            "checksum": hashlib.sha256(samples.encode("utf-8")).hexdigest(),
            "total_rows": len(lines),
        },
    }
    return EeeExport(f"{folder}/{file_uuid}.json", log, samples_path, samples)
