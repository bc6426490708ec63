"""The protocol knobs and presets as data."""

from __future__ import annotations

import pytest

from _scoring_tasks import BOX, make_task
from medspot.errors import ConfigError
from medspot.scoring.protocol import PRESETS, get_protocol


def test_all_presets_present() -> None:
    assert tuple(PRESETS) == (
        "medspot-v1",
        "upstream-a",
        "upstream-b",
        "upstream-c",
        "upstream-d",
        "upstream-e",
    )
    for name, p in PRESETS.items():
        assert p.name == name
        assert get_protocol(name) is p


def test_unknown_protocol_lists_names() -> None:
    with pytest.raises(ConfigError) as e:
        get_protocol("upstream-z")
    for name in PRESETS:
        assert name in str(e.value)


def test_tolerance_override() -> None:
    d = get_protocol("upstream-d")
    assert d.tolerance_px == 14 and not d.tolerance_overridden
    seeclick = get_protocol("upstream-d", tolerance_px=0)
    assert seeclick.tolerance_px == 0 and not seeclick.has_tolerance
    assert seeclick.name == "upstream-d" and "0 px" in seeclick.label
    # the override replaces a fractional tolerance too
    e = get_protocol("upstream-e").with_tolerance(3)
    assert e.tolerance_frac == 0 and e.tolerance_for((1920, 1080)) == 3
    with pytest.raises(ConfigError):
        get_protocol("medspot-v1", tolerance_px=-1)


def test_tolerance_fraction_of_min_side() -> None:
    # upstream-e: 2% of min(W, H) = 0.02 * 1080 = 21.6 px
    assert get_protocol("upstream-e").tolerance_for((1920, 1080)) == pytest.approx(21.6)
    assert get_protocol("upstream-b").tolerance_for((1920, 1080)) == 7


def test_targets_by_action_type_and_box_selection() -> None:
    second = (0.7, 0.7, 0.8, 0.8)
    task = make_task(
        "A",
        0,
        [
            [("drag", BOX)],
            [("hover", BOX), ("click", second)],
            [("click", BOX), ("click", second)],
            [],
        ],
    )
    drag, hover_click, two_clicks, empty = task.steps
    v1, a, b = get_protocol("medspot-v1"), get_protocol("upstream-a"), get_protocol("upstream-b")
    assert v1.evaluable(drag) and a.evaluable(drag) and not b.evaluable(drag)
    # v1: every box; presets: the first box of an evaluable type
    assert len(v1.targets(hover_click)) == 2
    assert b.targets(hover_click)[0].x1 == 0.7
    assert len(v1.targets(two_clicks)) == 2 and len(b.targets(two_clicks)) == 1
    assert b.targets(two_clicks)[0].x1 == 0.4
    for p in PRESETS.values():
        assert not p.evaluable(empty)


def test_as_dict_is_json_ready() -> None:
    d = get_protocol("upstream-a").as_dict()
    assert d["evaluable_types"] == ["click", "double_click", "drag"]
    assert get_protocol("medspot-v1").as_dict()["evaluable_types"] is None
