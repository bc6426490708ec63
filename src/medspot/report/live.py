"""The live section of the report: each live trajectory as a filmstrip (docs/live/metrics.md "Run
folder").

One frame per action: the screen the model saw, the intended element's box, the click point
(green when it hit the intended element, red when not), a drag as an arrow, a scroll as a
vertical arrow with its notches, typed text and keys in the caption, the agent's thought when
it wrote one, what changed (the screen, the URL, the task's steps achieved) and the checks
after the action; the final screen last, with the typed ending (the agent said done, or
infeasible and why; the budget was spent; the checks ended it; an error). The header names the
run's mode and, with repeats, pass@k / pass^k and a table of each task's success over its K
runs (each run is a strip of its own); the safety section follows it (`report.live_safety`:
the harm by severity and dimension, each harmful step with the screen it left behind), and
each frame shows the harm recorded at its action. A click on a frame opens the full screenshot.
Reads live runs through `medspot.runfolder.live_schema` (the writer's types); nothing else.

Places to extend: `run_header` (the run's settings above the strips), `frame_notes` (text
beside one frame), `task_ending` (how a task ended), `task_heading`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from medspot.errors import ConfigError
from medspot.report.live_safety import harm_badges, harmful_steps, safety_table
from medspot.report.text import shorten
from medspot.report.thumbs import Thumb
from medspot.runfolder.live_schema import LiveRunInfo, LiveStepRow, LiveTaskRow
from medspot.runfolder.reader import LiveRun, Run, live_view

__all__ = [
    "frame_notes",
    "is_live",
    "live_images",
    "live_page",
    "live_page_name",
    "repeat_table",
    "run_header",
    "task_ending",
    "task_heading",
]

Escape = Callable[[object], str]
_DEFAULT = (1280, 800)
ELEMENT_TEXT = 60  # characters of an element's name in a caption
THOUGHT_TEXT = 160  # characters of a thought shown beside a frame (the whole text unfolds)


def is_live(run: Run) -> bool:
    return live_view(run) is not None


def live_page_name(i: int) -> str:
    return f"live-{i + 1}.html"


def live_images(run: Run) -> list[str]:
    """The pictures the filmstrips show beyond the step rows' own: each task's final screen."""
    lr = live_view(run)
    return [t.final_screen for t in lr.tasks if t.final_screen] if lr else []


def _arrow(x1: float, y1: float, x2: float, y2: float, size: float, cls: str) -> str:
    ang = math.atan2(y2 - y1, x2 - x1)
    a1, a2 = ang + math.radians(150), ang - math.radians(150)
    head = (
        f"{x2:.1f},{y2:.1f} {x2 + size * math.cos(a1):.1f},{y2 + size * math.sin(a1):.1f} "
        f"{x2 + size * math.cos(a2):.1f},{y2 + size * math.sin(a2):.1f}"
    )
    return (
        f'<line class="{cls}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
        f'vector-effect="non-scaling-stroke"/><polygon class="{cls} head" points="{head}"/>'
    )


def _overlay(s: LiveStepRow, thumb: Thumb | None, e: Escape) -> str:
    w, h = thumb.original if thumb else (s.image_size or _DEFAULT)
    w, h = max(1, w), max(1, h)
    r = 0.012 * max(w, h)
    parts = []
    for b in s.target_boxes:
        parts.append(
            f'<rect class="box" x="{b[0] * w:.1f}" y="{b[1] * h:.1f}" '
            f'width="{(b[2] - b[0]) * w:.1f}" height="{(b[3] - b[1]) * h:.1f}" '
            'vector-effect="non-scaling-stroke"/>'
        )
    a = s.live_action or {}
    cls = "hit" if s.hit else ("miss" if s.hit is False else "other")
    kind = a.get("kind")
    if kind == "drag":
        parts.append(_arrow(a["x1"], a["y1"], a["x2"], a["y2"], 2.2 * r, f"drag {cls}"))
        parts.append(f'<circle class="click {cls}" cx="{a["x1"]:.1f}" cy="{a["y1"]:.1f}" '
                     f'r="{0.6 * r:.1f}"/>')  # fmt: skip
    elif kind == "scroll":
        dy = int(a.get("dy", 0))
        y2 = a["y"] + (1 if dy >= 0 else -1) * 4 * r
        parts.append(_arrow(a["x"], a["y"], a["x"], y2, 1.6 * r, f"scroll {cls}"))
        parts.append(
            f'<text class="scrolltext" x="{a["x"] + 1.2 * r:.1f}" y="{a["y"]:.1f}" '
            f'font-size="{2.2 * r:.0f}">{e(f"{dy:+d}")}</text>'
        )
    elif kind == "click":
        parts.append(f'<circle class="click {cls}" cx="{a["x"]:.1f}" cy="{a["y"]:.1f}" '
                     f'r="{r:.1f}"/>')  # fmt: skip
        if a.get("double"):
            parts.append(f'<circle class="ring {cls}" cx="{a["x"]:.1f}" cy="{a["y"]:.1f}" '
                         f'r="{1.7 * r:.1f}"/>')  # fmt: skip
    return (
        f'<svg class="overlay" viewBox="0 0 {w} {h}" preserveAspectRatio="none" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )


def _action_text(a: Mapping[str, Any] | None) -> str:
    if not a:
        return "no action read"
    kind = a.get("kind")
    if kind == "click":
        name = "double click" if a.get("double") else f"{a.get('button', 'left')} click"
        return f"{name} ({a['x']:.0f}, {a['y']:.0f})"
    if kind == "drag":
        return f"drag ({a['x1']:.0f}, {a['y1']:.0f}) → ({a['x2']:.0f}, {a['y2']:.0f})"
    if kind == "scroll":
        return f"scroll {a['dy']:+d} at ({a['x']:.0f}, {a['y']:.0f})"
    if kind == "type":
        return f"type “{a.get('text', '')}”"
    if kind == "key":
        return f"key {a.get('key', '')}"
    if kind == "infeasible":
        return f"infeasible(“{a.get('reason', '')}”)"
    if kind == "tool":  # the tools track: a tool over the application's API
        args = json.dumps(a.get("args") or {}, ensure_ascii=False, sort_keys=True)
        return f"tool {a.get('name', '')} {args}"
    return str(kind or "done")


def _picture(thumb: Thumb | None, full: str | None, alt: str, e: Escape, overlay: str = "") -> str:
    """The frame: the thumbnail (with its overlay); a link to the full screenshot when the
    report holds it; without a thumbnail, a note naming the screenshot that is missing (`alt`,
    its path in the run folder)."""
    img = (
        f'<img src="{e(thumb.rel)}" width="{thumb.size[0]}" height="{thumb.size[1]}" '
        f'loading="lazy" alt="{e(alt)}">'
        if thumb
        else f'<p class="nopic">screenshot missing: {e(alt)}</p>'
    )
    frame = f'<div class="frame{"" if thumb else " noimg"}">{img}{overlay}</div>'
    if full and thumb:
        return (
            f'<a class="full" href="{e(full)}" target="_blank" rel="noopener" '
            f'title="open the full screenshot">{frame}</a>'
        )
    return frame


def _unfolding(label: str, text: str, e: Escape) -> str:
    short = shorten(text, THOUGHT_TEXT)
    if short == " ".join(text.split()):
        return f'<span class="thought">{label}: {e(short)}</span>'
    return (
        f'<details class="thought"><summary>{label}: {e(short)}</summary>'
        f'<pre class="raw">{e(text)}</pre></details>'
    )


def frame_notes(s: LiveStepRow, e: Escape) -> str:
    """What is shown beside one frame below its action and outcome: the agent's thought when
    it wrote one, what a tool call returned (the tools track); each shortened, the whole text
    unfolds. Agents' further per-frame text goes here."""
    out = _unfolding("thought", s.thought, e) if s.thought else ""
    tool = s.tool_result or {}
    if "error" in tool:
        out += _unfolding("tool error", str(tool["error"]), e)
    elif tool.get("text"):
        out += _unfolding("tool result", str(tool["text"]), e)
    return out


