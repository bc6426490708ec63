"""Results in the Hugging Face Hub's "Eval Results" format (huggingface/hub-docs
`docs/hub/eval-results.md` and its specification `eval_results.yaml`): the
`.eval_results/<name>.yaml` a model repository carries, and the `eval.yaml` that registers a
benchmark dataset (its tasks are the leaderboards).

A model repository's file is a YAML list; each entry is one score: `dataset` (`id`, the
benchmark's hub dataset; `task_id`, a task of its eval.yaml), `value`, and the optional `date`,
`source` (`url`, `name`, `user`, `org`) and `notes` (free text). One entry per ranked metric
here: the task ids are the metric keys of the static benchmark (and, for a live run, the live
metric keys prefixed `live_`); shares are in percent, ACP and WPS in steps. The hub's format
cannot say which way a leaderboard is better (every one ranks the larger value first), so only
metrics of which a larger value is better are tasks (`ranked`); the diagnostics (the
propagation gap, harm, steps against the oracle's, false infeasible, tool use) are named with
their values in the notes of the run's first entry. What the format has no field for goes into
`notes`: the 95% interval, protocol (preset), prompt style, number of tasks, the harness
version, multi-pass (zoom-in) settings, a live run's environment and mode. A run that differs
from the default (another preset, zoom-in, live) gets a file of its own (`result_file_name`),
as the hub's guidance asks for variants of one benchmark; the runs of several models go to a
folder per model repository (`model_id`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from medspot.errors import ConfigError
from medspot.report.comparable import passes_label
from medspot.report.leaderboard import is_share
from medspot.runfolder.live_schema import (
    LIVE_KEYS,
    LIVE_LOWER_IS_BETTER,
    LIVE_UNRANKED,
    STEPS_RATIO,
    LiveRunInfo,
)
from medspot.runfolder.reader import Run
from medspot.scoring.metrics import LOWER_IS_BETTER, METRIC_KEYS, SHORT_NAMES

__all__ = [
    "DEFAULT_DATASET",
    "FRAMEWORK",
    "RESULTS_DIR",
    "check_dataset_id",
    "check_source_url",
    "dump_yaml",
    "eval_results",
    "eval_yaml",
    "folder_name",
    "model_id",
    "ranked",
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
    "conditional step accuracy (CSA), correct prefix (ACP, steps), weighted prefix (WPS, nWPS), "
    "independent step accuracy (ISA, every step asked); live_* tasks are MedSPOT-Live runs in "
    "real running applications. Every leaderboard ranks the larger value first; diagnostics of "
    "which a smaller value is better (propagation gap, harmful failures, steps against the "
    "oracle's, false infeasible) are in each result's notes."
)


# A hub repository id, `owner/name`: letters, digits, `-`, `_`, `.`; neither part starts or ends
# with `-` or `.`, holds `--` or `..`, or is longer than 96 characters (the hub's own rules)
_HUB_PART = r"(?!.*(?:--|\.\.))[A-Za-z0-9](?:[A-Za-z0-9._-]{0,94}[A-Za-z0-9])?"
_HUB_ID = re.compile(rf"{_HUB_PART}/{_HUB_PART}")
_MAX_URL = 2048


def check_dataset_id(text: str) -> str:
    """`text` if it is a hub dataset id (`owner/name`), else a `ConfigError` that says so."""
    if not _HUB_ID.fullmatch(text):
        raise ConfigError(
            f"--dataset {text!r} is not a hub dataset id like owner/name (letters, digits, "
            "'-', '_', '.'; no '..' or '--')"
        )
    return text


def check_source_url(text: str) -> str:
    """`text` if it is an http(s) URL with a host (where a result's logs are), else a
    `ConfigError`: a `javascript:`, `file:` or relative link is never written into a result."""
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    bad = any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text)
    if (
        parts is None
        or not port_ok
        or bad
        or len(text) > _MAX_URL
        or parts.scheme not in ("http", "https")
        or not parts.hostname
    ):
        raise ConfigError(f"--source-url {text!r} is not an http(s) URL like https://host/path")
    return text


def folder_name(text: str) -> str:
    """One portable folder name made of `text` (a model id's part): no separator, nothing
    outside [A-Za-z0-9._-] (a `:` becomes `_`), no trailing dot, not a device name, not
    `data` (Every Eval Ever's datastore rules, which a model repository's folder follows too)."""
    name = _SAFE.sub("-", text.replace(":", "_")).strip("-").rstrip(".")
    if not name or name == "data" or name.split(".", 1)[0].upper() in _RESERVED:
        name = f"{name or 'unknown'}_"
    return name


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"{d}{i}" for d in ("COM", "LPT") for i in range(1, 10))}


def task_id(key: str, live: bool = False) -> str:
    """The eval.yaml task id of a metric key."""
    return f"{LIVE_PREFIX}{key}" if live else key


def ranked(key: str) -> bool:
    """Whether a metric is a leaderboard of the benchmark: a larger value is better (the hub
    ranks every task that way); the others are diagnostics."""
    return key not in LOWER_IS_BETTER | LIVE_LOWER_IS_BETTER | LIVE_UNRANKED


def model_id(run: Run) -> str:
    """The run's model as the hub names it: its checkpoint (`owner/name`) where the adapter
    records one, else the model's name."""
    return str(run.info.adapter.get("checkpoint") or run.info.model)


def eval_yaml() -> dict[str, Any]:
    """The eval.yaml of the MedSPOT benchmark dataset: every ranked metric a task."""
    tasks = [{"id": task_id(k)} for k in METRIC_KEYS if ranked(k)]
    tasks += [{"id": task_id(k, live=True)} for k in LIVE_KEYS if ranked(k)]
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
    """The entries of the run's `.eval_results/*.yaml` (one per ranked metric it has)."""
    check_dataset_id(dataset)
    if source_url is not None:
        check_source_url(source_url)
    if not run.complete:
        raise ConfigError(
            f"{run.path} is an incomplete run (status {run.info.status!r}); finish it (run the "
            "same command again) before publishing its scores"
        )
    if run.kind == "oracle":
        raise ConfigError(f"{run.path} is the oracle (a pipeline check), not a model's result")
    live = LiveRunInfo.of(run.info) is not None
    present = [k for k in (LIVE_KEYS if live else METRIC_KEYS) if run.metric(k) is not None]
    keys = [k for k in present if ranked(k)]
    if not keys:
        raise ConfigError(f"{run.path} has no metric to export")
    diagnostics = [_diagnostic(run, k) for k in present if not ranked(k)]
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
        if diagnostics and not entries:  # the run's first entry names its diagnostics
            notes.append("not ranked: " + ", ".join(diagnostics))
        entry["notes"] = "; ".join([*notes, *common])
        entries.append(entry)
    return entries


def _diagnostic(run: Run, key: str) -> str:
    """A diagnostic's value for the notes, with its unit and which way is better."""
    v = run.metric(key)
    assert v is not None
    better = "no better value" if key in LIVE_UNRANKED else "lower is better"
    return f"{SHORT_NAMES.get(key, key)} {_value(key, v)} ({_unit(key)}, {better})"


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
