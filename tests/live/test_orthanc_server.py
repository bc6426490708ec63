"""The private Orthanc and the seeded studies: deterministic seeding, fast REST reset with
stable IDs, faults when Orthanc dies, and two environments side by side."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack

from medspot.live.core.actions import Click
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.tasks import CheckSpec, LiveTask, Locator
from medspot.live.envs.registry import create_environment
from medspot.live.services.seed import LANDMARKS, build_catalogue, seed_files

pytestmark = pytest.mark.live


def _task(route: str = "#find-patients") -> LiveTask:
    return LiveTask.model_validate(
        {
            "id": "probe",
            "instruction": "probe",
            "start": {"route": route},
            "steps": [{"instruction": "x", "target": {"css": "body"}}],
            "success": [{"kind": "orthanc.instance_count", "count": 0}],
        }
    )


def test_seed_files_are_deterministic(tmp_path: Path) -> None:
    pytest.importorskip("pydicom")
    a = seed_files(tmp_path / "a", seed=3)
    b = seed_files(tmp_path / "b", seed=3)
    assert sorted(a.files) == sorted(b.files)
    for uid, path in a.files.items():
        assert path.read_bytes() == b.files[uid].read_bytes(), uid
    first = next(iter(a.files.values()))
    mtime = first.stat().st_mtime_ns
    again = seed_files(tmp_path / "a", seed=3)  # reused, not rewritten
    assert again.files == a.files and first.stat().st_mtime_ns == mtime
    other = build_catalogue(4)
    assert [p.name for p in other.patients] == [p.name for p in a.catalogue.patients]
    assert other.study("CT-DOE-JOHN").uid != a.catalogue.study("CT-DOE-JOHN").uid


def test_seeded_images_are_plausible(tmp_path: Path) -> None:
    pydicom = pytest.importorskip("pydicom")
    seed = seed_files(tmp_path, seed=0)
    cat = seed.catalogue
    names = [p.name for p in cat.patients]
    assert {"DOE^JOHN", "DOE^JOAN", "SMITH^ANN", "SMITH^ANNA"} <= set(names)
    assert {se.modality for se in cat.all_series()} == {"CT", "MR"}
    se = cat.series("CT-DOE-JOHN/AXIAL")
    ds = pydicom.dcmread(seed.files[se.instance_uids[2]])
    assert (ds.Rows, ds.Columns, ds.BitsAllocated) == (256, 256, 16)
    assert (float(ds.WindowCenter), float(ds.WindowWidth)) == (40.0, 400.0)
    assert ds.InstanceNumber == 3 and ds.PatientName == "DOE^JOHN"
    assert all(len(u) <= 64 for u in (ds.StudyInstanceUID, ds.FrameOfReferenceUID))
    hu = ds.pixel_array.astype(float) * float(ds.RescaleSlope) + float(ds.RescaleIntercept)
    assert hu[5, 5] < -900  # air outside the body
    assert -100 < hu[128, 128] < 150  # soft tissue at the centre
    for col, row in LANDMARKS.values():  # the markers are the brightest pixels
        assert hu[row, col] == hu.max()
    x, y, z = se.landmark_world("B", 2)
    assert (x, y, z) == (-128 + 192 * 1.0, -128 + 128 * 1.0, 10.0)
    assert list(map(float, ds.ImagePositionPatient)) == [-128.0, -128.0, 10.0]
    slices = [pydicom.dcmread(seed.files[u]).pixel_array for u in se.instance_uids]
    assert (slices[0] != slices[-1]).any()  # scrolling shows something different


def test_reset_keeps_ids_and_restores_deletions(orthanc_env: Any) -> None:
    env = orthanc_env
    env.reset(_task())
    srv, seed = env.orthanc, env.seed
    before = (dict(srv.ids.patients), dict(srv.ids.studies), dict(srv.ids.series))
    total = len(srv.get("/instances"))
    assert total == sum(se.slices for se in seed.catalogue.all_series())
    assert srv.reset_to(seed) < 5  # nothing changed: nothing to do
    srv.delete(f"/studies/{srv.ids.studies['CT-DOE-JOAN']}")  # the patient's last study
    srv.delete(f"/series/{srv.ids.series['MR-DOE-JOHN/T2']}")
    assert not env.check(CheckSpec(kind="orthanc.patient_present", patient="DOE^JOAN"))
    assert env.check(CheckSpec(kind="orthanc.series_absent", series="MR-DOE-JOHN/T2"))
    env.reset(_task())
    assert env.check(CheckSpec(kind="orthanc.patient_present", patient="DOE^JOAN"))
    assert env.check(CheckSpec(kind="orthanc.instance_count", count=total))
    assert (srv.ids.patients, srv.ids.studies, srv.ids.series) == before
    for name, oid in before[1].items():  # the IDs really are Orthanc's, after the reset
        got = srv.get(f"/studies/{oid}")
        assert got is not None and got["MainDicomTags"]["StudyInstanceUID"] == (
            seed.catalogue.study(name).uid
        )


def test_page_changes_are_not_animated(orthanc_env: Any) -> None:
    """jQuery Mobile's page fade and dialog pop are off on every page of the environment (its
    init script), also on the page a later reset opens: a page is shown at once."""
    env = orthanc_env
    for route in ("#find-patients", "#lookup"):
        env.reset(_task(route))
        got = env.web.page.evaluate(
            "() => [$.mobile.defaultPageTransition, $.mobile.defaultDialogTransition]"
        )
        assert got == ["none", "none"]


def test_reset_removes_foreign_instances(orthanc_env: Any, tmp_path: Path) -> None:
    pydicom = pytest.importorskip("pydicom")
    env = orthanc_env
    env.reset(_task())
    srv, seed = env.orthanc, env.seed
    total = len(srv.get("/instances"))
    se = seed.catalogue.series("CT-MILLER/AXIAL")
    ds = pydicom.dcmread(seed.files[se.instance_uids[0]])
    ds.SOPInstanceUID = ds.file_meta.MediaStorageSOPInstanceUID = se.uid + ".99"
    extra = tmp_path / "extra.dcm"
    ds.save_as(extra)
    srv.upload(extra.read_bytes())
    ds.PatientID, ds.PatientName, ds.StudyInstanceUID = "X1", "STRANGER^X", se.uid + ".77"
    ds.SeriesInstanceUID, ds.SOPInstanceUID = se.uid + ".78", se.uid + ".79"
    ds.save_as(extra)
    srv.upload(extra.read_bytes())
    assert len(srv.get("/instances")) == total + 2
    env.reset(_task())
    assert len(srv.get("/instances")) == total
    assert len(srv.get("/patients")) == len(seed.catalogue.patients)


def test_two_environments_side_by_side(tmp_path: Path, seed_cache: Path) -> None:
    require_orthanc_stack()
    envs: list[Any] = [
        create_environment(
            "orthanc-explorer", workdir=tmp_path / f"e{i}", chromium=CHROMIUM, seed_cache=seed_cache
        )
        for i in range(2)
    ]
    try:
        for env in envs:
            env.start()
        a, b = envs
        assert a.orthanc.port != b.orthanc.port
        assert a.orthanc.ids.studies == b.orthanc.ids.studies  # hashes of the same UIDs
        obs_a, obs_b = a.reset(_task()), b.reset(_task("#lookup"))
        assert obs_a.url.endswith("#find-patients") and obs_b.url.endswith("#lookup")
        a.orthanc.delete(f"/patients/{a.orthanc.ids.patients['MILLER^PETER']}")
        assert a.check(CheckSpec(kind="orthanc.patient_absent", patient="MILLER^PETER"))
        assert b.check(CheckSpec(kind="orthanc.patient_present", patient="MILLER^PETER"))
        box = b.locate(Locator(css="#lookup a[href='#find-patients']"))
        assert box is not None
        b.act(Click(*box.center))
        assert b.observe().url.endswith("#find-patients")
        assert a.observe().url.endswith("#find-patients")
    finally:
        for env in envs:
            env.close()
    for env in envs:
        assert env.orthanc.proc is None and env.web.browser is None


def test_killing_orthanc_mid_task_is_an_environment_fault(tmp_path: Path, seed_cache: Path) -> None:
    require_orthanc_stack()
    env: Any = create_environment(
        "orthanc-explorer", workdir=tmp_path / "k", chromium=CHROMIUM, seed_cache=seed_cache
    )
    try:
        env.reset(_task())
        box = env.locate(Locator(css="#all-patients li", contains="MS0001"))
        assert box is not None
        os.kill(env.orthanc.proc.pid, signal.SIGKILL)
        env.orthanc.proc.wait(timeout=10)
        with pytest.raises(EnvironmentFault):
            env.act(Click(*box.center))
        with pytest.raises(EnvironmentFault):
            env.check(CheckSpec(kind="orthanc.study_present", study="CT-DOE-JOHN"))
        with pytest.raises(EnvironmentFault):
            env.reset(_task())
    finally:
        env.close()
    env.close()  # idempotent