def _effects(s: LiveStepRow, e: Escape) -> str:
    """One readable note: the outcome, the element hit, the steps achieved, what changed."""
    outcome = {"hit": "hit the intended element", "miss": "missed the intended element"}
    parts = [outcome.get(s.outcome, s.outcome.replace("_", " "))]
    element = s.element or {}
    name = str(element.get("name") or element.get("role") or "")
    if name:
        parts.append(f"on “{shorten(name, ELEMENT_TEXT)}”")
    if s.achieved:
        parts.append("achieved step " + ", ".join(str(k) for k in s.achieved))
    if s.changed is not None:
        parts.append("screen changed" if s.changed else "screen unchanged")
    if s.url_after and s.url_after != s.url:
        parts.append(f"→ {s.url_after}")
    if s.replayed:
        parts.append("answer replayed from the journal")
    if s.not_executed:
        parts.append(f"not executed: {s.not_executed}")
    return f'<span class="note">{e(" · ".join(parts))}</span>'


def _checks(s: LiveStepRow, e: Escape) -> str:
    checks = s.checks
    chk = []
    if "success" in checks:
        chk.append(f'<span class="badge {"hit" if checks["success"] else "other"}">success '
                   f'{"holds" if checks["success"] else "not yet"}</span>')  # fmt: skip
    for kind in checks.get("fail_if") or []:
        chk.append(f'<span class="badge miss">fail_if {e(kind)}</span>')
    if checks.get("done_if") is not None:
        chk.append(f"done_if {'holds' if checks['done_if'] else 'not yet'}")
    if s.harms:
        chk.append(harm_badges(s.harms, e))
    return " ".join(chk)


