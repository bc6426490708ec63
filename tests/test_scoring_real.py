"""Scoring the real annotation files with an oracle (the centre of each step's first box).

The expected numbers follow from the data and protocol.md 3: 38 of the 216 tasks hold a step
with no click action (other action types or an empty `actions` list). upstream-c counts such
steps in the task's step count, so those tasks can never be completed: TCA = 178/216.
upstream-d ends a task at its first such step: also TCA = 178/216, and the hits stop there, so
the hit prefixes sum to 537 of the 607 steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from medspot.dataset.loading import load_dataset
from medspot.dataset.records import Dataset
from medspot.runfolder.journal import JournalRecord
from medspot.scoring import metrics as M
from medspot.scoring.protocol import get_protocol
from medspot.scoring.score import score_run


@pytest.fixture(scope="module")
def real(annotations_dir: Path) -> tuple[Dataset, list[JournalRecord]]:
    # the shared fixture: $MEDSPOT_ANNOTATIONS or <repo>/../shared/medspot/Annotations
    ds = load_dataset(annotations_dir.parent, check_images=False)
    recs = [
        JournalRecord(
            step=s.uid,
            task=s.task_uid,
            image_path=s.image_path,
            image_size=(1920, 1080),
            point=(s.boxes[0].center.x, s.boxes[0].center.y),
            raw_text="oracle",
        )
        for s in ds.steps()
        if s.annotated
    ]
    return ds, recs


def test_counts(real: tuple[Dataset, list[JournalRecord]]) -> None:
    ds, recs = real
    assert sum(1 for _ in ds.tasks()) == 216 and sum(1 for _ in ds.steps()) == 607
    assert len(recs) == 603  # 4 unannotated steps


def test_oracle_medspot_v1(real: tuple[Dataset, list[JournalRecord]]) -> None:
    ds, recs = real
    rs = score_run(ds, recs, get_protocol("medspot-v1"), all_steps=True, n_boot=100)
    v = rs.overall.values
    assert v[M.TCA] == v[M.S1A] == v[M.SHR] == v[M.ISA] == 1.0
    assert v[M.GAP] == 0.0
    assert rs.overall.num_tasks == 216 and rs.overall.num_steps == 603
    assert rs.overall.num_unannotated_steps == 4 and rs.complete


def test_oracle_upstream_c(real: tuple[Dataset, list[JournalRecord]]) -> None:
    ds, recs = real
    rs = score_run(ds, recs, get_protocol("upstream-c"), all_steps=False, n_boot=0)
    assert rs.overall.values[M.TCA] == pytest.approx(178 / 216)
    assert rs.overall.num_steps == 607


def test_oracle_upstream_d(real: tuple[Dataset, list[JournalRecord]]) -> None:
    ds, recs = real
    for tol in (None, 0.0):  # GUI-Actor (14 px) and SeeClick (0 px)
        rs = score_run(ds, recs, get_protocol("upstream-d", tol), all_steps=False, n_boot=0)
        assert rs.overall.values[M.TCA] == pytest.approx(178 / 216)
        assert rs.overall.values[M.SHR] == pytest.approx(537 / 607)
