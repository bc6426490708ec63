"""Which runs may be ranked or compared together: the same data (annotation fingerprint, apps,
`--limit`, number of tasks), each run once, live runs of one mode, one K and one toolset (or
none: GUI-only runs apart from runs offered tools), and single-pass
runs apart from multi-pass (zoom-in) ones, as the grounding leaderboards keep them, live runs
apart from static ones, and one protocol (with the advice that fits: a static run can be
re-scored under another preset, a live run cannot). This module owns these rules and the labels
of `--mixed` tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from medspot.errors import ConfigError
from medspot.runfolder.live_schema import LiveRunInfo
from medspot.runfolder.reader import Run
from medspot.runfolder.schema import TaskRow

__all__ = [
    "DataKey",
    "data_key",
    "data_mismatch",
    "kind_mismatch",
    "mode_mismatch",
    "passes_label",
    "passes_mismatch",
    "protocol_mismatch",
    "refuse_repeated_runs",
    "repeats_mismatch",
    "run_mode",
    "run_passes",
    "run_repeats",
    "run_tools",
    "same_task",
    "tools_mismatch",
]


@dataclass(frozen=True)
class DataKey:
    fingerprint: str  # "" when the run does not know it (an import without --data)
    apps: tuple[str, ...]
    limit: int | None
    num_tasks: int

    @property
    def label(self) -> str:
        """A short name of the data, for the rows of a --mixed table."""
        parts = [self.fingerprint[:8] or "data ?", "apps " + ",".join(self.apps)]
        if self.limit is not None:
            parts.append(f"limit {self.limit}")
        parts.append(f"{self.num_tasks} tasks")
        return "; ".join(parts)


def data_key(run: Run) -> DataKey:
    ds = run.info.dataset
    apps = tuple(sorted(ds.apps or run.apps))
    return DataKey(ds.fingerprint, apps, ds.limit, len(run.tasks))


def data_mismatch(runs: Sequence[Run]) -> str | None:
    """Why the runs are not over the same data, or None."""
    keys = [data_key(r) for r in runs]
    columns: list[tuple[str, list[object]]] = [
        ("apps", [",".join(k.apps) for k in keys]),
        ("--limit", [k.limit for k in keys]),
        ("task counts", [k.num_tasks for k in keys]),
        ("dataset fingerprints", [k.fingerprint for k in keys]),  # of the selected apps' files
    ]
    for what, values in columns:
        # a run that does not know its fingerprint (an import without --data) is not refused
        compared = [v for v in values if v] if what == "dataset fingerprints" else values
        if len(set(compared)) > 1:
            detail = "; ".join(
                f"{r.name}: {str(v)[:12] if v else '-'}" for r, v in zip(runs, values, strict=True)
            )
            return f"the runs are over different data: {what} differ ({detail})"
    return None


def run_mode(run: Run) -> str | None:
    """A live run's mode (`guided`, `agent`; live runs made before modes are guided), None for
    a static run."""
    live = LiveRunInfo.of(run.info)
    return None if live is None else live.mode


def mode_mismatch(runs: Sequence[Run]) -> str | None:
    """Why live runs of different modes may not be ranked or compared together, or None: a
    guided run is told the plan, an agent-mode run only the goal."""
    modes = [run_mode(r) for r in runs]
    if len({m for m in modes if m is not None}) > 1:
        detail = ", ".join(f"{r.name}: {m}" for r, m in zip(runs, modes, strict=True) if m)
        return f"the live runs were made in different modes ({detail})"
    return None


def kind_mismatch(runs: Sequence[Run]) -> str | None:
    """Why live and static runs may not be ranked or compared together, or None: a live run
    is scored on the application's state after each action, a static one on screenshots, and
    neither can be re-scored as the other."""
    live = [r for r in runs if run_mode(r) is not None]
    if not live or len(live) == len(runs):
        return None
    static = [r for r in runs if run_mode(r) is None]
    return (
        f"live runs ({', '.join(r.name for r in live)}) and static runs "
        f"({', '.join(r.name for r in static)}) measure different things: a live run is "
        "scored on the application's state after each action, a static one on screenshots, "
        "and neither can be re-scored as the other"
    )


def protocol_mismatch(runs: Sequence[Run]) -> str | None:
    """Why runs scored under different protocols are not comparable, with the advice that
    fits them (static runs: re-score under one preset; live runs are scored by their own
    protocol and cannot be re-scored), or None."""
    if len({r.protocol for r in runs}) <= 1:
        return None
    detail = ", ".join(f"{r.name}: {r.protocol}" for r in runs)
    if any(run_mode(r) is not None for r in runs):
        return (
            f"the runs were scored under different protocols ({detail}); a live run's "
            "protocol is the one of the medspot that ran it and cannot be re-scored: run it "
            "again with this medspot"
        )
    return (
        f"the runs were scored under different protocols ({detail}); re-score them under one "
        "preset with `medspot score RUN_DIR --protocol NAME --out NEW_DIR`"
    )


GUI_ONLY = "none"  # how a live run without tools is named in a tools column


def run_tools(run: Run) -> str | None:
    """A live run's toolset (`--tools NAME`), `GUI_ONLY` ("none") for a live run without
    tools (the GUI actions only), None for a static run."""
    live = LiveRunInfo.of(run.info)
    if live is None:
        return None
    return live.tools or GUI_ONLY


def tools_mismatch(runs: Sequence[Run]) -> str | None:
    """Why live runs offered different tools (or tools beside none) may not be ranked or
    compared together, or None: an agent that may call the application's API reaches states a
    GUI-only one must click its way to."""
    tools = [run_tools(r) for r in runs]
    if len({t for t in tools if t is not None}) > 1:
        detail = ", ".join(f"{r.name}: {t}" for r, t in zip(runs, tools, strict=True) if t)
        return f"the live runs were offered different tools ({detail}; none: GUI only)"
    return None


def run_repeats(run: Run) -> int | None:
    """A live run's repeats per task (`--repeats`; 1 for runs made before), None for a static
    run."""
    live = LiveRunInfo.of(run.info)
    return None if live is None else live.repeats


def repeats_mismatch(runs: Sequence[Run]) -> str | None:
    """Why live runs of different repeats may not be ranked or compared together, or None:
    pass@k and pass^k of different K measure different things, and the rows differ (one per
    task and repeat)."""
    ks = [run_repeats(r) for r in runs]
    if len({k for k in ks if k is not None}) > 1:
        detail = ", ".join(f"{r.name}: {k}" for r, k in zip(runs, ks, strict=True) if k)
        return f"the live runs were made with different --repeats ({detail})"
    return None


def run_passes(run: Run) -> int:
    """The model calls a run made per step: 1, or a zoom-in run's passes (`--zoom K`)."""
    zoom = run.info.zoom
    return zoom.passes if zoom is not None else 1


