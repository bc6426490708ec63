"""`medspot check-model` against the test server: a model that clicks right in rel1000, and one
that answers pixels under a rel1000 card (a scale far from 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from medspot.cli import main
from medspot.commands.check_model_fit import SCREENS, fit_axis, render_screens
from medspot.testing.openai_server import OpenAITestServer, SeenRequest

BY_SIZE = {s.size: s for s in SCREENS}


def rel1000_answer(req: SeenRequest) -> str:
    assert req.image is not None
    s = BY_SIZE[req.image.size]
    x1, y1, x2, y2 = s.box
    w, h = s.size
    return f"({round((x1 + x2) / 2 / w * 1000)}, {round((y1 + y2) / 2 / h * 1000)})"


def pixel_answer(req: SeenRequest) -> str:
    assert req.image is not None
    x1, y1, x2, y2 = BY_SIZE[req.image.size].box
    return f"({(x1 + x2) // 2}, {(y1 + y2) // 2})"


def test_fit_axis_by_hand() -> None:
    f = fit_axis([0.0, 0.5, 1.0], [0.1, 0.6, 1.1])
    assert f is not None
    assert f.scale == pytest.approx(1.0) and f.offset == pytest.approx(0.1)
    assert f.rmse == pytest.approx(0.0, abs=1e-12)
    g = fit_axis([0.2, 0.4], [0.4, 0.8])
    assert g is not None and g.scale == pytest.approx(2.0) and g.offset == pytest.approx(0.0)
    assert not g.ok
    assert fit_axis([0.3, 0.3], [0.1, 0.2]) is None
    assert fit_axis([0.3], [0.1]) is None


def test_screens_are_painted_with_the_button(tmp_path: Path) -> None:
    paths = render_screens(tmp_path)
    assert len(paths) == len(SCREENS) and len({s.size for s in SCREENS}) == len(SCREENS)
    for s, p in zip(SCREENS, paths, strict=True):
        with Image.open(p) as im:
            assert im.size == s.size
            x1, y1, _, y2 = s.box
            assert im.convert("RGB").getpixel((x1 + 5, (y1 + y2) // 2)) == (25, 110, 230)
            assert im.convert("RGB").getpixel((s.size[0] - 3, s.size[1] - 3)) == (236, 238, 241)


def test_check_model_consistent_rel1000(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with OpenAITestServer(answer=rel1000_answer) as srv:
        code = main(["check-model", "openai:test-model", "--base-url", srv.base_url, "--json"])
        texts = [r.text for r in srv.requests]
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["consistent"] is True and out["hits"] == len(SCREENS)
    assert abs(out["fit_x"]["scale"] - 1) < 0.01 and abs(out["fit_y"]["offset"]) < 0.01
    assert any('Click the "Save" button.' in t for t in texts)


def test_check_model_pixels_under_rel1000_card(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keep = tmp_path / "screens"
    with OpenAITestServer(answer=pixel_answer) as srv:
        code = main(
            ["check-model", "openai:test-model", "--base-url", srv.base_url, "--keep", str(keep)]
        )
    out = capsys.readouterr().out
    assert code == 1
    assert "NOT consistent" in out and "scale far from 1" in out
    assert (keep / "check_1920x1080.png").exists()
    # The 1920x1080 button's centre is (240, 120) px; read as rel1000 that is (0.240, 0.120)
    assert "(0.240, 0.120)" in out


def test_check_model_pixel_fit_scale(tmp_path: Path) -> None:
    from medspot.commands.check_model_fit import check_model

    with OpenAITestServer(answer=pixel_answer) as srv:
        report = check_model("openai:m", {"base_urls": [srv.base_url]}, tmp_path)
    assert report.fit_x is not None and report.fit_y is not None
    # Every answer is the target times W/1000 (1.024..2.56) or H/1000 (0.768..1.44): the
    # fitted scales are far from 1.
    assert abs(report.fit_x.scale - 1) > 0.5
    assert not report.consistent


def test_check_model_all_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from medspot.testing.openai_server import Fault

    with OpenAITestServer(faults=[Fault("401", rate=1.0)]) as srv:
        code = main(["check-model", "openai:m", "--base-url", srv.base_url])
    out = capsys.readouterr().out
    assert code == 1 and "Every call failed" in out