def _frame(s: LiveStepRow, thumb: Thumb | None, full: str | None, e: Escape, last: bool) -> str:
    raw = (
        f'<details><summary>raw answer</summary><pre class="raw">{e(s.raw_output)}</pre></details>'
        if s.raw_output
        else ""
    )
    step = f" (task step {e(s.step_id)})" if s.step_id is not None else ""
    return (
        f'<figure class="step live out-{e(s.outcome)}{" ending" if last else ""}" '
        f'data-step="{e(s.step)}">{_picture(thumb, full, s.image_path, e, _overlay(s, thumb, e))}'
        f"<figcaption>action {s.position}{step} · "
        f"<strong>{e(_action_text(s.live_action))}</strong>"
        f'<span class="instr">{e(s.instruction)}</span>{_effects(s, e)}{frame_notes(s, e)}'
        f"{_checks(s, e)}{raw}</figcaption></figure>"
    )


ENDINGS = {
    "done": "the agent said done",
    "infeasible": "the agent said infeasible",
    "budget": "the budget of actions was spent",
    "checks": "the application's state ended it",
    "abandoned": "the agent left before the task ended (a served agent disconnected)",
    "error": "a model call failed (asked again on resume)",
    "env_error": "the environment kept failing",
    "missing": "not run yet",
}


def ending_text(t: LiveTaskRow) -> str:
    """The typed ending in words ("" for a folder written before typed endings)."""
    if t.ending is None:
        return ""
    text = ENDINGS[t.ending]
    if t.ending == "infeasible":
        text += f": “{t.ending_reason or ''}”"
    return text


def task_ending(t: LiveTaskRow, e: Escape) -> str:
    """How the task ended, under its final screen: the typed ending (done / infeasible and the
    agent's reason / budget / checks / error), the outcome and the runner's reason."""
    ending = ending_text(t)
    typed = (
        f'<span class="ending" data-ending="{e(t.ending)}">{e(ending)}</span> · ' if ending else ""
    )
    reason = f" · {e(t.live_reason)}" if t.live_reason else ""
    return f"<strong>final screen</strong> · {typed}{e(t.live_outcome)}{reason}"


def _fraction(t: LiveTaskRow) -> str:
    if t.task_runs_scored is None or t.task_successes is None:
        return "-"
    return f"{t.task_successes}/{t.task_runs_scored}"


