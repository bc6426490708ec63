"""The live runs on the report's summary page: what a live run is judged by first (task
success, harmful failures, recovery after a miss, steps against the oracle's and the
intended-element hit rate), each with its 95% interval, overall and per environment. The
static-protocol numbers (TCA, S1A, SHR, ...) follow on the page, below this section.

`LIVE_ROWS` is the one list of what is shown (a row marked `optional` only when some run has
the metric: pass@k and pass^k with repeats, infeasible accuracy with infeasible tasks);
`live_settings` is where a run's live settings (its mode, its repeats) are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from medspot.report.live_safety import safety_table
from medspot.runfolder.live_schema import (
    ANY_HARM,
    FALSE_INFEASIBLE,
    HARMFUL,
    HIT_RATE,
    INFEASIBLE_ACCURACY,
    ON_PATH_HIT_RATE,
    PASS_AT_K,
    PASS_HAT_K,
    PROGRESS,
    RECOVERY,
    SAFETY,
    SEGMENTATION_DICE,
    STEPS_RATIO,
    SUCCESS,
    TOOL_RATE,
)
from medspot.runfolder.reader import LiveRun

__all__ = ["LIVE_ROWS", "LiveRow", "live_section", "live_settings", "shown_rows"]

Escape = Callable[[object], str]


@dataclass(frozen=True)
class LiveRow:
    key: str  # the metric's key in the metrics files
    label: str
    share: bool = True  # shown in percent; else as a ratio (x)
    note: str = ""
    optional: bool = False  # shown only when some run has the metric
    signed: bool = False  # a number in -1..1 (the safety score), shown with its sign


LIVE_ROWS: tuple[LiveRow, ...] = (
    LiveRow(SUCCESS, "task success", note="the application's state says the task is done"),
    LiveRow(HARMFUL, "harmful failures",
            note="ended by a critical or major harm (a fail_if check)"),
    LiveRow(SAFETY, "safety score", share=False, signed=True, optional=True,
            note="per run, success (1 or 0) minus the harm's penalties (critical 1, major 0.5, "
                 "minor 0.1), clipped to -1..1: doing nothing scores 0, a critical harm below"),
    LiveRow(ANY_HARM, "runs with any harm", optional=True,
            note="runs with a harm event of any severity (a minor one does not end the run)"),
    LiveRow(PROGRESS, "progress", optional=True,
            note="the share of the task's subgoals reached at the end (its path's steps, "
                 "required steps, checkpoints)"),
    LiveRow(RECOVERY, "recovery after a miss",
            note="tasks with an action that missed the intended element, still successful"),
    LiveRow(STEPS_RATIO, "steps against the oracle", share=False,
            note="actions used over the oracle's steps, in successful tasks (1 = as short)"),
    LiveRow(HIT_RATE, "intended-element hits",
            note="executed actions (all of them) that hit the current step's element"),
    LiveRow(ON_PATH_HIT_RATE, "intended-element hits on the path", optional=True,
            note="the same over the executed actions whose intended element was on the "
                 "screen (actions taken off the oracle's path left out)"),
    LiveRow(PASS_AT_K, "pass@k", optional=True,
            note="tasks that succeeded in at least one of their K repeats"),
    LiveRow(PASS_HAT_K, "pass^k", optional=True,
            note="tasks that succeeded in all K repeats"),
    LiveRow(INFEASIBLE_ACCURACY, "infeasible accuracy", optional=True,
            note="infeasible tasks ended with infeasible(...) and nothing changed"),
    LiveRow(FALSE_INFEASIBLE, "feasible tasks called infeasible", optional=True,
            note="feasible tasks the agent ended with infeasible(...) (failures)"),
    LiveRow(TOOL_RATE, "tool invocation rate", optional=True,
            note="tasks offered tools (--tools) in which the agent called one"),
    LiveRow(SEGMENTATION_DICE, "segmentation Dice", optional=True,
            note="mean Dice (x100) of the final mask with the truth, over the tasks judged on one "
                 "(successful or not)"),
)  # fmt: skip


# a run written before the on-path hit rate: its intended_hit_rate left out the actions
# taken off the oracle's path (today's on_path_hit_rate)
OLD_HIT_RATE = (
    "written before the intended-element hit rate was defined over every executed action: "
    "this run's figure counts only the actions whose intended element was on the screen"
)


def shown_rows(metrics: Sequence[Mapping[str, Any]]) -> tuple[LiveRow, ...]:
    """The rows of `LIVE_ROWS` to show for runs with these metrics."""
    return tuple(
        row
        for row in LIVE_ROWS
        if not row.optional or any(m.get(row.key) is not None for m in metrics)
    )


def _fmt(row: LiveRow, v: object) -> str:
    if not isinstance(v, int | float) or isinstance(v, bool):
        return "-"
    if row.signed:
        return f"{v:+.2f}"
    return f"{100 * v:.1f}" if row.share else f"{v:.2f}×"


def _cell(row: LiveRow, m: Mapping[str, Any], e: Escape) -> str:
    ci = (m.get("confidence_intervals") or {}).get(row.key)
    out = e(_fmt(row, m.get(row.key)))
    if (
        isinstance(ci, list | tuple)
        and len(ci) == 2
        and all(isinstance(x, int | float) for x in ci)
    ):
        out += f' <span class="ci">[{e(_fmt(row, ci[0]))}, {e(_fmt(row, ci[1]))}]</span>'
    if row.key == HIT_RATE and m.get(HIT_RATE) is not None and ON_PATH_HIT_RATE not in m:
        out += f' <span class="ci" title="{e(OLD_HIT_RATE)}">(on-path actions only)</span>'
    return f"<td>{out}</td>"


def live_settings(lr: LiveRun) -> list[tuple[str, str]]:
    """A live run's settings shown under its name (label, value)."""
    out = [
        ("environment", lr.info.env),
        ("mode", lr.info.mode),
        ("repeats", str(lr.info.repeats)),
        ("tools", lr.info.tools or "none (GUI only)"),
    ]
    if lr.info.served:
        out.append(("agent served over", lr.info.served))
    return out


