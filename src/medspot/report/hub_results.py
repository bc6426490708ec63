"""Results in the Hugging Face Hub's "Eval Results" format (huggingface/hub-docs
`docs/hub/eval-results.md` and its specification `eval_results.yaml`): the
`.eval_results/<name>.yaml` a model repository carries, and the `eval.yaml` that registers a
benchmark dataset (its tasks are the leaderboards).

A model repository's file is a YAML list; each entry is one score: `dataset` (`id`, the
benchmark's hub dataset; `task_id`, a task of its eval.yaml), `value`, and the optional `date`,
`source` (`url`, `name`, `user`, `org`) and `notes` (free text). One entry per metric here: the
task ids are the metric keys of the static benchmark (and, for a live run, the live metric keys
prefixed `live_`); shares are in percent, ACP and WPS in steps. What the format has no field for
goes into `notes`: the 95% interval, protocol (preset), prompt style, number of tasks, the
harness version, multi-pass (zoom-in) settings, a live run's environment and mode. A run that
differs from the default (another preset, zoom-in, live) gets a file of its own
(`result_file_name`), as the hub's guidance asks for variants of one benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from medspot.errors import ConfigError
from medspot.report.comparable import passes_label
from medspot.report.leaderboard import is_share
from medspot.runfolder.live_schema import LIVE_KEYS, STEPS_RATIO, LiveRunInfo
from medspot.runfolder.reader import Run
from medspot.scoring.metrics import METRIC_KEYS, SHORT_NAMES

__all__ = [
    "DEFAULT_DATASET",
    "FRAMEWORK",
    "RESULTS_DIR",
    "dump_yaml",
    "eval_results",
    "eval_yaml",
    "result_file_name",
    "task_id",
]

DEFAULT_DATASET = "Tajamul21/MedSPOT"  # the benchmark's dataset on the hub
FRAMEWORK = "medspot"  # eval.yaml's evaluation_framework (to be added to the hub's list)
RESULTS_DIR = ".eval_results"
LIVE_PREFIX = "live_"

_DESCRIPTION = (
    "MedSPOT: multimodal models clicking through clinical imaging software (3D Slicer, Weasis, "
    "ITK-SNAP, Orthanc, ...) one workflow step after another, scored sequentially (a task stops "
    "at its first miss). One leaderboard per metric of the medspot harness (shares in "
    "percent): task completion (TCA), first step (S1A), step hit rate (SHR), "
    "conditional step accuracy (CSA), correct prefix (ACP, steps), weighted prefix (WPS, nWPS); "
    "live_* tasks are MedSPOT-Live runs in real running applications."
)


def task_id(key: str, live: bool = False) -> str:
    """The eval.yaml task id of a metric key."""
    return f"{LIVE_PREFIX}{key}" if live else key


def eval_yaml() -> dict[str, Any]:
    """The eval.yaml of the MedSPOT benchmark dataset: every metric a task."""
    tasks = [{"id": task_id(k)} for k in METRIC_KEYS]
    tasks += [{"id": task_id(k, live=True)} for k in LIVE_KEYS]
    return {
        "name": "MedSPOT",
        "description": _DESCRIPTION,
        "evaluation_framework": FRAMEWORK,
        "tasks": tasks,
    }


def _unit(key: str) -> str:
    """Shares in percent (as the leaderboard shows them); ACP and WPS in steps; the live
    steps ratio (steps against the oracle's) as it is."""
    if key == STEPS_RATIO:
        return "ratio"
    return "percent" if is_share(key) else "steps"


def _value(key: str, v: float) -> float:
    return round(100 * v, 2) if _unit(key) == "percent" else round(v, 4)


def _interval(key: str, ci: tuple[float, float] | None) -> str:
    if ci is None:
        return ""
    return f"95% CI [{_value(key, ci[0])}, {_value(key, ci[1])}] (bootstrap over tasks)"


def _setup(run: Run) -> list[str]:
    """How the run was made, beyond the defaults: a live run's environment, mode and repeats,
    zoom-in passes (what a variant's file name says)."""
    parts: list[str] = []
    live = LiveRunInfo.of(run.info)
    if live is not None:
        parts.append(f"live {live.env}, {live.mode} mode")
        if live.repeats > 1:
            parts.append(f"{live.repeats} repeats per task")
    passes = passes_label(run)
    if passes:
        parts.append(f"multi-pass ({passes})")
    return parts


def _variant(run: Run) -> list[str]:
    """What sets this run apart from a default static run (empty for one)."""
    parts = _setup(run)
    if run.protocol != "medspot-v1":
        parts.append(f"preset {run.protocol}")
    if run.info.prompt_style != "native":
        parts.append(f"{run.info.prompt_style} prompt")
    if run.info.all_steps:
        parts.append("all steps")
    return parts


def result_file_name(run: Run) -> str:
    """`medspot.yaml` for a default run; a variant's own file (`medspot_<variant>.yaml`)."""
    parts = _variant(run)
    if not parts:
        return "medspot.yaml"
    slug = re.sub(r"[^a-z0-9]+", "-", " ".join(parts).lower()).strip("-")
    return f"medspot_{slug}.yaml"


def eval_results(
    run: Run,
    *,
    dataset: str = DEFAULT_DATASET,
    source_url: str | None = None,
    source_name: str | None = None,
) -> list[dict[str, Any]]:
    """The entries of the run's `.eval_results/*.yaml` (one per metric it has)."""
    if not run.complete:
        raise ConfigError(
            f"{run.path} is an incomplete run (status {run.info.status!r}); finish it (run the "
            "same command again) before publishing its scores"
        )
    if run.kind == "oracle":
        raise ConfigError(f"{run.path} is the oracle (a pipeline check), not a model's result")
    live = LiveRunInfo.of(run.info) is not None
    keys = [k for k in (LIVE_KEYS if live else METRIC_KEYS) if run.metric(k) is not None]
    if not keys:
        raise ConfigError(f"{run.path} has no metric to export")
    common = [
        f"protocol {run.protocol}",
        f"{run.info.prompt_style} prompt",
        *(["every step asked (--all-steps)"] if run.info.all_steps else []),
        f"{run.overall.get('num_tasks', len(run.tasks))} tasks",
        *_setup(run),
        f"harness medspot {run.info.medspot_version}",
    ]
    if run.kind == "baseline":
        common.append("a baseline, not a model")
    date = (run.info.finished or run.info.started or "")[:10]
    source: dict[str, str] | None = None
    if source_url:
        source = {"url": source_url}
        if source_name:
            source["name"] = source_name
    entries: list[dict[str, Any]] = []
    for k in keys:
        v = run.metric(k)
        assert v is not None
        notes = [f"{SHORT_NAMES.get(k, k)} ({_unit(k)})"]
        ci = _interval(k, run.interval(k))
        notes += [ci] if ci else []
        entry: dict[str, Any] = {
            "dataset": {"id": dataset, "task_id": task_id(k, live=live)},
            "value": _value(k, v),
        }
        if date:
            entry["date"] = date
        if source is not None:
            entry["source"] = dict(source)
        entry["notes"] = "; ".join([*notes, *common])
        entries.append(entry)
    return entries


def dump_yaml(data: Sequence[Any] | dict[str, Any]) -> str:
    """`data` as block YAML (PyYAML, `pip install 'medspot[hub]'`)."""
    try:
        import yaml
    except ImportError:
        raise ConfigError(
            "writing the hub's YAML needs PyYAML: pip install 'medspot[hub]'"
        ) from None
    text: str = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return text
