"""Paired comparison of two runs on the tasks both scored: the difference in each metric with a
paired bootstrap interval (the same task resample applied to both runs), McNemar's exact test
on task completion, and the tasks that flip. Live runs with repeats (`--repeats K`, the same K
in both) pair their rows per task and repeat, and add the paired difference in pass@k and
pass^k over the tasks both ran K times (`medspot.report.repeats`). With a live per-run metric
(`live_metric`: `--metric safety_score`, `medspot.report.live_scores`) live runs are also paired
on it: its mean over the rows both scored and the paired difference, resampling tasks."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from medspot.errors import ConfigError
from medspot.report.comparable import (
    data_mismatch,
    kind_mismatch,
    mode_mismatch,
    passes_label,
    passes_mismatch,
    protocol_mismatch,
    repeats_mismatch,
    run_tools,
    same_task,
    tools_mismatch,
)
from medspot.report.live_scores import (
    LIVE_METRIC_LABELS,
    LiveMetricDiff,
    is_signed,
    live_metric_diff,
)
from medspot.report.repeats import PASS_LABELS, PassDiff, pass_diffs
from medspot.runfolder.reader import Run
from medspot.scoring.metrics import (
    METRIC_KEYS,
    SEQUENTIAL_KEYS,
    metrics_from_sums,
    percentile_intervals,
    resample_counts,
    task_matrix,
)

__all__ = [
    "Comparison",
    "MetricDiff",
    "compare_runs",
    "format_comparison",
    "mcnemar_exact",
    "paired_bootstrap",
]


@dataclass(frozen=True)
class MetricDiff:
    key: str
    a: float | None
    b: float | None
    diff: float | None  # b - a
    interval: tuple[float, float] | None  # paired bootstrap 95% interval of b - a


@dataclass(frozen=True)
class Comparison:
    label_a: str
    label_b: str
    protocol_a: str
    protocol_b: str
    common: tuple[str, ...]  # task ids scored in both runs
    only_a: tuple[str, ...]  # scored in A only (not in B, or not scored there)
    only_b: tuple[str, ...]
    metrics: tuple[MetricDiff, ...]
    a_only_completes: tuple[str, ...]  # completed by A, not by B
    b_only_completes: tuple[str, ...]
    both_complete: int
    neither_completes: int
    mcnemar_p: float
    n_boot: int
    seed: int
    changed: tuple[str, ...] = ()  # same id, other annotations (mixed data): not paired
    passes: tuple[PassDiff, ...] = ()  # pass@k, pass^k with repeats (live runs, one K)
    tools_a: str | None = None  # a live run's toolset ("none": GUI only); None: static
    tools_b: str | None = None
    live: LiveMetricDiff | None = None  # the live per-run metric asked (--metric), paired

    def to_json(self) -> dict[str, Any]:
        return {
            "run_a": self.label_a,
            "run_b": self.label_b,
            "protocol_a": self.protocol_a,
            "protocol_b": self.protocol_b,
            "tools_a": self.tools_a,
            "tools_b": self.tools_b,
            "common_tasks": len(self.common),
            "only_in_a": list(self.only_a),
            "only_in_b": list(self.only_b),
            "changed_tasks_not_paired": list(self.changed),
            "metrics": {
                m.key: {
                    "a": m.a,
                    "b": m.b,
                    "difference": m.diff,
                    "interval": list(m.interval) if m.interval else None,
                }
                for m in self.metrics
            },
            "mcnemar": {
                "a_only_completes": len(self.a_only_completes),
                "b_only_completes": len(self.b_only_completes),
                "both_complete": self.both_complete,
                "neither_completes": self.neither_completes,
                "p_value": self.mcnemar_p,
            },
            "completed_by_a_not_b": list(self.a_only_completes),
            "completed_by_b_not_a": list(self.b_only_completes),
            "bootstrap": {"resamples": self.n_boot, "seed": self.seed},
            "repeats": {
                p.key: {"a": p.a, "b": p.b, "difference": p.diff, "tasks": p.tasks,
                        "interval": list(p.interval) if p.interval else None}
                for p in self.passes
            },
            "live_metric": None if self.live is None else {
                "key": self.live.key, "a": self.live.a, "b": self.live.b,
                "difference": self.live.diff, "rows": self.live.rows,
                "interval": list(self.live.interval) if self.live.interval else None,
            },
        }  # fmt: skip


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts `b` and `c`: twice the
    binomial(b + c, 1/2) tail at min(b, c), capped at 1. No discordant pair gives 1."""
    if b < 0 or c < 0:
        raise ValueError("counts must be >= 0")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return float(min(1.0, 2.0 * tail / 2**n))


