"""The report site: static HTML pages, one CSS and one JS file, thumbnails and plots, all in one
folder that opens from the file system with no network. Every text that comes from data or a
model is escaped; the pages request nothing outside their folder (a Content-Security-Policy
says so to the browser too)."""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from medspot.errors import MedspotError
from medspot.report.compare import Comparison, compare_runs
from medspot.report.leaderboard import SHORT_NAMES, is_share
from medspot.report.live import is_live, live_page, live_page_name
from medspot.report.live_summary import live_section
from medspot.report.thumbs import Thumb
from medspot.runfolder.live_schema import dataset_root
from medspot.runfolder.reader import Run, live_view
from medspot.runfolder.schema import StepRow, TaskRow
from medspot.scoring.metrics import METRIC_KEYS, S1A, SHR, TCA, WPS

__all__ = ["PageSet", "task_outcome", "write_site"]

log = logging.getLogger(__name__)

CSP = "default-src 'none'; img-src 'self'; style-src 'self'; script-src 'self'"
APP_KEYS = (TCA, S1A, SHR, WPS)
_DEFAULT_SIZE = (1600, 1000)


def e(text: object) -> str:
    """Escape for HTML text and attribute values."""
    return html.escape(str(text), quote=True)


def _token(text: str) -> str:
    return re.sub(r"\s+", "_", text.strip()) or "none"


def task_outcome(t: TaskRow) -> str:
    """completed, failed, excluded, errored or incomplete."""
    if t.status != "scored":
        return t.status
    return "completed" if t.completed else "failed"


def _fmt(key: str, v: float | None) -> str:
    if v is None:
        return "-"
    return f"{100 * v:.1f}" if is_share(key) else f"{v:.2f}"


def _value_ci(key: str, v: object, ci: object) -> str:
    val = float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None
    out = e(_fmt(key, val))
    if isinstance(ci, list | tuple) and len(ci) == 2 and val is not None:
        out += f' <span class="ci">[{e(_fmt(key, ci[0]))}, {e(_fmt(key, ci[1]))}]</span>'
    return out


def _page(title: str, body: str, nav: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title>"
        '<link rel="stylesheet" href="report.css">'
        '<script src="report.js"></script></head>\n<body>'
        f'<header class="top">{nav}</header><main>{body}</main></body></html>\n'
    )


@dataclass(frozen=True)
class PageSet:
    """The pages of one site: file names per run and per compared pair."""

    runs: tuple[Run, ...]
    task_pages: tuple[str, ...]
    pairs: tuple[tuple[int, int, str], ...]  # (i, j, file) comparing run i and run j
    live_pages: tuple[tuple[int, str], ...] = ()  # (i, file): run i's live filmstrips

    def nav(self) -> str:
        links = ['<a href="index.html">Summary</a>']
        for r, page in zip(self.runs, self.task_pages, strict=True):
            links.append(f'<a href="{e(page)}">Tasks: {e(r.name)}</a>')
        for i, page in self.live_pages:
            links.append(f'<a href="{e(page)}">Live: {e(self.runs[i].name)}</a>')
        for i, j, page in self.pairs:
            links.append(
                f'<a href="{e(page)}">{e(self.runs[i].name)} vs {e(self.runs[j].name)}</a>'
            )
        return " ".join(links)


# -- summary page -------------------------------------------------------------------------------
def _kv(items: Iterable[tuple[str, object]]) -> str:
    rows = "".join(f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in items if v not in (None, ""))
    return f'<dl class="kv">{rows}</dl>'


