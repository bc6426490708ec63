"""Placeholder screenshots for the real annotations."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from medspot.dataset.images import ImageStore
from medspot.dataset.loading import load_dataset
from medspot.testing import DEFAULT_SIZES, paint_placeholders, size_for_app


def test_every_image_is_painted_at_its_apps_size(placeholder_root: Path) -> None:
    ds = load_dataset(placeholder_root)  # checks every image header
    assert len(list(ds.steps())) == 607
    store = ImageStore(ds.root)
    for step in ds.steps():
        assert store.size(step.image_path) == size_for_app(step.app)
    sizes = {size_for_app(a) for a in ds.app_names}
    assert len(sizes) >= 2  # several screen sizes across apps
    assert sizes <= set(DEFAULT_SIZES)
    copied = sorted(p.name for p in (placeholder_root / "Annotations").iterdir())
    assert len(copied) == 10


def test_target_boxes_are_drawn(placeholder_root: Path) -> None:
    ds = load_dataset(placeholder_root, apps=["Weasis"], check_images=False)
    step = ds.step("Weasis/0/1")
    box = step.boxes[0]
    with Image.open(ds.root / step.image_path) as im:
        w, h = im.size
        rgb = im.convert("RGB")
        mid_y = int((box.y1 + box.y2) / 2 * h)
        left = int(box.x1 * w)
        edge = {rgb.getpixel((x, mid_y)) for x in range(left - 1, left + 2)}
        inside = rgb.getpixel((int(box.center.x * w), int(box.center.y * h)))
    assert (150, 120, 120) in edge  # the faint outline colour
    assert inside != (150, 120, 120)


def test_sizes_are_deterministic_and_follow_the_seed() -> None:
    assert size_for_app("MITK") == size_for_app("MITK")
    assert size_for_app("MITK", ((10, 20),)) == (10, 20)
    apps = ["A", "B", "C", "D", "E", "F"]
    assert [size_for_app(a, seed=1) for a in apps] != [size_for_app(a, seed=2) for a in apps]


def test_paint_from_a_loaded_dataset(annotations_dir: Path, tmp_path: Path) -> None:
    ds = load_dataset(annotations_dir, apps=["Orthanc"], check_images=False)
    paint_placeholders(tmp_path, ds, sizes=((64, 40),))
    assert [p.name for p in (tmp_path / "Annotations").iterdir()] == ["Orthanc_Annotation.json"]
    again = load_dataset(tmp_path)
    assert len(list(again.tasks())) == 10
    assert {ImageStore(tmp_path).size(s.image_path) for s in again.steps()} == {(64, 40)}
