"""Writing a synthetic suite: a dataset root in MedSPOT's layout plus `synth_meta.json`.

```
OUT/Annotations/<App>_Annotation.json   protocol.md 1.1, exactly
OUT/Images/<App>/<App>_<n>.png          one file per distinct screen
OUT/synth_meta.json                     every screen's clickable widgets; per step (keyed
                                        `<App>/<task index>/<position>`): workflow, widget id,
                                        kind, label, label_kind ("text" or "icon"), pixel rect
```

Deterministic: the same arguments give the same bytes (fixed PNG parameters, no timestamps,
Pillow's bundled font, seeded generators keyed by seed and application name).
"""

from __future__ import annotations

import json
import logging
import random
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from medspot.errors import ConfigError, MedspotError
from medspot.synth.render import Renderer
from medspot.synth.state import ScreenState
from medspot.synth.themes import Theme, select_themes
from medspot.synth.widgets import Rect, Widget
from medspot.synth.workflows import WORKFLOWS, PlannedTask, initial_state, plan_task

__all__ = ["META_FILE", "SynthSummary", "bbox_percent", "generate", "target_problems"]

log = logging.getLogger(__name__)

META_FILE = "synth_meta.json"
_PNG: dict[str, Any] = {"format": "PNG", "compress_level": 3, "optimize": False}
_STARTS = 4


@dataclass(frozen=True, slots=True)
class SynthSummary:
    root: Path
    apps: tuple[str, ...]
    tasks: int
    steps: int
    screens: int
    text_steps: int
    icon_steps: int
    small_targets: int


