"""The report of a live run, without a browser: the summary page leads with the live metrics
(intervals, per environment) and puts the static-protocol numbers below; no empty plot and no
warning while building; readable notes; texts shortened at a word boundary; the frames link
to the full screenshots inside the report folder."""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import pytest

from medspot.report.build import build_report
from medspot.report.text import shorten

OLD = Path(__file__).parent / "fixtures" / "live_run_before_typed_fields"


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("Study date Sunday, April 23, 2023", 20, "Study date Sunday…"),
        ("Sunday, April 23", 15, "Sunday, April…"),
        ("short", 60, "short"),
        ("  many   spaces\nhere ", 60, "many spaces here"),
        ("Supercalifragilistic", 8, "Superca…"),
        ("one two", 7, "one two"),
        ("one two three", 8, "one two…"),
    ],
)
def test_shorten_cuts_at_a_word_boundary(text: str, limit: int, expected: str) -> None:
    out = shorten(text, limit)
    assert out == expected and len(out) <= limit


def test_a_live_report_builds_without_a_warning(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="pip install 'medspot[report]'")
    run = Path(shutil.copytree(OLD, tmp_path / "run"))
    site = tmp_path / "site"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = build_report([run], site, data=run, n_boot=50)
    stems = {p.stem for p in res.plots}
    assert "survival" not in stems  # a live run has no survival curve: no empty frame
    assert {"per_app_tca", "failure_types", "error_offsets"} <= stems
    index = (site / "index.html").read_text()
    live, static = index.index('id="live-metrics"'), index.index('id="metrics"')
    assert live < static < index.index('id="per-app"')
    section = index[live:static]
    for label in ("task success", "harmful failures", "recovery after a miss",
                  "steps against the oracle", "intended-element hits"):  # fmt: skip
        assert f">{label}</th>" in section
    # 50.0% success with its interval, per environment too
    assert re.search(r"<td>50\.0 <span class=\"ci\">\[\d+\.\d, \d+\.\d\]</span></td>", section)
    assert 'id="live-per-env"' in section and '<td class="text">ohif</td>' in section
    assert "<td>guided</td>" in section and 'href="live-1.html"' in section


def test_frames_link_to_the_full_screenshots(tmp_path: Path) -> None:
    run = Path(shutil.copytree(OLD, tmp_path / "run"))
    site = tmp_path / "site"
    build_report([run], site, data=run, n_boot=50, plots=False)
    page = (site / "live-1.html").read_text()
    links = re.findall(r'<a class="full" href="(full/[0-9a-f]+\.png)"', page)
    # 3 + 2 actions and 2 final screens, 4 distinct screens; and in the safety section the
    # screen the harmful run's last action left behind (a run written before harm labels: its
    # harm counted as major)
    assert len(links) == 8
    assert len(set(links)) == 4
    safety = page[page.index('id="live-safety"') : page.index('<section class="task')]
    assert len(re.findall(r'<a class="full" href="full/', safety)) == 1
    assert "major/unlabelled" in safety and "counted as major" in safety
    for rel in set(links):
        copy = site / rel
        assert copy.is_file() and copy.stat().st_size > 0
    originals = {p.read_bytes() for p in (run / "screens").glob("*.png")}
    assert {(site / rel).read_bytes() for rel in set(links)} == originals


def test_a_step_without_click_or_answer_reads_clearly(tmp_path: Path) -> None:
    run = Path(shutil.copytree(OLD, tmp_path / "run"))
    build_report([run], tmp_path / "site", data=run, n_boot=50, plots=False)
    tasks = (tmp_path / "site" / "tasks-1.html").read_text()
    assert "no click · no raw answer stored" in tasks
    assert "no clickno raw" not in re.sub(r"<[^>]+>", "", tasks)