def task_heading(t: LiveTaskRow, e: Escape) -> str:
    rec = " · recovered after a miss" if t.recovered else ""
    infeasible = " · infeasible task" if t.infeasible_task else ""
    rep = (
        f" · run {t.repeat + 1} of {t.repeats} (task success {_fraction(t)})"
        if t.repeats > 1
        else ""
    )
    dice = f" · Dice {t.dice:.3f}" if t.dice is not None else ""
    safety = f" · safety {t.safety_score:+.2f}" if t.safety_score is not None else ""
    progress = (
        f" · progress {t.subgoals_reached}/{t.subgoals} subgoals"
        + (f" (first missed: {t.first_failed_subgoal})" if t.first_failed_subgoal else "")
        if t.subgoals
        else ""
    )
    return (
        f"{e(t.task_id)}{infeasible}{e(rep)} · {e(t.live_outcome)}{rec} · {t.steps_used} actions "
        f"(oracle {t.oracle_steps or t.num_steps}){e(dice)}{e(safety)}{e(progress)}"
    )


def repeat_table(lr: LiveRun, e: Escape) -> str:
    """With repeats: each task's successes over its K runs and how each run ended (a run
    of an interrupted folder that never started: "not run")."""
    if lr.info.repeats <= 1:
        return ""
    by_task: dict[str, list[LiveTaskRow]] = {}
    for t in lr.tasks:
        by_task.setdefault(t.task or t.task_id, []).append(t)
    rows = []
    for task, runs in by_task.items():
        first = runs[0]
        frac = first.success_fraction
        by_repeat = {t.repeat: t for t in runs}
        cells = "".join(
            f'<td><a href="#{e(t.task_id)}">{e(t.live_outcome)}</a>'
            f"{f' · {e(t.ending)}' if t.ending else ''}</td>"
            if t is not None
            else "<td>not run</td>"
            for t in (by_repeat.get(k) for k in range(lr.info.repeats))
        )
        rows.append(
            f'<tr><td class="text">{e(task)}</td><td>{e(_fraction(first))}</td>'
            f"<td>{'-' if frac is None else f'{100 * frac:.0f}%'}</td>{cells}</tr>"
        )
    heads = "".join(f"<th>run {k + 1}</th>" for k in range(lr.info.repeats))
    return (
        f'<table id="live-repeats"><thead><tr><th>task</th><th>successes</th><th>share</th>'
        f"{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _task(t: LiveTaskRow, thumbs: Mapping[str, Thumb], full: Mapping[str, str], e: Escape) -> str:
    frames = [_frame(s, thumbs.get(s.image_path), full.get(s.image_path), e, False)
              for s in t.steps]  # fmt: skip
    if t.final_screen:
        pic = _picture(thumbs.get(t.final_screen), full.get(t.final_screen), t.final_screen, e)
        frames.append(
            f'<figure class="step live final out-{e(t.live_outcome)}">{pic}'
            f"<figcaption>{task_ending(t, e)}</figcaption></figure>"
        )
    css = "completed" if t.live_outcome == "success" else "failed"
    return (
        f'<section class="task live {css}" id="{e(t.task_id)}" data-outcome="{e(t.live_outcome)}">'
        f"<h3>{task_heading(t, e)}</h3><p>{e(t.task_overview)}</p>"
        f'<div class="strip">{"".join(frames)}</div></section>'
    )


def run_header(lr: LiveRun, e: Escape) -> str:
    """The run's headline numbers and settings above the filmstrips (the mode: guided, told
    each step; agent, the goal only). Further settings of a live run are shown here."""
    m = lr.run.overall

    def pct(key: str) -> str:
        v = m.get(key)
        return "-" if not isinstance(v, int | float) else f"{100 * v:.1f}%"

    def ci(key: str, scale: float = 100, digits: int = 1) -> str:
        iv = (m.get("confidence_intervals") or {}).get(key)
        if not isinstance(iv, list | tuple) or len(iv) != 2:
            return ""
        return f" [{scale * iv[0]:.{digits}f}, {scale * iv[1]:.{digits}f}]"

    def num(key: str) -> str:
        v = m.get(key)
        return "-" if not isinstance(v, int | float) else f"{v:+.2f}"

    info = lr.info
    k = info.repeats
    mode = "guided: told each step" if info.mode == "guided" else "agent: the goal only"
    count = f"{len(lr.tasks)} tasks"
    if k > 1:
        count = f"{len({t.task or t.task_id for t in lr.tasks})} tasks × {k} repeats"
    extra = []
    if k > 1:
        extra.append(
            f"pass@{k} {pct('pass_at_k')}{ci('pass_at_k')} (some run succeeded) · "
            f"pass^{k} {pct('pass_hat_k')}{ci('pass_hat_k')} (all {k} succeeded)"
        )
    if m.get("infeasible_accuracy") is not None:
        extra.append(
            f"infeasible accuracy {pct('infeasible_accuracy')} (infeasible tasks ended with "
            "infeasible(...), nothing changed)"
        )
    if m.get("safety_score") is not None:
        progress = (
            f" · progress {pct('progress')}{ci('progress')} (subgoals reached)"
            if m.get("progress") is not None
            else ""
        )
        extra.append(
            f"safety score {num('safety_score')}{ci('safety_score', 1, 2)} (success minus the "
            f"harm's penalties, -1..1) · runs with any harm {pct('any_harm_rate')}{progress}"
        )
    extra_p = f'<p class="live-repeats">{e(" · ".join(extra))}</p>' if extra else ""
    return (
        f'<p class="live-settings">{e(info.env)} · mode {e(mode)} · {e(count)}</p>'
        + f'<p class="live-executor">{e(executor_text(info))}</p>'
        + extra_p
        + f"<p>Task success {pct('task_success_rate')} · harmful failures "
        f"{pct('harmful_failure_rate')} · recovery {pct('recovery_rate')} · intended-element "
        f"hits {pct('intended_hit_rate')}. Blue: the intended element; dot: the click "
        "(green: it hit the intended element, red: it missed); arrows: drags and scrolls. "
        "A click on a frame opens the full screenshot.</p>"
    )


def executor_text(info: LiveRunInfo) -> str:
    """Where the environments ran: the executor, and with containers the engine and each
    environment's image (digest, medspot inside, the application's packages)."""
    c = info.container
    if info.executor != "container" or c is None:
        return f"executor {info.executor}"
    parts = [f"executor container ({c.engine} {c.engine_version})"]
    for env, img in sorted(c.images.items()):
        versions = ", ".join(f"{p} {v}" for p, v in sorted(img.packages.items()) if v)
        parts.append(
            f"{env}: image {img.ref}, id {img.id}, digest {img.digest or '-'}, medspot "
            f"{img.medspot_version} ({img.source})"
            + ("" if img.pinned else ", unpinned")
            + (f"; {versions}" if versions else "")
        )
    return " · ".join(parts)


def live_page(
    run: Run,
    thumbs: Mapping[str, Thumb],
    *,
    page: Callable[[str, str], str],
    e: Escape,
    full: Mapping[str, str] | None = None,
) -> str:
    """The filmstrip page of a live run; `page(title, body)` wraps it as the site does;
    `full` maps an image path to the full screenshot in the report folder."""
    lr = live_view(run)
    if lr is None:
        raise ConfigError(f"{run.path} is not a live run")
    body = (
        f"<h1>{e(run.name)}: live trajectories</h1>"
        + run_header(lr, e)
        + repeat_table(lr, e)
        + '<section id="live-safety"><h2>Safety</h2>'
        + safety_table(lr, e)
        + "<h3>Harmful steps (the screen each action left behind)</h3>"
        + harmful_steps(lr, thumbs, full or {}, e)
        + "</section>"
        + "".join(_task(t, thumbs, full or {}, e) for t in lr.tasks)
    )
    return page(f"{run.name}: live trajectories", body)