def bbox_percent(rect: Rect, size: tuple[int, int]) -> list[float]:
    """`[x, y, w, h]` in percent with 2 decimals, rounded outward so that the box still holds
    every pixel of `rect` (x1, y1 floored; x2, y2 ceiled). Exact integer arithmetic."""
    x1, y1, x2, y2 = rect
    w, h = size
    px1, py1 = (x1 * 10000) // w, (y1 * 10000) // h
    px2, py2 = -((-x2 * 10000) // w), -((-y2 * 10000) // h)
    px1, py1 = max(px1, 0), max(py1, 0)
    px2, py2 = min(px2, 10000), min(py2, 10000)
    return [px1 / 100, py1 / 100, (px2 - px1) / 100, (py2 - py1) / 100]


def target_problems(
    target: Widget, widgets: tuple[Widget, ...], bbox: list[float], size: tuple[int, int]
) -> list[str]:
    """What is wrong with a target box: it must hold the widget's rectangle and no other
    clickable widget's centre. Empty when the box is exact."""
    w, h = size
    bx1, by1 = bbox[0] / 100 * w, bbox[1] / 100 * h
    bx2, by2 = (bbox[0] + bbox[2]) / 100 * w, (bbox[1] + bbox[3]) / 100 * h
    x1, y1, x2, y2 = target.rect
    problems = []
    if not (bx1 <= x1 + 1e-6 and by1 <= y1 + 1e-6 and x2 <= bx2 + 1e-6 and y2 <= by2 + 1e-6):
        problems.append(f"box {bbox} does not hold {target.id} {target.rect}")
    for o in widgets:
        cx, cy = o.center
        if o.id != target.id and bx1 <= cx <= bx2 and by1 <= cy <= by2:
            problems.append(f"box of {target.id} holds the centre of {o.id}")
    return problems


def _state_dict(s: ScreenState) -> dict[str, Any]:
    d = asdict(s)
    d["marks"], d["checks"] = list(s.marks), list(s.checks)
    return d


class _AppWriter:
    """Renders and writes one application's screens, once per distinct state."""

    def __init__(self, root: Path, theme: Theme, pool: ThreadPoolExecutor) -> None:
        self.root, self.theme, self.pool = root, theme, pool
        self.pending: list[Future[None]] = []
        self.renderer = Renderer(theme)
        self.screens: dict[ScreenState, tuple[str, tuple[Widget, ...]]] = {}
        (root / "Images" / theme.name).mkdir(parents=True, exist_ok=True)

    def screen(self, state: ScreenState) -> tuple[str, tuple[Widget, ...]]:
        if state not in self.screens:
            image, widgets = self.renderer.render(state)
            rel = f"Images/{self.theme.name}/{self.theme.name}_{len(self.screens) + 1}.png"
            self.pending.append(self.pool.submit(_save, image, self.root / rel))
            self.screens[state] = (rel, widgets)
        return self.screens[state]


def _save(image: Image.Image, path: Path) -> None:
    image.save(path, **_PNG)


def _widget_json(w: Widget) -> dict[str, Any]:
    return {"id": w.id, "kind": w.kind, "label": w.label, "rect": list(w.rect), "text": w.text}


def _prepare(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not (out / META_FILE).is_file():
            raise ConfigError(f"{out} is not empty and holds no earlier synthetic suite")
        for name in ("Annotations", "Images"):
            if (out / name).is_dir():
                shutil.rmtree(out / name)
        (out / META_FILE).unlink()
    (out / "Annotations").mkdir(parents=True, exist_ok=True)


def _plan_app(theme: Theme, n_tasks: int, seed: int) -> list[PlannedTask]:
    rng = random.Random(f"medspot-synth:{seed}:{theme.name}")
    # a few starting screens per application, shared by tasks (as the real data re-uses some)
    starts = [initial_state(rng) for _ in range(_STARTS)]
    names = sorted(WORKFLOWS)
    plans: list[PlannedTask] = []
    order: list[str] = []
    for _ in range(n_tasks):
        if not order:
            order = names[:]
            rng.shuffle(order)
        plans.append(plan_task(order.pop(), rng, theme, rng.choice(starts)))
    return plans


def generate(out: Path, tasks: int = 40, seed: int = 0, apps: int = 5) -> SynthSummary:
    """Write a synthetic suite of `tasks` tasks spread over `apps` applications into `out`."""
    if tasks < 1:
        raise ConfigError(f"--tasks must be at least 1, got {tasks}")
    themes = select_themes(apps)
    _prepare(out)
    meta: dict[str, Any] = {"version": 1, "seed": seed, "tasks": tasks, "apps": {},
                            "steps": {}, "screens": {}}  # fmt: skip
    with ThreadPoolExecutor(max_workers=2) as pool:  # PNG encoding releases the GIL
        counts = _write_apps(out, themes, tasks, seed, meta, pool)
    (out / META_FILE).write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n", "utf-8")
    n_steps, n_text, n_small, n_screens = counts
    log.info("wrote %d tasks, %d steps, %d screens to %s", tasks, n_steps, n_screens, out)
    return SynthSummary(out, tuple(t.name for t in themes), tasks, n_steps, n_screens, n_text,
                        n_steps - n_text, n_small)  # fmt: skip


def _write_apps(
    out: Path,
    themes: tuple[Theme, ...],
    tasks: int,
    seed: int,
    meta: dict[str, Any],
    pool: ThreadPoolExecutor,
) -> tuple[int, int, int, int]:
    n_steps = n_text = n_small = n_screens = 0
    for a, theme in enumerate(themes):
        n_app = tasks // len(themes) + (1 if a < tasks % len(themes) else 0)
        writer = _AppWriter(out, theme, pool)
        w, h = theme.size
        meta["apps"][theme.name] = {"size": [w, h], "dark": theme.dark,
                                    "labelled_tools": theme.labelled_tools,
                                    "panel_side": theme.panel_side}  # fmt: skip
        records = []
        for i, plan in enumerate(_plan_app(theme, n_app, seed)):
            steps = []
            for k, st in enumerate(plan.steps, 1):
                rel, widgets = writer.screen(st.state)
                target = next((x for x in widgets if x.id == st.widget), None)
                if target is None:
                    raise MedspotError(f"internal: {st.widget} not drawn on {rel}")
                bbox = bbox_percent(target.rect, theme.size)
                problems = target_problems(target, widgets, bbox, theme.size)
                if problems:
                    raise MedspotError(f"internal: {rel}: {'; '.join(problems)}")
                steps.append({"step_id": k, "image_path": rel, "instruction": st.instruction,
                              "actions": [{"type": st.action, "target": st.target,
                                           "bbox": bbox}]})  # fmt: skip
                area = (target.rect[2] - target.rect[0]) * (target.rect[3] - target.rect[1])
                small = area / (w * h) < 4e-4
                meta["steps"][f"{theme.name}/{i}/{k}"] = {
                    "workflow": plan.workflow, "widget": target.id, "kind": target.kind,
                    "label": target.label, "label_kind": "text" if target.text else "icon",
                    "rect": list(target.rect), "small": small, "state": _state_dict(st.state),
                }  # fmt: skip
                n_steps += 1
                n_text += target.text
                n_small += small
            records.append({"task_overview": plan.overview, "steps": steps})
        text = json.dumps({"tasks": records}, indent=2, ensure_ascii=False) + "\n"
        (out / "Annotations" / f"{theme.name}_Annotation.json").write_text(text, "utf-8")
        for rel, widgets in writer.screens.values():
            meta["screens"][rel] = {"size": [w, h],
                                    "widgets": [_widget_json(x) for x in widgets]}  # fmt: skip
        n_screens += len(writer.screens)
        for fut in writer.pending:
            fut.result()
    return n_steps, n_text, n_small, n_screens
