"""`live export`'s boxes: whatever box the environment gives the oracle's target (partly or
wholly off the screen, thinner than a pixel, a point), its MedSPOT `bbox` is one that `medspot
validate` accepts (within 0..100 percent, width and height above 0) and covers the part of the
box on the screen."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from medspot.dataset.collector import _bbox_problem
from medspot.live.loop.dataset_export import percent_box

coords = st.floats(min_value=-5000, max_value=5000, allow_nan=False)
sizes = st.tuples(st.integers(1, 4000), st.integers(1, 4000))


@given(coords, coords, coords, coords, sizes)
def test_every_box_becomes_a_bbox_validate_accepts(
    a: float, b: float, c: float, d: float, size: tuple[int, int]
) -> None:
    box = (min(a, c), min(b, d), max(a, c), max(b, d))
    bbox = percent_box(box, size)
    assert _bbox_problem(bbox) is None, (box, size, bbox)
    w, h = size
    x1, y1, x2, y2 = box
    if x1 >= 0 and x2 <= w and x2 - x1 >= 1:  # wholly on the screen: the box itself
        assert abs(bbox[0] - 100 * x1 / w) < 1e-3 and abs(bbox[2] - 100 * (x2 - x1) / w) < 2e-3
    if y1 >= 0 and y2 <= h and y2 - y1 >= 1:
        assert abs(bbox[1] - 100 * y1 / h) < 1e-3 and abs(bbox[3] - 100 * (y2 - y1) / h) < 2e-3


def test_a_box_at_the_right_and_bottom_edges_ends_at_100() -> None:
    bbox = percent_box((1000.12345, 700.55555, 1280.0, 800.0), (1280, 800))
    assert bbox[0] + bbox[2] <= 100 and bbox[1] + bbox[3] <= 100
    assert percent_box((640.0, 400.0, 640.0, 400.0), (1280, 800))[2:] == [0.0781, 0.125]
