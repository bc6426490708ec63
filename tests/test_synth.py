"""The synthetic suite: format, determinism, exact boxes checked on the rendering, workflows."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageChops

from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.synth import META_FILE, generate
from medspot.synth.generate import bbox_percent
from medspot.synth.themes import THEMES

STEP_KEYS = {"step_id", "image_path", "instruction", "actions"}
ACTION_KEYS = {"type", "target", "bbox"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth") / "suite"
    generate(root, tasks=36, seed=7, apps=6)
    return root


def _annotations(root: Path) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for f in sorted((root / "Annotations").glob("*_Annotation.json")):
        out[f.name.removesuffix("_Annotation.json")] = json.loads(f.read_text("utf-8"))["tasks"]
    return out


def _meta(root: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((root / META_FILE).read_text("utf-8"))
    return meta


def _box_px(bbox: list[float], size: tuple[int, int]) -> tuple[float, float, float, float]:
    w, h = size
    return (bbox[0] * w / 100, bbox[1] * h / 100, (bbox[0] + bbox[2]) * w / 100,
            (bbox[1] + bbox[3]) * h / 100)  # fmt: skip


def test_layout_and_exact_format(suite: Path) -> None:
    ann = _annotations(suite)
    assert sorted(ann) == sorted(t.name for t in THEMES)
    assert sum(len(v) for v in ann.values()) == 36
    for app, tasks in ann.items():
        assert len(tasks) == 6  # 36 tasks over 6 applications
        for task in tasks:
            assert set(task) == {"task_overview", "steps"}
            assert 1 <= len(task["steps"]) <= 5
            for k, step in enumerate(task["steps"], 1):
                assert set(step) == STEP_KEYS
                assert step["step_id"] == k
                assert re.fullmatch(rf"Images/{app}/{app}_\d+\.png", step["image_path"])
                assert (suite / step["image_path"]).is_file()
                assert len(step["actions"]) == 1
                action = step["actions"][0]
                assert set(action) == ACTION_KEYS
                assert action["type"] in {"click", "double_click", "drag", "type", "hover"}
                bbox = action["bbox"]
                assert len(bbox) == 4 and bbox[2] > 0 and bbox[3] > 0
                assert bbox[0] + bbox[2] <= 100 and bbox[1] + bbox[3] <= 100
                for v in bbox:  # two decimals, like the real data
                    assert abs(v * 100 - round(v * 100)) < 1e-6


def test_loader_and_validate_accept_it(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = load_dataset(suite)
    assert len(list(ds.tasks())) == 36
    assert main(["validate", str(suite)]) == 0
    assert "0 error(s)" in capsys.readouterr().out


def test_same_seed_same_bytes_and_other_seed_differs(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    generate(a, tasks=6, seed=11, apps=3)
    generate(b, tasks=6, seed=11, apps=3)
    generate(c, tasks=6, seed=12, apps=3)
    files_a = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert files_a == files_b and len(files_a) > 5
    for rel in files_a:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    assert _annotations(a) != _annotations(c)


def test_every_box_is_exact_on_the_rendering(suite: Path) -> None:
    meta = _meta(suite)
    checked = 0
    for app, tasks in _annotations(suite).items():
        for i, task in enumerate(tasks):
            for k, step in enumerate(task["steps"], 1):
                info = meta["steps"][f"{app}/{i}/{k}"]
                screen = meta["screens"][step["image_path"]]
                size = tuple(screen["size"])
                image = Image.open(suite / step["image_path"]).convert("RGB")
                assert image.size == size
                bx1, by1, bx2, by2 = _box_px(step["actions"][0]["bbox"], size)
                x1, y1, x2, y2 = info["rect"]
                # the element's rectangle lies inside the box ...
                assert bx1 <= x1 and by1 <= y1 and x2 <= bx2 + 1e-9 and y2 <= by2 + 1e-9
                # ... and is drawn: the pixels there are not a flat background
                crop = np.asarray(image.crop((x1, y1, x2, y2)))
                assert len(np.unique(crop.reshape(-1, 3), axis=0)) >= 2, info["widget"]
                # no other clickable element of that screen has its centre inside the box
                ids = [w["id"] for w in screen["widgets"]]
                assert ids.count(info["widget"]) == 1
                for w in screen["widgets"]:
                    if w["id"] == info["widget"]:
                        assert w["rect"] == info["rect"]
                        continue
                    cx, cy = (w["rect"][0] + w["rect"][2]) / 2, (w["rect"][1] + w["rect"][3]) / 2
                    assert not (bx1 <= cx <= bx2 and by1 <= cy <= by2), (info["widget"], w["id"])
                checked += 1
    assert checked == len(meta["steps"])


def test_widgets_of_a_screen_do_not_overlap_and_are_drawn(suite: Path) -> None:
    meta = _meta(suite)
    for rel, screen in list(meta["screens"].items())[:40]:
        image = np.asarray(Image.open(suite / rel).convert("RGB"))
        rects = [w["rect"] for w in screen["widgets"]]
        for n, a in enumerate(rects):
            assert len(np.unique(image[a[1] : a[3], a[0] : a[2]].reshape(-1, 3), axis=0)) >= 2
            for b in rects[n + 1 :]:
                overlap = a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
                assert not overlap, (rel, a, b)


def test_each_screen_follows_from_the_previous_action(suite: Path) -> None:
    meta = _meta(suite)
    pairs = 0
    for app, tasks in _annotations(suite).items():
        for i, task in enumerate(tasks):
            steps = task["steps"]
            for k in range(1, len(steps)):
                before, after = steps[k - 1], steps[k]
                assert before["image_path"] != after["image_path"]
                info_before = meta["steps"][f"{app}/{i}/{k}"]
                info_after = meta["steps"][f"{app}/{i}/{k + 1}"]
                im1 = Image.open(suite / before["image_path"]).convert("RGB")
                im2 = Image.open(suite / after["image_path"]).convert("RGB")
                changed = ImageChops.difference(im1, im2).getbbox()
                assert changed is not None
                r = info_before["rect"]
                at_element = (changed[0] < r[2] and r[0] < changed[2] and changed[1] < r[3]
                              and r[1] < changed[3])  # fmt: skip
                ids_before = {w["id"] for w in meta["screens"][before["image_path"]]["widgets"]}
                appeared = info_after["widget"] not in ids_before
                # the action visibly changed its element, or it opened what the next step uses
                assert at_element or appeared, (app, i, k)
                if info_after["widget"].startswith("item:") and appeared:
                    opener = info_before["widget"]
                    assert opener.startswith(("menu:", "item:", "tool:")), (app, i, k)
                pairs += 1
    assert pairs > 20


def test_variety_small_targets_and_actions(suite: Path) -> None:
    meta = _meta(suite)
    sizes = {tuple(a["size"]) for a in meta["apps"].values()}
    assert (1280, 800) in sizes and (2560, 1440) in sizes and len(sizes) >= 5
    assert {a["dark"] for a in meta["apps"].values()} == {True, False}
    ann = _annotations(suite)
    types: Counter[str] = Counter()
    small = 0
    for tasks in ann.values():
        for task in tasks:
            for step in task["steps"]:
                _, _, w, h = step["actions"][0]["bbox"]
                small += (w / 100) * (h / 100) < 4e-4
                types[step["actions"][0]["type"]] += 1
    assert small >= 1
    assert types["click"] > sum(types.values()) / 2
    kinds = Counter(v["label_kind"] for v in meta["steps"].values())
    assert kinds["text"] > 0 and kinds["icon"] > 0
    lengths = Counter(len(t["steps"]) for tasks in ann.values() for t in tasks)
    assert min(lengths) >= 1 and max(lengths) <= 5 and len(lengths) >= 3


def test_instructions_read_like_annotations(suite: Path) -> None:
    for tasks in _annotations(suite).values():
        for task in tasks:
            assert task["task_overview"].strip()
            for step in task["steps"]:
                ins = step["instruction"]
                assert ins == ins.strip() and ins[0].isupper() and ins.endswith(".")
                assert step["actions"][0]["target"]  # free text, never empty


def test_bbox_percent_rounds_outward() -> None:
    # rect x 1..3, y 1..3 on 1280x800: x1 = 1/1280 = 0.078% -> 0.07; x2 = 3/1280 = 0.234% ->
    # 0.24, so w = 0.17; y1 = 1/800 = 0.125% -> 0.12; y2 = 3/800 = 0.375% -> 0.38, h = 0.26.
    assert bbox_percent((1, 1, 3, 3), (1280, 800)) == [0.07, 0.12, 0.17, 0.26]
    # exact multiples stay exact: 128/1280 = 10%, 256/1280 = 20%
    assert bbox_percent((128, 80, 256, 160), (1280, 800)) == [10.0, 10.0, 10.0, 10.0]
    # the full screen is 0..100
    assert bbox_percent((0, 0, 1366, 768), (1366, 768)) == [0.0, 0.0, 100.0, 100.0]


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    assert main(["synth", "--out", str(out), "--tasks", "3", "--apps", "2", "--seed", "1"]) == 0
    assert "wrote 3 tasks" in capsys.readouterr().out
    assert sorted(p.name for p in (out / "Annotations").iterdir()) == [
        "NovaView_Annotation.json",
        "RadiQ_Annotation.json",
    ]
    # an earlier suite is replaced
    assert main(["synth", "--out", str(out), "--tasks", "2", "--apps", "1"]) == 0
    assert [p.name for p in (out / "Annotations").iterdir()] == ["NovaView_Annotation.json"]
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    assert main(["synth", "--out", str(foreign), "--tasks", "2"]) == 2
    assert (foreign / "notes.txt").read_text() == "keep me"
    assert main(["synth", "--out", str(tmp_path / "x"), "--apps", "99"]) == 2
    assert main(["synth", "--out", str(tmp_path / "y"), "--tasks", "0"]) == 2
