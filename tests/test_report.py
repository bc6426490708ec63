"""`medspot report`: the site's files, escaping, thumbnails, plots, runs without screenshots,
folders that are not runs. The browser checks are in test_report_browser.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from _report_runs import PLAN_A, PLAN_B, make_run, write_dataset
from medspot.cli import main
from medspot.errors import ConfigError
from medspot.report.build import build_report
from medspot.runfolder.reader import load_run

EVIL_INSTR = "<script>window.__pwned = 1</script>Open it"
EVIL_OVERVIEW = '<img src="x" onerror="window.__pwned = 2">'
EVIL_RAW = "</pre><script>window.__pwned = 3</script>"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("rep")
    root = write_dataset(d / "data")
    a = make_run(d / "a", root, PLAN_A, model="model-a")
    b = make_run(d / "b", root, PLAN_B, model="model-b")
    out = d / "site"
    assert main(["report", str(a), str(b), "--out", str(out), "--bootstrap", "100"]) == 0
    return {"root": root, "a": a, "b": b, "out": out}


def test_site_files(site: dict[str, Path]) -> None:
    out = site["out"]
    for name in (
        "index.html",
        "tasks-1.html",
        "tasks-2.html",
        "compare-1-2.html",
        "report.css",
        "report.js",
    ):
        assert (out / name).is_file(), name
    for stem in ("per_app_tca", "failure_types", "survival", "error_offsets"):
        assert (out / "plots" / f"{stem}.png").stat().st_size > 1000
        assert (out / "plots" / f"{stem}.svg").read_text().lstrip().startswith("<?xml")
    thumbs = sorted((out / "thumbs").glob("*.jpg"))
    assert len(thumbs) == 9  # 9 distinct screenshots, shared by both runs
    with Image.open(thumbs[0]) as im:
        assert im.format == "JPEG" and im.size == (480, 240)  # 1000x500 scaled to 480 wide
    for page in out.glob("*.html"):
        text = page.read_text()
        assert "base64" not in text
        assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "https://" not in text


def test_summary_content(site: dict[str, Path]) -> None:
    index = (site["out"] / "index.html").read_text()
    info = json.loads((site["a"] / "run.json").read_text())
    assert info["dataset"]["fingerprint"] in index
    assert "medspot-v1" in index
    assert "60.0" in index and "40.0" in index  # TCA of A and B
    assert 'id="per-app"' in index and 'id="survival"' in index and 'id="offsets"' in index
    assert 'src="plots/survival.svg"' in index


def test_filmstrip_marks(site: dict[str, Path]) -> None:
    page = (site["out"] / "tasks-1.html").read_text()
    assert page.count('class="task ') == 5
    # Alpha/2 ended at step 1 by a miss at (0.5, 0.95): the ending step is outlined, the click
    # drawn at (500, 475) on the 1000x500 frame, the miss vector from the box centre (300, 250)
    start = page.index('id="Alpha/2"')
    section = page[start : page.index("</section>", start)]
    assert section.count("ending") == 1
    assert 'cx="500.0" cy="475.0"' in section
    assert 'x1="300.0" y1="250.0" x2="500.0" y2="475.0"' in section
    assert 'rect class="box" x="200.0" y="200.0" width="200.0" height="100.0"' in section
    assert section.count("not reached") == 2
    assert "thumbs/" in section


def test_text_is_escaped(tmp_path: Path) -> None:
    root = write_dataset(
        tmp_path / "data", instruction_override=EVIL_INSTR, overview_override=EVIL_OVERVIEW
    )
    run = make_run(tmp_path / "run", root, PLAN_A, model="<b>bold</b>", raw={"Alpha/0/1": EVIL_RAW})
    out = tmp_path / "site"
    build_report([run], out, plots=False)
    for page in out.glob("*.html"):
        text = page.read_text()
        assert "<script>window" not in text
        assert '<img src="x"' not in text
        assert "<b>bold" not in text
    tasks = (out / "tasks-1.html").read_text()
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;Open it" in tasks
    assert "&lt;/pre&gt;&lt;script&gt;window.__pwned = 3" in tasks


def test_no_screenshots(tmp_path: Path) -> None:
    root = write_dataset(tmp_path / "data", images=False)
    run = make_run(tmp_path / "run", root, PLAN_A)
    res = build_report([run], tmp_path / "site", plots=False)
    assert res.thumbnails == 0 and any("no screenshots" in n for n in res.notes)
    page = (tmp_path / "site" / "tasks-1.html").read_text()
    assert "no screenshot" in page and "<img" not in page
    assert page.count("<figure") == 9  # every step still drawn, boxes and clicks included
    assert 'class="frame noimg"' in page


def test_data_option_overrides_the_recorded_root(site: dict[str, Path], tmp_path: Path) -> None:
    res = build_report([site["a"]], tmp_path / "s1", plots=False, data=tmp_path / "nowhere")
    assert res.thumbnails == 0
    res = build_report([site["a"]], tmp_path / "s2", plots=False, data=site["root"])
    assert res.thumbnails == 9


def test_oracle_and_warnings_shown(site: dict[str, Path], tmp_path: Path) -> None:
    run = make_run(tmp_path / "o", site["root"], PLAN_A, model="oracle", adapter_kind="baseline")
    info = json.loads((run / "run.json").read_text())
    info["status"] = "interrupted"
    (run / "run.json").write_text(json.dumps(info))
    build_report([run], tmp_path / "site", plots=False)
    index = (tmp_path / "site" / "index.html").read_text()
    assert "oracle: reads the target box" in index
    assert "run status &#x27;interrupted&#x27;" in index


def test_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match=r"no run\.json"):
        load_run(tmp_path / "empty")
    (tmp_path / "empty" / "run.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"run\.json"):
        load_run(tmp_path / "empty")
    (tmp_path / "empty" / "run.json").write_text('{"model": "m"}')
    with pytest.raises(ConfigError, match=r"overall_dataset_metrics\.json"):
        load_run(tmp_path / "empty")
    assert main(["report", str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_bad_task_file_names_the_file(site: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(site["a"], run)
    (run / "Beta" / "task_results.json").write_text('[{"task_id": 3}]')
    with pytest.raises(ConfigError, match=r"Beta/task_results.json: task 0"):
        load_run(run)