def paired_bootstrap(
    ma: np.ndarray[Any, Any],
    mb: np.ndarray[Any, Any],
    *,
    all_steps: bool,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, tuple[float, float] | None]:
    """Percentile intervals of metric(B) - metric(A), resampling task rows with the same
    indices for both matrices (rows are the same tasks, in the same order)."""
    n = ma.shape[0]
    keys = METRIC_KEYS if all_steps else SEQUENTIAL_KEYS
    if n == 0 or n_boot <= 0:
        return dict.fromkeys(keys)
    rng = np.random.default_rng(seed)
    sa = np.empty((n_boot, ma.shape[1]))
    sb = np.empty((n_boot, mb.shape[1]))
    for rows, counts in resample_counts(n, n_boot, rng, max_cells=2_000_000):
        sa[rows] = counts @ ma
        sb[rows] = counts @ mb
    va = metrics_from_sums(sa, n, all_steps)
    vb = metrics_from_sums(sb, n, all_steps)
    return percentile_intervals({k: vb[k] - va[k] for k in keys}, keys, level)


def _finite(x: Any) -> float | None:
    v = float(x)
    return v if math.isfinite(v) else None


def compare_runs(
    a: Run,
    b: Run,
    *,
    n_boot: int = 2000,
    seed: int = 0,
    mixed: bool = False,
    live_metric: str | None = None,
) -> Comparison:
    """Compare run `b` against run `a` on the tasks both scored (status "scored"); with
    `live_metric`, two live runs also on that per-run metric."""
    kinds_problem = kind_mismatch([a, b])
    if kinds_problem is not None and not mixed:
        raise ConfigError(f"{kinds_problem}; compare runs of one kind, or pass --mixed")
    protocol_problem = protocol_mismatch([a, b])
    if protocol_problem is not None and not mixed:
        raise ConfigError(f"{protocol_problem}; or pass --mixed to compare anyway")
    repeats_problem = repeats_mismatch([a, b])  # before the data: K changes the task rows
    if repeats_problem is not None and not mixed:
        raise ConfigError(f"{repeats_problem}; compare runs of one K, or pass --mixed")
    data_problem = data_mismatch([a, b])
    if data_problem is not None and not mixed:
        raise ConfigError(f"{data_problem}; compare runs over the same data, or pass --mixed")
    mode_problem = mode_mismatch([a, b])
    if mode_problem is not None and not mixed:
        raise ConfigError(f"{mode_problem}; compare runs of one mode, or pass --mixed")
    tools_problem = tools_mismatch([a, b])
    if tools_problem is not None and not mixed:
        raise ConfigError(f"{tools_problem}; compare runs offered the same tools, or pass --mixed")
    passes_problem = passes_mismatch([a, b])
    if passes_problem is not None and not mixed:
        raise ConfigError(
            f"{passes_problem}; compare single-pass and zoom-in runs apart, or pass --mixed"
        )
    scored_a = {t.task_id: t for t in a.tasks if t.status == "scored"}
    scored_b = {t.task_id: t for t in b.tasks if t.status == "scored"}
    common = tuple(tid for tid in scored_a if tid in scored_b)
    changed: tuple[str, ...] = ()
    fa, fb = a.info.dataset.fingerprint, b.info.dataset.fingerprint
    if fa != fb:  # other annotations (or unknown ones): pair only tasks that are the same
        changed = tuple(t for t in common if not same_task(scored_a[t], scored_b[t]))
        common = tuple(t for t in common if t not in changed)
    if not common:
        raise ConfigError(f"{a.path} and {b.path} have no scored task in common")
    all_steps = a.all_steps and b.all_steps
    ta = [scored_a[t] for t in common]
    tb = [scored_b[t] for t in common]
    ma = task_matrix(
        [t.counts(str(a.protocol_settings.get("s1a_step", "first_evaluable"))) for t in ta]
    )
    mb = task_matrix(
        [t.counts(str(b.protocol_settings.get("s1a_step", "first_evaluable"))) for t in tb]
    )
    n = len(common)
    pa = metrics_from_sums(ma.sum(axis=0), n, all_steps)
    pb = metrics_from_sums(mb.sum(axis=0), n, all_steps)
    cis = paired_bootstrap(ma, mb, all_steps=all_steps, n_boot=n_boot, seed=seed)
    diffs = []
    for k in METRIC_KEYS if all_steps else SEQUENTIAL_KEYS:
        va, vb = _finite(pa[k]), _finite(pb[k])
        diffs.append(
            MetricDiff(
                key=k,
                a=va,
                b=vb,
                diff=vb - va if va is not None and vb is not None else None,
                interval=cis.get(k),
            )
        )
    a_only = tuple(t for t in common if scored_a[t].completed and not scored_b[t].completed)
    b_only = tuple(t for t in common if scored_b[t].completed and not scored_a[t].completed)
    both = sum(1 for t in common if scored_a[t].completed and scored_b[t].completed)
    return Comparison(
        label_a=_label(a),
        label_b=_label(b),
        protocol_a=a.protocol,
        protocol_b=b.protocol,
        common=common,
        only_a=tuple(t for t in scored_a if t not in scored_b),
        only_b=tuple(t for t in scored_b if t not in scored_a),
        metrics=tuple(diffs),
        a_only_completes=a_only,
        b_only_completes=b_only,
        both_complete=both,
        neither_completes=n - both - len(a_only) - len(b_only),
        mcnemar_p=mcnemar_exact(len(a_only), len(b_only)),
        n_boot=n_boot,
        seed=seed,
        changed=changed,
        passes=pass_diffs(a, b, n_boot=n_boot, seed=seed),
        tools_a=run_tools(a),
        tools_b=run_tools(b),
        live=(
            live_metric_diff(a, b, live_metric, common, n_boot=n_boot, seed=seed)
            if live_metric is not None
            else None
        ),
    )