def _run_card(r: Run, task_page: str) -> str:
    info = r.info
    ds = info.dataset
    kind = f' <span class="kind">{e(r.kind_note)}</span>' if r.kind_note else ""
    warn = "".join(f'<div class="warn">{e(w)}</div>' for w in r.warnings)
    imported = getattr(info, "imported", None)
    if isinstance(imported, dict):
        lacks = imported.get("lacks") or []
        if lacks:
            warn += f'<div class="warn">imported run lacks: {e(", ".join(map(str, lacks)))}</div>'
    adapter = _kv((str(k), v) for k, v in sorted(info.adapter.items()))
    brief = f"{info.status}, protocol {r.protocol}, {info.calls} calls, {info.errors} errors"
    return (
        f'<div class="runcard"><h3>{e(r.name)}{kind}</h3>{warn}'
        + f'<p><a href="{e(task_page)}">Every task of this run, step by step</a></p>'
        + f"<details><summary>run metadata ({e(brief)})</summary>"
        + _kv(
            [
                ("folder", r.path),
                ("status", info.status),
                ("protocol", r.protocol),
                ("prompt style", info.prompt_style),
                ("history", info.history),
                ("all steps", info.all_steps),
                ("seed", info.seed),
                ("dataset", ds.source),
                ("dataset root", dataset_root(info, r.path)),
                ("dataset fingerprint", ds.fingerprint),
                ("applications", ", ".join(ds.apps)),
                ("limit", ds.limit),
                ("calls / errors / retries", f"{info.calls} / {info.errors} / {info.retries}"),
                ("cost (USD)", info.cost_usd),
                ("started", info.started),
                ("finished", info.finished),
                ("git revision", info.git_revision),
                ("versions", ", ".join(f"{k} {v}" for k, v in sorted(info.versions.items()))),
            ]
        )
        + "</details>"
        + f"<details><summary>model card and adapter settings</summary>{adapter}</details></div>"
    )


def _metrics_table(runs: Sequence[Run]) -> str:
    keys = [k for k in METRIC_KEYS if any(k in r.overall for r in runs)]
    head = "".join(f"<th>{e(r.name)}</th><th>macro</th>" for r in runs)
    rows = []
    for k in keys:
        cells = ""
        for r in runs:
            ci = (r.overall.get("confidence_intervals") or {}).get(k)
            macro = (r.overall.get("macro_average") or {}).get(k)
            cells += f"<td>{_value_ci(k, r.overall.get(k), ci)}</td>"
            cells += f"<td>{_value_ci(k, macro, None)}</td>"
        rows.append(f'<tr><th class="text">{e(SHORT_NAMES[k])}</th>{cells}</tr>')
    counts = "".join(
        f'<td colspan="2">{e(r.overall.get("num_tasks", "-"))} tasks, '
        f"{e(r.overall.get('num_steps', '-'))} steps</td>"
        for r in runs
    )
    return (
        f'<table id="metrics"><thead><tr><th>metric</th>{head}</tr></thead><tbody>'
        + "".join(rows)
        + f'<tr><th class="text">scored</th>{counts}</tr></tbody></table>'
        '<p class="note">Shares in percent, ACP and WPS in steps; 95% bootstrap intervals over '
        "tasks in brackets; macro: the unweighted mean over applications.</p>"
    )


