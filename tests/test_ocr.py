"""The `ocr` baseline: query extraction, matching and tie-breaking on hand-made OCR lines, the
adapter's caching, its registration, and real OCR on generated screens."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from medspot.adapters import registry
from medspot.adapters.base import StepRequest
from medspot.adapters.ocr import OcrAdapter, OcrWord, extract_queries, match, spatial_hints
from medspot.errors import ModelCallError

SIZE = (1000, 800)


def _req(
    path: Path, instruction: str, size: tuple[int, int] = SIZE, uid: str = "A/0/1"
) -> StepRequest:
    return StepRequest(step_uid=uid, task_uid=uid.rsplit("/", 1)[0], image_rel=path.name,
                       image_path=path, image_size=size, instruction=instruction)  # fmt: skip


def test_queries_quoted_first_then_words_before_keywords() -> None:
    assert extract_queries("Select 'Export' from the dropdown.")[0] == "Export"
    assert extract_queries("Click on the File menu in the top toolbar.") == ["File"]
    assert extract_queries("Click on the Zoom icon in the top toolbar.") == ["Zoom"]
    assert extract_queries("Press the OK button in the dialog.") == ["OK"]
    q = extract_queries("Drag the window width slider handle to increase the width.")
    assert q == ["window width", "width"]
    assert extract_queries('Click on "Check for Updates".') == ["Check for Updates"]
    # an apostrophe inside a word is not a quote
    assert extract_queries("Close the message with the X button in the dialog's title bar.") == [
        "X"
    ]
    assert extract_queries("Click on the bright lesion in the viewport.") == []


def test_spatial_hints() -> None:
    assert spatial_hints("Click on the File menu in the top toolbar.") == {"top"}
    assert spatial_hints("Click on the 'Series' tab in the left panel.") == {"left"}
    assert spatial_hints("Select 'Lung' from the submenu.") == {"list"}
    assert spatial_hints("Press the OK button in the dialog.") == {"dialog"}
    assert spatial_hints("Click the status bar at the bottom.") == {"bottom"}
    assert spatial_hints("Drag the slider to the right.") == frozenset()


def test_match_clicks_the_centre_of_the_matching_words() -> None:
    words = [OcrWord("File", (10, 30, 40, 46)), OcrWord("Edit", (60, 30, 90, 46))]
    m = match("Click on the 'Edit' menu.", words, SIZE)
    assert m is not None and m.center == (75.0, 38.0)
    assert match("Click on the 'Help' menu.", words, SIZE) is None


def test_match_splits_a_merged_line_by_character_offsets() -> None:
    # OCR merged two menu titles: "Window Help", 11 characters over 110 px, 10 px each;
    # "Help" is characters 7..11, so x 270..310, centre 290.
    words = [OcrWord("Window Help", (200, 30, 310, 46))]
    m = match("Click on the 'Help' menu.", words, SIZE)
    assert m is not None and m.center == (290.0, 38.0)


def test_fuzzy_matching_tolerates_ocr_errors_but_not_other_words() -> None:
    words = [OcrWord("Measurement Setings...", (300, 300, 500, 320))]
    assert match("Select 'Measurement Settings' from the dropdown.", words, SIZE) is not None
    assert match("Select 'Display Settings' from the dropdown.", words, SIZE) is None


def test_spatial_words_break_ties() -> None:
    # "Export" twice: a toolbar label at the top and an item in a vertical list lower down.
    toolbar = [OcrWord("Open", (20, 60, 50, 72)), OcrWord("Export", (80, 60, 120, 72)),
               OcrWord("Print", (150, 60, 180, 72))]  # fmt: skip
    menu = [OcrWord("Open Study...", (300, 300, 400, 316)), OcrWord("Export", (300, 322, 350, 338)),
            OcrWord("Print...", (300, 344, 350, 360))]  # fmt: skip
    words = toolbar + menu
    top = match("Click on the Export icon in the top toolbar.", words, SIZE)
    assert top is not None and top.center == (100.0, 66.0)
    listed = match("Select 'Export' from the dropdown.", words, SIZE)
    assert listed is not None and listed.center == (325.0, 330.0)
    side = [OcrWord("Series", (20, 400, 60, 416)), OcrWord("Series", (900, 400, 940, 416))]
    left = match("Click on the 'Series' tab in the left panel.", side, SIZE)
    right = match("Click on the 'Series' tab in the right panel.", side, SIZE)
    assert left is not None and left.center[0] == 40.0
    assert right is not None and right.center[0] == 920.0


def test_adapter_reads_each_image_once_and_normalises(tmp_path: Path) -> None:
    calls: list[Path] = []

    def reader(path: Path) -> list[OcrWord]:
        calls.append(path)
        return [OcrWord("OK", (480, 380, 520, 400)), OcrWord("Cancel", (540, 380, 600, 400))]

    adapter = OcrAdapter(reader)
    img = tmp_path / "screen.png"

    async def both() -> list[object]:
        return list(await asyncio.gather(
            adapter.predict(_req(img, "Click 'OK' to close.", uid="A/0/1")),
            adapter.predict(_req(img, "Click on the 'Cancel' button.", uid="A/1/1")),
            adapter.predict(_req(img, "Click on the Zoom icon.", uid="A/2/1")),
        ))  # fmt: skip

    ok, cancel, zoom = asyncio.run(both())
    assert calls == [img]
    assert ok.point is not None and (ok.point.x, ok.point.y) == (0.5, 0.4875)  # type: ignore[attr-defined]
    assert cancel.point is not None and cancel.point.x == pytest.approx(0.57)  # type: ignore[attr-defined]
    assert zoom.point is None and "no match" in zoom.raw_text  # type: ignore[attr-defined]


def test_adapter_reads_different_images_side_by_side_and_retries_a_failed_one(
    tmp_path: Path,
) -> None:
    a, b, bad = tmp_path / "a.png", tmp_path / "b.png", tmp_path / "bad.png"
    both_reading = threading.Barrier(2, timeout=20)  # broken unless a and b are read at once
    calls: list[Path] = []
    failures = [bad]

    def reader(path: Path) -> list[OcrWord]:
        calls.append(path)
        if path in failures:
            failures.remove(path)
            raise OSError("cannot identify image file")
        if path != bad:
            both_reading.wait()
        return [OcrWord(path.stem, (0, 0, 10, 10))]

    adapter = OcrAdapter(reader)

    async def reads() -> list[list[OcrWord]]:
        return list(await asyncio.gather(*(asyncio.to_thread(adapter.words, p) for p in
                                           (a, b, a, b))))  # fmt: skip

    got = asyncio.run(reads())
    assert [[w.text for w in ws] for ws in got] == [["a"], ["b"], ["a"], ["b"]]
    assert sorted(calls) == [a, b]  # each image once, the two at the same time
    with pytest.raises(ModelCallError, match=r"OCR failed on bad\.png"):
        adapter.words(bad)
    assert [w.text for w in adapter.words(bad)] == ["bad"]  # read again, not the error kept
    assert calls.count(bad) == 2


def test_registered_without_importing_ocr_packages() -> None:
    e = registry.entry("ocr")
    assert e.kind == "baseline" and e.extra == "ocr" and e.convention == "normalised"
    code = ("import sys; from medspot.adapters import registry; registry.available(); "
            "print('rapidocr' in sys.modules, 'rapidfuzz' in sys.modules)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.ocr
@pytest.mark.skipif(importlib.util.find_spec("rapidocr") is None, reason="needs rapidocr")
def test_real_ocr_hits_text_targets_on_generated_screens(tmp_path: Path) -> None:
    from medspot.adapters.ocr import rapidocr_reader
    from medspot.dataset.images import ImageStore
    from medspot.dataset.loading import load_dataset
    from medspot.geometry import point_in_box
    from medspot.synth import META_FILE, generate

    root = tmp_path / "suite"
    generate(root, tasks=4, seed=5, apps=2)
    meta = json.loads((root / META_FILE).read_text("utf-8"))
    ds = load_dataset(root)
    store = ImageStore(ds.root)
    adapter = OcrAdapter(rapidocr_reader())
    hits: dict[str, list[bool]] = {"text": [], "icon": []}

    async def run() -> None:
        for step in ds.steps():
            req = StepRequest(step_uid=step.uid, task_uid=step.task_uid,
                              image_rel=step.image_path, image_path=store.path(step.image_path),
                              image_size=store.size(step.image_path),
                              instruction=step.instruction)  # fmt: skip
            pred = await adapter.predict(req)
            hit = pred.point is not None and any(point_in_box(pred.point, b) for b in step.boxes)
            hits[meta["steps"][step.uid]["label_kind"]].append(hit)

    asyncio.run(run())
    text, icon = hits["text"], hits["icon"]
    print(f"ocr on synthetic screens: text targets {sum(text)}/{len(text)}, "
          f"icon-only targets {sum(icon)}/{len(icon)}")  # fmt: skip
    assert len(text) >= 5
    assert sum(text) / len(text) >= 0.7
