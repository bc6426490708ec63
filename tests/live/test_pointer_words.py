"""The xdotool words of pointer actions (pure): `mousemove --sync` hangs forever when the pointer
is already at the target over a window, so a move to where the pointer is is left out."""

from __future__ import annotations

import itertools

from medspot.live.drivers.x11 import drag_words, move_words, parse_pointer


def test_a_move_to_where_the_pointer_is_is_left_out() -> None:
    assert move_words((10, 20), (10, 20)) == []
    assert move_words((10, 20), (11, 20)) == ["mousemove", "--sync", "11", "20"]
    assert move_words(None, (5, 5)) == ["mousemove", "--sync", "5", "5"]  # position unknown


def test_a_drag_has_no_move_that_does_not_move() -> None:
    words = drag_words((300, 300), (300, 300), (303, 300), steps=8)
    assert words[:2] == ["mousedown", "1"]  # already at the start: no move before the press
    moves = [words[i + 2 : i + 4] for i, w in enumerate(words) if w == "mousemove"]
    assert moves and all(a != b for a, b in itertools.pairwise(moves))
    assert moves[-1] == ["303", "300"] and words[-2:] == ["mouseup", "1"]
    # a drag to its own start: a press and a release, nothing that could wait
    assert drag_words((1, 1), (5, 5), (5, 5)) == [
        "mousemove", "--sync", "5", "5", "mousedown", "1", "sleep", "0.05", "mouseup", "1",
    ]  # fmt: skip


def test_pointer_location_is_parsed() -> None:
    assert parse_pointer("X=1156\nY=299\nSCREEN=0\nWINDOW=123\n") == (1156, 299)
    assert parse_pointer("garbage") is None
