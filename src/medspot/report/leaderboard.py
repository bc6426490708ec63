"""The leaderboard: one row per run, every metric with its 95% interval, sorted, as Markdown,
CSV or LaTeX, with the protocol named in the caption. Runs scored under different protocols,
and single-pass runs beside multi-pass (zoom-in) ones, are refused unless `mixed` (a zoom-in
row is marked `[zoom xK, crop F]`; live runs of different modes, guided and agent, ranked together
with `mixed` show a mode column, and live runs offered different tools, or tools beside none, a
tools column). Live runs with repeats (`--repeats K`, all of one K) add the
pass@k and pass^k columns (`medspot.report.repeats`). `live_metric` (`--metric safety_score`,
`medspot.report.live_scores`) adds a live per-run metric's column to a table of live runs and
ranks by it unless another sort key is asked."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass

from medspot.errors import ConfigError
from medspot.report.comparable import (
    data_key,
    data_mismatch,
    kind_mismatch,
    mode_mismatch,
    passes_label,
    passes_mismatch,
    protocol_mismatch,
    refuse_repeated_runs,
    repeats_mismatch,
    run_mode,
    run_repeats,
    run_tools,
    tools_mismatch,
)
from medspot.report.live_scores import (
    LIVE_METRIC_LABELS,
    is_signed,
    lower_is_better,
    run_score,
)
from medspot.report.repeats import PASS_LABELS, pass_keys
from medspot.runfolder.reader import Run
from medspot.scoring.metrics import ACP, LOWER_IS_BETTER, METRIC_KEYS, SHORT_NAMES, TCA, WPS

__all__ = [
    "FORMATS",
    "SHORT_NAMES",
    "Leaderboard",
    "build_leaderboard",
    "is_share",
    "render",
    "resolve_metric",
]

FORMATS = ("md", "csv", "latex")


def is_share(key: str) -> bool:
    """Metrics that are shares (shown in percent); ACP and WPS are step counts, the live
    safety score a number in -1..1."""
    return key not in (ACP, WPS) and not is_signed(key)


def _lower_is_better(key: str) -> bool:
    return key in LOWER_IS_BETTER or lower_is_better(key)


def resolve_metric(name: str) -> str:
    """A metric key from its key or short name (case-insensitive)."""
    low = name.lower()
    for key, short in (*SHORT_NAMES.items(), *LIVE_METRIC_LABELS.items()):
        if low in (key, short.lower()):
            return key
    raise ConfigError(
        f"unknown metric {name!r}; one of: "
        + ", ".join([*SHORT_NAMES.values(), *LIVE_METRIC_LABELS])
    )


@dataclass(frozen=True)
class Row:
    label: str
    kind: str
    protocol: str
    complete: bool
    num_tasks: int | None
    values: dict[str, float | None]
    intervals: dict[str, tuple[float, float] | None]
    data: str = ""  # the run's data, named in the rows of a table over mixed data
    passes: str = ""  # a multi-pass (zoom-in) run's passes ("zoom x2, crop 0.5"), else ""
    mode: str = ""  # a live run's mode (guided, agent); "" for a static run
    tools: str = ""  # a live run's toolset ("none": GUI only); "" for a static run


@dataclass(frozen=True)
class Leaderboard:
    rows: tuple[Row, ...]
    keys: tuple[str, ...]
    protocols: tuple[str, ...]
    sort_key: str
    mixed_data: bool = False
    left_out: tuple[str, ...] = ()  # incomplete runs not ranked
    repeats: tuple[int, ...] = ()  # the live runs' K (one value unless mixed)
    mixed_passes: bool = False  # single-pass and multi-pass runs in one table (--mixed)
    mixed_modes: bool = False  # guided and agent-mode live runs in one table (--mixed)
    mixed_tools: bool = False  # live runs offered different tools, or none (--mixed)

    @property
    def caption(self) -> str:
        if len(self.protocols) == 1:
            proto = f"protocol {self.protocols[0]}"
        else:
            proto = "MIXED protocols (" + ", ".join(self.protocols) + "): rows are not comparable"
        notes = [
            f"MedSPOT leaderboard, {proto}",
            *(
                ["MIXED data (see the data column): rows are not comparable"]
                if self.mixed_data
                else []
            ),
            f"sorted by {_label(self.sort_key)}"
            + (" (lower is better)" if _lower_is_better(self.sort_key) else ""),
            "95% bootstrap intervals over tasks in brackets",
            "shares in percent, ACP and WPS in steps",
        ]
        if any(k > 1 for k in self.repeats):
            ks = "/".join(str(k) for k in self.repeats)
            notes.append(
                f"live runs with K = {ks} repeats per task: pass@k (some run of a task "
                "succeeded) and pass^k (all K did) over tasks, the other metrics pool the runs"
            )
        if self.mixed_modes:
            notes.append(
                "MIXED live modes (see the mode column; guided: told each step, agent: the "
                "goal only): rows are not comparable"
            )
        if self.mixed_tools:
            notes.append(
                "MIXED tools (see the tools column; none: the GUI actions only, a toolset: "
                "the application's API beside them): rows are not comparable"
            )
        if self.mixed_passes:
            notes.append(
                "MIXED single-pass and multi-pass (zoom-in) runs: a zoom-in row asked the "
                "model again on a crop, several calls per step; rows are not comparable"
            )
        elif any(r.passes for r in self.rows):
            notes.append(f"multi-pass (zoom-in) runs: {self.rows[0].passes}")
        if any(not r.complete for r in self.rows):
            notes.append("* incomplete run: metrics over the tasks that were scored")
        if self.left_out:
            notes.append("left out as incomplete: " + ", ".join(self.left_out))
        if any(r.kind in ("oracle", "baseline") for r in self.rows):
            notes.append("oracle/baseline rows are pipeline checks, not models")
        return "; ".join(notes) + "."


def build_leaderboard(
    runs: Sequence[Run],
    *,
    mixed: bool = False,
    sort: str = TCA,
    include_incomplete: bool = False,
    live_metric: str | None = None,
) -> Leaderboard:
    """Rank `runs`. Different protocols or data are refused unless `mixed` (then each row
    names them); incomplete runs are left out (and named) unless `include_incomplete`.
    `live_metric` (a key of `live_scores.LIVE_METRIC_LABELS`) adds its column (live runs
    only; a folder written before the metric: the mean of its rows)."""
    if not runs:
        raise ConfigError("no run to rank")
    refuse_repeated_runs(runs)
    left_out = () if include_incomplete else tuple(r.name for r in runs if not r.complete)
    if not include_incomplete:
        runs = [r for r in runs if r.complete]
        if not runs:
            raise ConfigError(
                "every run is incomplete (" + ", ".join(left_out) + "); finish them, or pass "
                "--include-incomplete to rank them anyway"
            )
    kinds_problem = kind_mismatch(runs)  # before the data: live and static data differ
    if kinds_problem is not None and not mixed:
        raise ConfigError(f"{kinds_problem}; rank runs of one kind, or pass --mixed")
    repeats_problem = repeats_mismatch(runs)  # before the data: K changes the task rows
    if repeats_problem is not None and not mixed:
        raise ConfigError(f"{repeats_problem}; rank runs of one K, or pass --mixed")
    data_problem = data_mismatch(runs)
    if data_problem is not None and not mixed:
        raise ConfigError(f"{data_problem}; rank runs over the same data, or pass --mixed")
    mode_problem = mode_mismatch(runs)
    if mode_problem is not None and not mixed:
        raise ConfigError(f"{mode_problem}; rank runs of one mode, or pass --mixed")
    tools_problem = tools_mismatch(runs)
    if tools_problem is not None and not mixed:
        raise ConfigError(f"{tools_problem}; rank runs offered the same tools, or pass --mixed")
    passes_problem = passes_mismatch(runs)
    if passes_problem is not None and not mixed:
        raise ConfigError(
            f"{passes_problem}; rank single-pass and zoom-in runs apart, or pass --mixed"
        )
    protocols = tuple(dict.fromkeys(r.protocol for r in runs))
    protocol_problem = protocol_mismatch(runs)
    if protocol_problem is not None and not mixed:
        raise ConfigError(f"{protocol_problem}; or pass --mixed to list them anyway")
    keys = tuple(k for k in METRIC_KEYS if any(k in r.overall for r in runs))
    live = {r.path: run_score(r, live_metric) for r in runs} if live_metric else {}
    if live_metric is not None:
        keys += (live_metric,)
    if sort not in keys:
        hint = f" (--metric {sort} adds it)" if sort in LIVE_METRIC_LABELS else ""
        raise ConfigError(f"no run has the metric {_label(sort)}{hint}")
    keys += pass_keys(runs)

    def value(r: Run, k: str) -> float | None:
        return live[r.path][0] if k == live_metric else r.metric(k)

    def interval(r: Run, k: str) -> tuple[float, float] | None:
        return live[r.path][1] if k == live_metric else r.interval(k)

    rows = [
        Row(
            label=r.name,
            kind=r.kind,
            protocol=r.protocol,
            complete=r.complete,
            num_tasks=r.overall.get("num_tasks"),
            values={k: value(r, k) for k in keys},
            intervals={k: interval(r, k) for k in keys},
            data=data_key(r).label,
            passes=passes_label(r),
            mode=run_mode(r) or "",
            tools=run_tools(r) or "",
        )
        for r in runs
    ]
    sign = 1.0 if _lower_is_better(sort) else -1.0  # the best first
    rows.sort(
        key=lambda row: (row.values[sort] is None, sign * (row.values[sort] or 0.0), row.label)
    )
    return Leaderboard(
        rows=tuple(rows),
        keys=keys,
        protocols=protocols,
        sort_key=sort,
        mixed_data=data_problem is not None,
        left_out=left_out,
        repeats=tuple(sorted({k for r in runs if (k := run_repeats(r)) is not None})),
        mixed_passes=passes_problem is not None,
        mixed_modes=mode_problem is not None,
        mixed_tools=tools_problem is not None,
    )


def _label(key: str) -> str:
    return PASS_LABELS.get(key) or LIVE_METRIC_LABELS.get(key) or SHORT_NAMES[key]


def _fmt(key: str, v: float | None) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}" if is_share(key) else f"{v:.2f}"


def _cell(key: str, row: Row) -> str:
    v = row.values.get(key)
    ci = row.intervals.get(key)
    if v is None:
        return "-"
    if ci is None:
        return _fmt(key, v)
    return f"{_fmt(key, v)} [{_fmt(key, ci[0])}, {_fmt(key, ci[1])}]"


def _row_label(row: Row) -> str:
    extra = {"oracle": " (oracle)", "baseline": " (baseline)", "imported": " (imported)"}
    passes = f" [{row.passes}]" if row.passes else ""
    return row.label + extra.get(row.kind, "") + passes + ("" if row.complete else " *")


def _md(lb: Leaderboard, mixed: bool) -> str:
    data = ["data"] if lb.mixed_data else []
    mode = ["mode"] if lb.mixed_modes else []
    tools = ["tools"] if lb.mixed_tools else []
    texts = 2 + mixed + len(data) + len(mode) + len(tools)  # the text columns, then numbers
    head = ["#", "run", *(["protocol"] if mixed else []), *data, *mode, *tools, "tasks"]
    head += [_label(k) for k in lb.keys]
    out = [f"Table: {lb.caption}", "", "| " + " | ".join(head) + " |"]
    out.append("|" + "|".join(["---"] * texts + ["---:"] * (len(head) - texts)) + "|")
    for i, r in enumerate(lb.rows, 1):
        label = _row_label(r).replace("|", "\\|")
        cells = [str(i), label, *([r.protocol] if mixed else [])]
        cells += [r.data.replace("|", "\\|")] if data else []
        cells += [r.mode or "static"] if mode else []
        cells += [r.tools or "static"] if tools else []
        cells.append(str(r.num_tasks or "-"))
        cells += [_cell(k, r) for k in lb.keys]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def _csv(lb: Leaderboard) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    head = ["rank", "run", "kind", "protocol", "complete", "num_tasks", "data", "passes", "mode",
            "tools"]  # fmt: skip
    for k in lb.keys:
        head += [k, f"{k}_lo", f"{k}_hi"]
    w.writerow(head)
    for i, r in enumerate(lb.rows, 1):
        line: list[object] = [i, r.label, r.kind, r.protocol, r.complete, r.num_tasks, r.data,
                              r.passes, r.mode, r.tools]  # fmt: skip
        for k in lb.keys:
            v, ci = r.values.get(k), r.intervals.get(k)
            line += [
                "" if v is None else repr(v),
                "" if ci is None else repr(ci[0]),
                "" if ci is None else repr(ci[1]),
            ]
        w.writerow(line)
    return buf.getvalue()


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex(lb: Leaderboard, mixed: bool) -> str:
    texts = "l" * (mixed + lb.mixed_data + lb.mixed_modes + lb.mixed_tools)
    cols = "rl" + texts + "r" + "c" * len(lb.keys)
    head = ["\\#", "Run", *(["Protocol"] if mixed else []), *(["Data"] if lb.mixed_data else [])]
    head += ["Mode"] if lb.mixed_modes else []
    head += ["Tools"] if lb.mixed_tools else []
    head.append("Tasks")
    head += [latex_escape(_label(k)) for k in lb.keys]
    out = [
        "\\begin{table}[t]",
        "\\centering",
        "\\small",
        f"\\caption{{{latex_escape(lb.caption)}}}",
        "\\label{tab:medspot-leaderboard}",
        f"\\begin{{tabular}}{{{cols}}}",
        "\\hline",
        " & ".join(head) + " \\\\",
        "\\hline",
    ]
    for i, r in enumerate(lb.rows, 1):
        cells = [str(i), latex_escape(_row_label(r))]
        if mixed:
            cells.append(latex_escape(r.protocol))
        if lb.mixed_data:
            cells.append(latex_escape(r.data))
        if lb.mixed_modes:
            cells.append(latex_escape(r.mode or "static"))
        if lb.mixed_tools:
            cells.append(latex_escape(r.tools or "static"))
        cells.append(str(r.num_tasks or "-"))
        for k in lb.keys:
            v, ci = r.values.get(k), r.intervals.get(k)
            if v is None:
                cells.append("--")
            elif ci is None:
                cells.append(_fmt(k, v))
            else:
                cells.append(f"{_fmt(k, v)} {{\\scriptsize [{_fmt(k, ci[0])}, {_fmt(k, ci[1])}]}}")
        out.append(" & ".join(cells) + " \\\\")
    out += ["\\hline", "\\end{tabular}", "\\end{table}"]
    return "\n".join(out) + "\n"


def render(lb: Leaderboard, fmt: str = "md") -> str:
    mixed = len(lb.protocols) > 1
    if fmt == "md":
        return _md(lb, mixed)
    if fmt == "csv":
        return _csv(lb)
    if fmt == "latex":
        return _latex(lb, mixed)
    raise ConfigError(f"unknown leaderboard format {fmt!r}; one of: {', '.join(FORMATS)}")