def passes_label(run: Run) -> str:
    """How a row names a multi-pass run ("zoom x2, crop 0.5"); "" for a single-pass run."""
    zoom = run.info.zoom
    if zoom is None or zoom.passes <= 1:
        return ""
    return f"zoom x{zoom.passes}, crop {zoom.crop:g}"


def passes_mismatch(runs: Sequence[Run]) -> str | None:
    """Why single-pass and multi-pass runs (or runs of different zoom settings) may not be
    ranked or compared together, or None: a zoom-in run asks the model again on a crop around
    its first answer, K calls per step, and ranks apart (the ScreenSpot-Pro leaderboard keeps
    zoom-in and agentic variants in a section of their own)."""
    labels = [passes_label(r) or "single-pass" for r in runs]
    if len(set(labels)) > 1:
        detail = ", ".join(f"{r.name}: {lab}" for r, lab in zip(runs, labels, strict=True))
        return f"the runs mix single-pass and multi-pass (zoom-in) runs ({detail})"
    return None


def refuse_repeated_runs(runs: Sequence[Run]) -> None:
    """The same run folder given twice would count one model twice."""
    seen: dict[object, Run] = {}
    for r in runs:
        key = r.path.resolve()
        if key in seen:
            raise ConfigError(f"the run {r.path} is given twice; give each run once")
        seen[key] = r


def same_task(a: TaskRow, b: TaskRow) -> bool:
    """Whether two task rows describe the same annotated task (overview, steps, targets): tasks
    of two annotation versions are never paired."""
    if a.task_overview != b.task_overview or len(a.steps) != len(b.steps):
        return False
    return all(
        sa.instruction == sb.instruction and sa.target_boxes == sb.target_boxes
        for sa, sb in zip(a.steps, b.steps, strict=True)
    )