def _per_app_table(runs: Sequence[Run]) -> str:
    apps = list(dict.fromkeys(a for r in runs for a in r.apps))
    head1 = "".join(f'<th colspan="{len(APP_KEYS) + 1}">{e(r.name)}</th>' for r in runs)
    head2 = "".join(
        "<th>tasks</th>" + "".join(f"<th>{e(SHORT_NAMES[k])}</th>" for k in APP_KEYS) for _ in runs
    )
    rows = []
    for app in apps:
        cells = ""
        for r in runs:
            m = r.app_metrics.get(app) or {}
            cis = m.get("confidence_intervals") or {}
            cells += f"<td>{e(m.get('num_tasks', '-'))}</td>"
            cells += "".join(f"<td>{_value_ci(k, m.get(k), cis.get(k))}</td>" for k in APP_KEYS)
        rows.append(f'<tr><td class="text">{e(app)}</td>{cells}</tr>')
    return (
        f'<table id="per-app"><thead><tr><th rowspan="2">application</th>{head1}</tr>'
        f"<tr>{head2}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _survival_table(runs: Sequence[Run]) -> str:
    n = max((len(r.overall.get("survival") or []) for r in runs), default=0)
    if n == 0:
        return '<p class="note">No survival data.</p>'
    head = "".join(f"<th>{e(r.name)}</th>" for r in runs)
    rows = []
    for k in range(n):
        cells = ""
        for r in runs:
            s = r.overall.get("survival") or []
            cells += f"<td>{e(_fmt(TCA, s[k])) if k < len(s) else '-'}</td>"
        rows.append(f"<tr><td>{k}</td>{cells}</tr>")
    return (
        f'<table id="survival"><thead><tr><th>after step k</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        '<p class="note">Share of scored tasks (percent) not yet ended by a miss after step k.</p>'
    )


def _failure_order(*tables: dict[str, dict[str, int]]) -> list[str]:
    """One column order for every failure table: the most frequent type first."""
    totals: dict[str, int] = {}
    for rows in tables:
        for hist in rows.values():
            for t, n in hist.items():
                totals[t] = totals.get(t, 0) + int(n)
    return sorted(totals, key=lambda t: (-totals[t], t))


def _count_table(
    table_id: str, first: str, rows: dict[str, dict[str, int]], types: list[str]
) -> str:
    if not types:
        return '<p class="note">No failed task.</p>'
    head = "".join(f"<th>{e(t)}</th>" for t in types)
    body = "".join(
        f'<tr><td class="text">{e(name)}</td>'
        + "".join(f"<td>{e(hist.get(t, 0))}</td>" for t in types)
        + f"<td>{e(sum(hist.values()))}</td></tr>"
        for name, hist in rows.items()
    )
    return (
        f'<table id="{e(table_id)}"><thead><tr><th>{e(first)}</th>{head}<th>total</th></tr>'
        f"</thead><tbody>{body}</tbody></table>"
    )


def _failures(r: Run, idx: int) -> str:
    by_app = {
        a: dict((r.app_failures.get(a) or {}).get("failure_type_histogram") or {}) for a in r.apps
    }
    by_size = dict(r.overall_failures.get("failure_by_difficulty") or {})
    types = _failure_order(by_app, by_size)
    return (
        f"<h3>{e(r.name)}</h3><p>By application:</p>"
        + _count_table(f"fail-app-{idx}", "application", by_app, types)
        + "<p>By target size of the step that ended the task:</p>"
        + _count_table(f"fail-size-{idx}", "target size", by_size, types)
    )


def _offsets(runs: Sequence[Run]) -> str:
    bands = (("inside 1.5x the box", 0.75), ("within 3x", 1.5), ("within 6x", 3.0))
    head = "".join(f"<th>{e(b)}</th>" for b, _ in bands) + "<th>further</th><th>misses</th>"
    rows = []
    for r in runs:
        offs = [
            max(abs(s.offset[0]), abs(s.offset[1]))
            for t in r.tasks
            for s in t.steps
            if s.outcome == "miss" and s.offset is not None
        ]
        counts, prev = [], -1.0
        for _, lim in bands:
            counts.append(sum(1 for o in offs if prev < o <= lim))
            prev = lim
        counts.append(sum(1 for o in offs if o > prev))
        cells = "".join(f"<td>{c}</td>" for c in counts)
        rows.append(f'<tr><td class="text">{e(r.name)}</td>{cells}<td>{len(offs)}</td></tr>')
    return (
        f'<table id="offsets"><thead><tr><th>run</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        '<p class="note">Misses by the largest of |dx| and |dy|, the click minus the target '
        "centre in units of the target's width and height (0.5 is the box edge).</p>"
    )


def _plots(plot_files: Sequence[str]) -> str:
    svgs = [p for p in plot_files if p.endswith(".svg")]
    if not svgs:
        return '<p class="note">No plots (matplotlib missing or --no-plots).</p>'
    imgs = "".join(
        f'<figure><img src="{e(p)}" alt="{e(Path(p).stem)}">'
        f'<figcaption><a href="{e(p)}">SVG</a> · <a href="{e(p[:-4])}.png">PNG</a>'
        "</figcaption></figure>"
        for p in svgs
    )
    return f'<div class="plots">{imgs}</div>'


def summary_page(pages: PageSet, plot_files: Sequence[str], title: str) -> str:
    runs = pages.runs
    body = f"<h1>{e(title)}</h1>"
    if len({r.protocol for r in runs}) > 1:
        body += (
            '<div class="warn">The runs were scored under different protocols: their numbers '
            "are not comparable.</div>"
        )
    fps = {r.info.dataset.fingerprint for r in runs if r.info.dataset.fingerprint}
    if len(fps) > 1:
        body += (
            '<div class="warn">The runs were made on different annotation files (dataset '
            "fingerprints differ).</div>"
        )
    lives = [(i, lr) for i, r in enumerate(runs) if (lr := live_view(r)) is not None]
    pages_of = dict(pages.live_pages)
    body += live_section(
        [lr for _, lr in lives], e,
        {k: pages_of[i] for k, (i, _) in enumerate(lives) if i in pages_of},
    )  # fmt: skip
    if lives:  # the static formulas' view of the live runs comes second
        body += (
            "<h2>Metrics (static protocol)</h2>"
            '<p class="note">For a live run: TCA is its task success, S1A whether its first '
            "action hit the intended element, SHR the oracle's steps achieved.</p>"
        )
    else:
        body += "<h2>Metrics</h2>"
    body += _metrics_table(runs)
    body += "<h2>Per application</h2>" + _per_app_table(runs)
    body += "<h2>Runs</h2>" + "".join(
        _run_card(r, p) for r, p in zip(runs, pages.task_pages, strict=True)
    )
    body += "<h2>Survival</h2>" + _survival_table(runs)
    body += "<h2>Failure taxonomy</h2>" + "".join(_failures(r, i) for i, r in enumerate(runs))
    body += "<h2>Error distance</h2>" + _offsets(runs)
    body += "<h2>Plots</h2>" + _plots(plot_files)
    return _page(title, body, pages.nav())


# -- task pages -----------------------------------------------------------------------------------
def _step_svg(s: StepRow, thumb: Thumb | None) -> str:
    w, h = thumb.original if thumb else (s.image_size or _DEFAULT_SIZE)
    w, h = max(1, w), max(1, h)
    parts = []
    for b in s.target_boxes:
        x1, y1, x2, y2 = b
        parts.append(
            f'<rect class="box" x="{x1 * w:.1f}" y="{y1 * h:.1f}" width="{(x2 - x1) * w:.1f}" '
            f'height="{(y2 - y1) * h:.1f}" vector-effect="non-scaling-stroke"/>'
        )
    p = s.pred_point
    if p is not None:
        px, py = p[0] * w, p[1] * h
        if s.outcome == "miss" and s.target_boxes:
            b = s.target_boxes[0]
            cx, cy = (b[0] + b[2]) / 2 * w, (b[1] + b[3]) / 2 * h
            parts.append(
                f'<line class="vector" x1="{cx:.1f}" y1="{cy:.1f}" x2="{px:.1f}" y2="{py:.1f}" '
                'vector-effect="non-scaling-stroke"/>'
            )
        cls = "hit" if s.hit else "miss"
        parts.append(
            f'<circle class="click {cls}" cx="{px:.1f}" cy="{py:.1f}" r="{0.012 * max(w, h):.1f}"/>'
        )
    if thumb is None:
        parts.append(
            f'<text class="nopic" x="{w / 2:.0f}" y="{h / 2:.0f}" text-anchor="middle" '
            f'font-size="{h / 14:.0f}">no screenshot</text>'
        )
    return (
        f'<svg class="overlay" viewBox="0 0 {w} {h}" preserveAspectRatio="none" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(parts)}</svg>'
    )


def _badge(s: StepRow) -> str:
    cls = {"hit": "hit", "miss": "miss"}.get(s.outcome, "other")
    return f'<span class="badge {cls}">{e(s.outcome.replace("_", " "))}</span>'


def _step(s: StepRow, t: TaskRow, thumbs: Mapping[str, Thumb]) -> str:
    thumb = thumbs.get(s.image_path)
    ending = t.failed_step is not None and s.position == t.failed_step
    classes = f"step out-{_token(s.outcome)}" + (" ending" if ending else "")
    img = (
        f'<img src="{e(thumb.rel)}" width="{thumb.size[0]}" height="{thumb.size[1]}" '
        f'loading="lazy" alt="{e(s.image_path)}">'
        if thumb
        else ""
    )
    frame = f'<div class="frame{"" if thumb else " noimg"}">{img}{_step_svg(s, thumb)}</div>'
    info = [f"step {s.position}", _badge(s)]
    if s.failure_type:
        info.append(f'<span class="ftype">{e(s.failure_type)}</span>')
    if s.difficulty:
        info.append(f"target {e(s.difficulty)}")
    if s.action_types:
        info.append(e(", ".join(s.action_types)))
    if ending:
        info.append("<strong>ended the task</strong>")
    raw = (
        f'<details><summary>raw model answer</summary><pre class="raw">{e(s.raw_output)}</pre>'
        "</details>"
        if s.raw_output is not None
        else ""
    )
    notes = [
        f"click ({s.pred_point[0]:.3f}, {s.pred_point[1]:.3f})" if s.pred_point else "no click"
    ]
    if s.raw_output is None:
        notes.append("no raw answer stored")
    return (
        f'<figure class="{classes}" data-step="{e(s.step)}">{frame}<figcaption>'
        + " · ".join(info)
        + f'<span class="instr">{e(s.instruction)}</span>'
        + f'<span class="note">{e(" · ".join(notes))}</span>'
        + raw
        + "</figcaption></figure>"
    )


def _task(t: TaskRow, thumbs: Mapping[str, Thumb], heading: str = "") -> str:
    outcome = task_outcome(t)
    failures = " ".join(
        _token(x) for x in dict.fromkeys([t.failure_type or "none"]) if x is not None
    )
    head = heading or (
        f"{e(t.task_id)} · {e(outcome)}"
        + (f" · {e(t.failure_type)}" if t.failure_type else "")
        + f" · {t.correct_steps}/{t.num_evaluable_steps} steps"
    )
    steps = "".join(_step(s, t, thumbs) for s in t.steps)
    return (
        f'<section class="task {e(outcome)}" id="{e(_token(t.task_id))}" '
        f'data-app="{e(_token(t.app))}" data-outcome="{e(outcome)}" data-failure="{e(failures)}">'
        f"<h3>{head}</h3><p>{e(t.task_overview)}</p>"
        f'<div class="strip">{steps}</div></section>'
    )


def _select(name: str, label: str, values: Iterable[str]) -> str:
    opts = "".join(f'<option value="{e(_token(v))}">{e(v)}</option>' for v in values)
    return (
        f'<label>{e(label)} <select id="f-{name}" data-filter="{name}">'
        f'<option value="">all</option>{opts}</select></label>'
    )


def task_page(pages: PageSet, i: int, thumbs: Mapping[str, Thumb]) -> str:
    r = pages.runs[i]
    tasks = r.tasks
    filters = (
        '<div class="filters">'
        + _select("app", "application", dict.fromkeys(t.app for t in tasks))
        + _select("outcome", "outcome", dict.fromkeys(task_outcome(t) for t in tasks))
        + _select("failure", "failure type", sorted({t.failure_type or "none" for t in tasks}))
        + '<span id="shown-count" class="note"></span></div>'
    )
    kind = f' <span class="kind">{e(r.kind_note)}</span>' if r.kind_note else ""
    body = (
        f"<h1>{e(r.name)}{kind}: tasks</h1><p>Protocol {e(r.protocol)}. Blue: target boxes; "
        "dot: the click (green hit, red miss); dashed: from the target centre to the click. "
        "The step that ended a task is outlined in red.</p>"
        + filters
        + "".join(_task(t, thumbs) for t in tasks)
    )
    return _page(f"{r.name}: tasks", body, pages.nav())


def _interval(key: str, ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else e(f"[{_fmt(key, ci[0])}, {_fmt(key, ci[1])}]")


def compare_page(
    pages: PageSet, c: Comparison, i: int, j: int, thumbs: Sequence[Mapping[str, Thumb]]
) -> str:
    a, b = pages.runs[i], pages.runs[j]
    rows = "".join(
        f'<tr><td class="text">{e(SHORT_NAMES[m.key])}</td><td>{e(_fmt(m.key, m.a))}</td>'
        f"<td>{e(_fmt(m.key, m.b))}</td><td>{e(_fmt(m.key, m.diff))}</td>"
        f"<td>{_interval(m.key, m.interval)}</td></tr>"
        for m in c.metrics
    )
    body = (
        f"<h1>{e(a.name)} (A) vs {e(b.name)} (B)</h1>"
        f"<p>{len(c.common)} tasks scored in both. McNemar exact p = {c.mcnemar_p:.4g} "
        f"({len(c.a_only_completes)} completed by A only, {len(c.b_only_completes)} by B only).</p>"
        '<table id="diff"><thead><tr><th>metric</th><th>A</th><th>B</th><th>B - A</th>'
        f"<th>paired 95% interval</th></tr></thead><tbody>{rows}</tbody></table>"
        '<div class="filters">'
        + _select("flip", "tasks completed by", ["A only", "B only"])
        + '<span id="shown-count" class="note"></span></div>'
    )
    for flip, ids in (("A only", c.a_only_completes), ("B only", c.b_only_completes)):
        for tid in ids:
            ta, tb = a.task(tid), b.task(tid)
            if ta is None or tb is None:
                continue
            body += (
                f'<section class="task pair" data-flip="{e(_token(flip))}" id="{e(_token(tid))}">'
                f"<h3>{e(tid)}: completed by {e(flip)}</h3><p>{e(ta.task_overview)}</p>"
                f"<h4>A: {e(a.name)} · {e(task_outcome(ta))}</h4>"
                f'<div class="strip">{"".join(_step(s, ta, thumbs[i]) for s in ta.steps)}</div>'
                f"<h4>B: {e(b.name)} · {e(task_outcome(tb))}</h4>"
                f'<div class="strip">{"".join(_step(s, tb, thumbs[j]) for s in tb.steps)}</div>'
                "</section>"
            )
    return _page(f"{a.name} vs {b.name}", body, pages.nav())


# -- the site -------------------------------------------------------------------------------------
def _copy_assets(out_dir: Path) -> None:
    base = resources.files("medspot.report") / "assets"
    for name in ("report.css", "report.js"):
        (out_dir / name).write_text(base.joinpath(name).read_text(encoding="utf-8"), "utf-8")


def write_site(
    runs: Sequence[Run],
    out_dir: Path,
    *,
    thumbs: Sequence[Mapping[str, Thumb]],
    plot_files: Sequence[str] = (),
    title: str = "MedSPOT report",
    n_boot: int = 2000,
    full_images: Sequence[Mapping[str, str]] = (),
) -> list[Path]:
    """Write the pages into `out_dir` (thumbnails and plots already there); returns the pages.
    `thumbs[i]` maps an image path of run i to its thumbnail, `full_images[i]` to the full
    screenshot in the report folder (the live filmstrips link to them)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    task_pages = tuple(f"tasks-{i + 1}.html" for i in range(len(runs)))
    pairs: list[tuple[int, int, str]] = []
    comparisons: dict[tuple[int, int], Comparison] = {}
    for j in range(1, len(runs)):
        try:
            comparisons[(0, j)] = compare_runs(runs[0], runs[j], n_boot=n_boot, mixed=True)
        except MedspotError as ex:  # e.g. no task in common: no comparison page
            log.warning("no comparison of %s and %s: %s", runs[0].name, runs[j].name, ex)
            continue
        pairs.append((0, j, f"compare-1-{j + 1}.html"))
    live = tuple((i, live_page_name(i)) for i, r in enumerate(runs) if is_live(r))
    pages = PageSet(runs=tuple(runs), task_pages=task_pages, pairs=tuple(pairs), live_pages=live)
    _copy_assets(out_dir)
    written = [out_dir / "index.html"]
    written[0].write_text(summary_page(pages, plot_files, title), encoding="utf-8")
    for i, name in enumerate(task_pages):
        (out_dir / name).write_text(task_page(pages, i, thumbs[i]), encoding="utf-8")
        written.append(out_dir / name)
    for i, name in live:
        html_text = live_page(
            runs[i], thumbs[i], page=lambda title, body: _page(title, body, pages.nav()), e=e,
            full=full_images[i] if i < len(full_images) else None,
        )  # fmt: skip
        (out_dir / name).write_text(html_text, encoding="utf-8")
        written.append(out_dir / name)
    for i, j, name in pairs:
        (out_dir / name).write_text(
            compare_page(pages, comparisons[(i, j)], i, j, thumbs), encoding="utf-8"
        )
        written.append(out_dir / name)
    return written