def _label(run: Run) -> str:
    """The run's name, with its passes when it is a multi-pass (zoom-in) run."""
    passes = passes_label(run)
    return f"{run.name} [{passes}]" if passes else run.name


def _pct(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{100 * v:+.1f}" if signed else f"{100 * v:.1f}"


def _num(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def format_comparison(c: Comparison, fmt: str = "text", *, max_list: int = 50) -> str:
    """The comparison as plain text or Markdown (shares in percentage points)."""
    from medspot.report.leaderboard import SHORT_NAMES, is_share

    md = fmt == "md"
    lines: list[str] = []
    if c.tools_a != c.tools_b:  # live runs offered different tools (--mixed): say which
        head = (
            f"A = {c.label_a} ({c.protocol_a}, tools {c.tools_a or 'static'}), "
            f"B = {c.label_b} ({c.protocol_b}, tools {c.tools_b or 'static'}); "
            "MIXED tools: not comparable"
        )
    else:
        head = f"A = {c.label_a} ({c.protocol_a}), B = {c.label_b} ({c.protocol_b})"
    lines.append(f"**{head}**" if md else head)
    lines.append(
        f"{len(c.common)} tasks scored in both"
        + (f"; {len(c.only_a)} only in A" if c.only_a else "")
        + (f"; {len(c.only_b)} only in B" if c.only_b else "")
        + (f"; {len(c.changed)} with other annotations in A and B, not paired" if c.changed else "")
        + f". Paired bootstrap over tasks, {c.n_boot} resamples, seed {c.seed}."
    )
    lines.append("")
    header = ["metric", "A", "B", "B - A", "95% interval of B - A"]
    rows = []
    for m in c.metrics:
        f = _pct if is_share(m.key) else _num
        ci = m.interval
        ci_s = f"[{f(ci[0], True)}, {f(ci[1], True)}]" if ci else "-"
        rows.append([SHORT_NAMES.get(m.key, m.key), f(m.a), f(m.b), f(m.diff, True), ci_s])
    if md:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines.extend("| " + " | ".join(r) + " |" for r in rows)
    else:
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
        for r in [header, *rows]:
            cells = (str(x).ljust(w) for x, w in zip(r, widths, strict=True))
            lines.append("  ".join(cells).rstrip())
    for p in c.passes:
        ci_s = f"[{_pct(p.interval[0], True)}, {_pct(p.interval[1], True)}]" if p.interval else "-"
        lines.append(
            f"{PASS_LABELS[p.key]} over the {p.tasks} tasks both ran K times: A {_pct(p.a)}, "
            f"B {_pct(p.b)}, B - A {_pct(p.diff, True)} {ci_s} (paired bootstrap over tasks)"
        )
    if c.live is not None:
        lm = c.live
        f = _num if is_signed(lm.key) else _pct
        ci_s = f"[{f(lm.interval[0], True)}, {f(lm.interval[1], True)}]" if lm.interval else "-"
        lines.append(
            f"{LIVE_METRIC_LABELS[lm.key]} ({lm.key}) over the {lm.rows} runs both scored: "
            f"A {f(lm.a)}, B {f(lm.b)}, B - A {f(lm.diff, True)} {ci_s} (paired bootstrap "
            "over tasks)"
        )
    lines.append("")
    lines.append(
        f"Task completion: both {c.both_complete}, neither {c.neither_completes}, "
        f"A only {len(c.a_only_completes)}, B only {len(c.b_only_completes)}; "
        f"McNemar exact p = {c.mcnemar_p:.4g}"
    )
    for title, ids in (
        ("Completed by A, not by B", c.a_only_completes),
        ("Completed by B, not by A", c.b_only_completes),
    ):
        lines.append("")
        lines.append(f"{title} ({len(ids)}):")
        shown = list(ids[:max_list])
        lines.extend(f"- {t}" if md else f"  {t}" for t in shown)
        if len(ids) > max_list:
            lines.append(f"  ... and {len(ids) - max_list} more (--format json lists all)")
    return "\n".join(lines)