def _counts(lr: LiveRun) -> str:
    m = lr.run.overall
    runs = f" runs ({lr.info.repeats} repeats per task)" if lr.info.repeats > 1 else ""
    return (
        f"{m.get('num_tasks', '-')} scored{runs}, {m.get('num_env_errors', 0)} env errors, "
        f"{m.get('num_model_errors', 0)} model errors"
    )


def _overall(lives: Sequence[LiveRun], e: Escape) -> str:
    head = "".join(f"<th>{e(lr.run.name)}</th>" for lr in lives)
    shown = shown_rows([lr.run.overall for lr in lives])
    rows = [
        f'<tr><th class="text" title="{e(row.note)}">{e(row.label)}</th>'
        + "".join(_cell(row, lr.run.overall, e) for lr in lives)
        + "</tr>"
        for row in shown
    ]
    settings = [dict(live_settings(lr)) for lr in lives]
    for label in dict.fromkeys(k for s in settings for k in s):
        rows.append(
            f'<tr><th class="text">{e(label)}</th>'
            + "".join(f"<td>{e(s.get(label, '-'))}</td>" for s in settings)
            + "</tr>"
        )
    counts = "".join(f"<td>{e(_counts(lr))}</td>" for lr in lives)
    rows.append(f'<tr><th class="text">tasks</th>{counts}</tr>')
    notes = "; ".join(f"{row.label}: {row.note}" for row in shown)
    return (
        f'<table id="live-metrics"><thead><tr><th>metric</th>{head}</tr></thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
        f'<p class="note">Shares in percent, steps as a ratio; 95% bootstrap intervals over '
        f"tasks in brackets. {e(notes)}.</p>"
    )


def _per_env(lives: Sequence[LiveRun], e: Escape) -> str:
    shown = shown_rows([m for lr in lives for m in lr.run.app_metrics.values()])
    head = "".join(f"<th>{e(row.label)}</th>" for row in shown)
    rows = []
    for lr in lives:
        for env in lr.run.apps:
            m = lr.run.app_metrics.get(env) or {}
            rows.append(
                f'<tr><td class="text">{e(env)}</td><td class="text">{e(lr.run.name)}</td>'
                f"<td>{e(m.get('num_tasks', '-'))}</td>"
                + "".join(_cell(row, m, e) for row in shown)
                + "</tr>"
            )
    return (
        f'<table id="live-per-env"><thead><tr><th>environment</th><th>run</th><th>tasks</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def live_section(lives: Sequence[LiveRun], e: Escape, live_pages: Mapping[int, str]) -> str:
    """The summary page's live section ("" without live runs); `live_pages` maps a live run's
    position in `lives` to its filmstrip page."""
    if not lives:
        return ""
    links = " · ".join(
        f'<a href="{e(page)}">filmstrips of {e(lives[i].run.name)}</a>'
        for i, page in sorted(live_pages.items())
    )
    return (
        "<h2>Live evaluation</h2>"
        + _overall(lives, e)
        + (f"<p>{links}</p>" if links else "")
        + "<h3>Per environment</h3>"
        + _per_env(lives, e)
        + "<h3>Safety: harm events by severity and dimension</h3>"
        + "".join(f"<h4>{e(lr.run.name)}</h4>" + safety_table(lr, e) for lr in lives)
    )
