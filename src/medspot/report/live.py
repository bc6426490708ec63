"""The live section of the report: each live trajectory as a filmstrip (docs/live.md).

One frame per action: the screen the model saw, the intended element's box, the click point
(green when it hit the intended element, red when not), a drag as an arrow, a scroll as a
vertical arrow with its notches, typed text and keys in the caption, what changed (the screen,
the URL, the task's steps achieved) and the checks after the action; the final screen last.
Reads the task and step rows of a live run folder (`medspot.live.loop.results`); nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from medspot.report.thumbs import Thumb
from medspot.runfolder.reader import Run
from medspot.runfolder.schema import StepRow, TaskRow

__all__ = ["is_live", "live_images", "live_page", "live_page_name"]

_DEFAULT = (1280, 800)


def is_live(run: Run) -> bool:
    return (run.info.model_extra or {}).get("kind") == "live"


def live_page_name(i: int) -> str:
    return f"live-{i + 1}.html"


def _x(row: TaskRow | StepRow, key: str) -> Any:
    return (row.model_extra or {}).get(key)


def live_images(run: Run) -> list[str]:
    """The pictures the filmstrips show beyond the step rows' own: each task's final screen."""
    return [p for t in run.tasks if isinstance(p := _x(t, "final_screen"), str) and p]


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


def _overlay(s: StepRow, thumb: Thumb | None, e: Callable[[object], str]) -> str:
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
    a = _x(s, "live_action") or {}
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
    return "done"


def _frame(s: StepRow, thumb: Thumb | None, e: Callable[[object], str], last: bool) -> str:
    img = (
        f'<img src="{e(thumb.rel)}" width="{thumb.size[0]}" height="{thumb.size[1]}" '
        f'loading="lazy" alt="{e(s.image_path)}">'
        if thumb
        else ""
    )
    checks = _x(s, "checks") or {}
    changed = _x(s, "changed")
    notes = []
    achieved = _x(s, "achieved") or []
    if achieved:
        notes.append("achieved step " + ", ".join(str(k) for k in achieved))
    if changed is not None:
        notes.append("screen changed" if changed else "screen unchanged")
    if _x(s, "url_after") and _x(s, "url_after") != _x(s, "url"):
        notes.append(f"→ {_x(s, 'url_after')}")
    chk = []
    if "success" in checks:
        chk.append(f'<span class="badge {"hit" if checks["success"] else "other"}">success '
                   f'{"holds" if checks["success"] else "not yet"}</span>')  # fmt: skip
    for kind in checks.get("fail_if") or []:
        chk.append(f'<span class="badge miss">fail_if {e(kind)}</span>')
    if checks.get("done_if") is not None:
        chk.append(f"done_if {'holds' if checks['done_if'] else 'not yet'}")
    element = _x(s, "element") or {}
    hit_name = element.get("name") or element.get("role") or ""
    outcome = {"hit": "hit the intended element", "miss": "missed the intended element"}
    raw = (
        f'<details><summary>raw answer</summary><pre class="raw">{e(s.raw_output)}</pre></details>'
        if s.raw_output
        else ""
    )
    return (
        f'<figure class="step live out-{e(s.outcome)}{" ending" if last else ""}" '
        f'data-step="{e(s.step)}"><div class="frame{"" if thumb else " noimg"}">{img}'
        f"{_overlay(s, thumb, e)}</div><figcaption>action {s.position} (task step "
        f"{e(s.step_id)}) · <strong>{e(_action_text(_x(s, 'live_action')))}</strong>"
        f'<span class="instr">{e(s.instruction)}</span>'
        f'<span class="note">{e(outcome.get(s.outcome, s.outcome.replace("_", " ")))}'
        + (f" · on “{e(hit_name[:60])}”" if hit_name else "")
        + (f" · {e('; '.join(notes))}" if notes else "")
        + f"</span>{' '.join(chk)}{raw}</figcaption></figure>"
    )


def _task(t: TaskRow, thumbs: Mapping[str, Thumb], e: Callable[[object], str]) -> str:
    outcome = str(_x(t, "live_outcome") or t.status)
    frames = [_frame(s, thumbs.get(s.image_path), e, False) for s in t.steps]
    final = _x(t, "final_screen")
    if isinstance(final, str) and final:
        thumb = thumbs.get(final)
        img = (
            f'<img src="{e(thumb.rel)}" width="{thumb.size[0]}" height="{thumb.size[1]}" '
            f'loading="lazy" alt="final screen">'
            if thumb
            else ""
        )
        frames.append(
            f'<figure class="step live final out-{e(outcome)}"><div class="frame">{img}</div>'
            f"<figcaption><strong>final screen</strong> · {e(outcome)} · "
            f"{e(_x(t, 'live_reason') or '')}</figcaption></figure>"
        )
    rec = " · recovered after a miss" if _x(t, "recovered") else ""
    css = "completed" if outcome == "success" else "failed"
    return (
        f'<section class="task live {css}" id="{e(t.task_id)}" data-outcome="{e(outcome)}">'
        f"<h3>{e(t.task_id)} · {e(outcome)}{rec} · {_x(t, 'steps_used') or 0} actions "
        f"(oracle {_x(t, 'oracle_steps') or t.num_steps})</h3><p>{e(t.task_overview)}</p>"
        f'<div class="strip">{"".join(frames)}</div></section>'
    )


def live_page(
    run: Run,
    thumbs: Mapping[str, Thumb],
    *,
    page: Callable[[str, str], str],
    e: Callable[[object], str],
) -> str:
    """The filmstrip page of a live run; `page(title, body)` wraps it as the site does."""
    m = run.overall

    def pct(key: str) -> str:
        v = m.get(key)
        return "-" if not isinstance(v, int | float) else f"{100 * v:.1f}%"

    body = (
        f"<h1>{e(run.name)}: live trajectories</h1>"
        f"<p>Task success {pct('task_success_rate')} · harmful failures "
        f"{pct('harmful_failure_rate')} · recovery {pct('recovery_rate')} · intended-element "
        f"hits {pct('intended_hit_rate')}. Blue: the intended element; dot: the click "
        "(green: it hit the intended element, red: it missed); arrows: drags and scrolls.</p>"
        + "".join(_task(t, thumbs, e) for t in run.tasks)
    )
    return page(f"{run.name}: live trajectories", body)
