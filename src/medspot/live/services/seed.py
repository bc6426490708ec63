"""Synthetic DICOM studies for the live environments, and their catalogue.

Several patients (with look-alikes: DOE^JOHN / DOE^JOAN, SMITH^ANN / SMITH^ANNA), CT and MR
studies, multi-slice 16-bit 256x256 phantoms with a correct window/level, short UIDs, all
deterministic from `seed`. Written once into a cache folder (`seed_files`) and reused.

Tasks and checks name things by stable catalogue names, never by Orthanc hashes:
patients by their DICOM name ("DOE^JOHN"), studies by a short name ("CT-DOE-JOHN"), series as
"<study>/<series>" ("CT-DOE-JOHN/AXIAL").

Phantom geometry (every image of every series): an elliptical body centred at pixel
(128, 128) and three bright marker dots (radius 3 px, the brightest pixels of the image) at the
`LANDMARKS` pixel positions (column, row). `SeriesInfo.landmark_world(name, slice)` gives the
patient coordinates in mm (axial orientation, `ImagePositionPatient` + column/row x spacing).
Slices differ: a lesion disk whose radius grows with the slice index.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from medspot.cache import cache_root

__all__ = [
    "CATALOGUE",
    "LANDMARKS",
    "SEED_VERSION",
    "Acquisition",
    "Catalogue",
    "PatientInfo",
    "SeedSet",
    "SeriesInfo",
    "StudyInfo",
    "build_catalogue",
    "catalogue_geometry",
    "seed_files",
    "write_once",
    "write_slice",
]

SEED_VERSION = "v1"
UID_ROOT = "1.2.826.0.1.3680043.8.498"  # pydicom's UID root
SIZE = 256
LANDMARKS: dict[str, tuple[int, int]] = {"A": (64, 128), "B": (192, 128), "C": (128, 64)}
MARKER_RADIUS = 3


@dataclass(frozen=True, slots=True)
class SeriesInfo:
    name: str  # "<study>/<short>", e.g. "CT-DOE-JOHN/AXIAL"
    short: str  # "AXIAL"
    description: str  # SeriesDescription, as the UIs show it
    modality: str  # "CT" | "MR"
    slices: int
    number: int  # SeriesNumber
    uid: str  # SeriesInstanceUID
    instance_uids: tuple[str, ...]  # SOPInstanceUIDs, slice order (InstanceNumber 1..n)
    pixel_spacing: float  # mm, rows and columns
    slice_thickness: float  # mm, also the z step
    window: tuple[int, int]  # (center, width), in output (rescaled) units

    def landmark_world(self, name: str, slice_index: int = 0) -> tuple[float, float, float]:
        """The landmark's patient coordinates (mm) on slice `slice_index` (0-based)."""
        col, row = LANDMARKS[name]
        x0, y0, z0 = _origin(self.pixel_spacing, self.slice_thickness, slice_index)
        return (x0 + col * self.pixel_spacing, y0 + row * self.pixel_spacing, z0)


@dataclass(frozen=True, slots=True)
class StudyInfo:
    name: str  # "CT-DOE-JOHN"
    patient: str  # the patient's name, "DOE^JOHN"
    description: str  # StudyDescription
    date: str  # YYYYMMDD
    accession: str
    uid: str  # StudyInstanceUID
    series: tuple[SeriesInfo, ...]


@dataclass(frozen=True, slots=True)
class PatientInfo:
    name: str  # PatientName, "DOE^JOHN"
    patient_id: str  # PatientID, "MS0001"
    birth_date: str
    sex: str
    studies: tuple[StudyInfo, ...]


@dataclass(frozen=True, slots=True)
class Catalogue:
    seed: int
    patients: tuple[PatientInfo, ...]

    def patient(self, name: str) -> PatientInfo:
        for p in self.patients:
            if p.name == name:
                return p
        raise KeyError(f"no seeded patient {name!r}; known: {[p.name for p in self.patients]}")

    def study(self, name: str) -> StudyInfo:
        for p in self.patients:
            for s in p.studies:
                if s.name == name:
                    return s
        raise KeyError(f"no seeded study {name!r}; known: {[s.name for s in self.studies()]}")

    def series(self, name: str) -> SeriesInfo:
        study, _, _ = name.partition("/")
        for se in self.study(study).series:
            if se.name == name:
                return se
        raise KeyError(f"no seeded series {name!r}")

    def studies(self) -> list[StudyInfo]:
        return [s for p in self.patients for s in p.studies]

    def all_series(self) -> list[SeriesInfo]:
        return [se for s in self.studies() for se in s.series]

    def slice_problem(self, number: int, series: str | None = None) -> str | None:
        """Why no image of `series` (of any seeded series when None) is number `number`
        (1-based: a stack position, an InstanceNumber, a slice); None when one is. A task's
        check validated against the seeded studies (`CheckParams.geometry_problem`)."""
        if series is not None:
            n = self.series(series).slices
            return None if 1 <= number <= n else f"{series} has images 1..{n}"
        most = max(se.slices for se in self.all_series())
        return None if 1 <= number <= most else f"no seeded series has more than {most} images"

    def to_json(self) -> dict[str, object]:
        """A plain description (names -> UIDs, geometry, landmarks) for notes and other tools."""
        out: dict[str, object] = {"seed": self.seed, "version": SEED_VERSION, "patients": []}
        pats: list[object] = []
        for p in self.patients:
            studies: list[object] = []
            for s in p.studies:
                series = [
                    {
                        "name": se.name,
                        "description": se.description,
                        "modality": se.modality,
                        "slices": se.slices,
                        "uid": se.uid,
                        "pixel_spacing": se.pixel_spacing,
                        "slice_thickness": se.slice_thickness,
                        "window": list(se.window),
                        "landmarks_pixel": {k: list(v) for k, v in LANDMARKS.items()},
                    }
                    for se in s.series
                ]
                studies.append(
                    {"name": s.name, "description": s.description, "uid": s.uid, "series": series}
                )
            pats.append({"name": p.name, "patient_id": p.patient_id, "studies": studies})
        out["patients"] = pats
        return out


# (name, id, birth, sex, [(study short, description, date, [(series short, desc, modality, n)])])
_PLAN: tuple[tuple[str, str, str, str, tuple[tuple[str, str, str, tuple[tuple[str, str, str, int], ...]], ...]], ...] = (  # noqa: E501
    ("DOE^JOHN", "MS0001", "19610402", "M", (
        ("CT-DOE-JOHN", "CT CHEST", "20240312", (
            ("AXIAL", "Chest Axial 5mm", "CT", 8), ("SCOUT", "Scout", "CT", 1))),
        ("MR-DOE-JOHN", "MR BRAIN", "20240520", (
            ("T1", "T1 Axial", "MR", 6), ("T2", "T2 Axial", "MR", 6))))),
    ("DOE^JOAN", "MS0002", "19630917", "F", (
        ("CT-DOE-JOAN", "CT CHEST", "20240312", (
            ("AXIAL", "Chest Axial 5mm", "CT", 8),)),)),
    ("SMITH^ANN", "MS0003", "19750111", "F", (
        ("MR-SMITH-ANN", "MR BRAIN", "20231105", (
            ("T1", "T1 Axial", "MR", 6),)),)),
    ("SMITH^ANNA", "MS0004", "19790630", "F", (
        ("CT-SMITH-ANNA", "CT ABDOMEN", "20240108", (
            ("AXIAL", "Abdomen Axial 5mm", "CT", 8),)),)),
    ("GARCIA^MARIA", "MS0005", "19580224", "F", (
        ("CT-GARCIA", "CT ABDOMEN", "20230719", (
            ("AXIAL", "Abdomen Axial 5mm", "CT", 8),)),
        ("MR-GARCIA", "MR KNEE", "20240211", (
            ("PD", "PD Sagittal", "MR", 6),)))),
    ("MILLER^PETER", "MS0006", "19820813", "M", (
        ("CT-MILLER", "CT HEAD", "20240601", (
            ("AXIAL", "Head Axial 5mm", "CT", 8),)),)),
)  # fmt: skip

_CT = {"spacing": 1.0, "thickness": 5.0, "window": (40, 400)}
_MR = {"spacing": 0.9, "thickness": 4.0, "window": (500, 1000)}


def _origin(spacing: float, thickness: float, k: int) -> tuple[float, float, float]:
    half = SIZE * spacing / 2
    return (-half, -half, k * thickness)


def catalogue_geometry(task: object) -> Catalogue:
    """The geometry a task's checks are validated against in an environment that shows the
    seeded studies (`EnvEntry.geometry`): their catalogue (its names and image counts do not
    depend on the task or the seed)."""
    return CATALOGUE


def build_catalogue(seed: int = 0) -> Catalogue:
    """The catalogue for `seed` (no files written)."""
    patients: list[PatientInfo] = []
    for pi, (pname, pid, birth, sex, studies) in enumerate(_PLAN, start=1):
        sts: list[StudyInfo] = []
        for si, (sname, sdesc, date, series) in enumerate(studies, start=1):
            study_uid = f"{UID_ROOT}.{seed}.{pi}.{si}"
            ses: list[SeriesInfo] = []
            for ri, (short, desc, mod, n) in enumerate(series, start=1):
                geo = _CT if mod == "CT" else _MR
                series_uid = f"{study_uid}.{ri}"
                ses.append(
                    SeriesInfo(
                        name=f"{sname}/{short}",
                        short=short,
                        description=desc,
                        modality=mod,
                        slices=n,
                        number=ri,
                        uid=series_uid,
                        instance_uids=tuple(f"{series_uid}.{k}" for k in range(1, n + 1)),
                        pixel_spacing=float(geo["spacing"]),  # type: ignore[arg-type]
                        slice_thickness=float(geo["thickness"]),  # type: ignore[arg-type]
                        window=geo["window"],  # type: ignore[arg-type]
                    )
                )
            acc = f"A{seed % 100:02d}{pi}{si:02d}"
            sts.append(StudyInfo(sname, pname, sdesc, date, acc, study_uid, tuple(ses)))
        patients.append(PatientInfo(pname, pid, birth, sex, tuple(sts)))
    return Catalogue(seed, tuple(patients))


CATALOGUE = build_catalogue(0)


def _phantom(modality: str, k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Stored pixel values (uint16) of slice k of n."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    cx = cy = SIZE / 2
    body = ((xx - cx) / 110) ** 2 + ((yy - cy) / 95) ** 2 <= 1
    r = 8 + 14 * (k + 1) / max(n, 1)  # lesion radius grows with the slice index
    lesion = (xx - 150) ** 2 + (yy - 160) ** 2 <= r**2
    if modality == "CT":  # stored = HU + 1024
        img = np.full((SIZE, SIZE), -1000.0, np.float32)
        img[body] = 40
        lungs = (((xx - 90) / 30) ** 2 + ((yy - 120) / 45) ** 2 <= 1) | (
            ((xx - 166) / 30) ** 2 + ((yy - 120) / 45) ** 2 <= 1
        )
        img[lungs] = -800
        img[(xx - 128) ** 2 + (yy - 190) ** 2 <= 14**2] = 700  # spine
        img[lesion] = 120
        img += rng.normal(0, 8, img.shape).astype(np.float32)
        marker, offset = 2500.0, 1024.0
    else:
        img = np.zeros((SIZE, SIZE), np.float32)
        img[body] = 450
        img[((xx - cx) / 80) ** 2 + ((yy - cy) / 70) ** 2 <= 1] = 700
        img[((xx - 118) / 10) ** 2 + ((yy - 125) / 22) ** 2 <= 1] = 150  # ventricles
        img[((xx - 138) / 10) ** 2 + ((yy - 125) / 22) ** 2 <= 1] = 150
        img[lesion] = 900
        img += rng.normal(0, 6, img.shape).astype(np.float32)
        marker, offset = 1800.0, 0.0
    for col, row in LANDMARKS.values():
        img[(xx - col) ** 2 + (yy - row) ** 2 <= MARKER_RADIUS**2] = marker
    out: np.ndarray = np.clip(img + offset, 0, 4095).astype(np.uint16)
    return out


@dataclass(frozen=True, slots=True)
class Acquisition:
    """What the header of each slice of a synthetic series says beyond its patient, study and
    series: the study's time and ID (StudyTime, StudyID), the body part, an MR's
    (ScanningSequence, RepetitionTime, EchoTime), and whether SpacingBetweenSlices is written."""

    time: str
    study_id: str
    body_part: str
    mr: tuple[str, float, float]
    spacing_between_slices: bool = False


def _mr_sequence(se: SeriesInfo) -> tuple[str, float, float]:
    return ("SE", 500, 15) if "T1" in se.short else ("SE", 3000, 90)


def write_slice(
    path: Path,
    of: tuple[PatientInfo, StudyInfo, SeriesInfo],
    k: int,
    pixels: np.ndarray,
    position: tuple[float, float, float],
    how: Acquisition,
) -> None:
    """Slice `k` (0-based) of a synthetic axial series as a DICOM file: `pixels` (12 bits
    stored in 16), at `position` (ImagePositionPatient, mm), of the patient, study and series
    `of`; the one writer of the seeded studies and of InVesalius's phantoms
    (`envs.invesalius.phantoms`)."""
    from pydicom.dataset import Dataset as DicomDataset
    from pydicom.dataset import FileMetaDataset
    from pydicom.uid import UID, CTImageStorage, ExplicitVRLittleEndian, MRImageStorage

    p, s, se = of
    sop_class = CTImageStorage if se.modality == "CT" else MRImageStorage
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = sop_class
    meta.MediaStorageSOPInstanceUID = UID(se.instance_uids[k])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    meta.ImplementationClassUID = UID(f"{UID_ROOT}.1")
    ds = DicomDataset()
    ds.file_meta = meta
    ds.SOPClassUID = sop_class
    ds.SOPInstanceUID = se.instance_uids[k]
    ds.PatientName = p.name
    ds.PatientID = p.patient_id
    ds.PatientBirthDate = p.birth_date
    ds.PatientSex = p.sex
    ds.StudyInstanceUID = s.uid
    ds.StudyDate = ds.SeriesDate = ds.ContentDate = s.date
    ds.StudyTime = ds.SeriesTime = ds.ContentTime = how.time
    ds.StudyDescription = s.description
    ds.AccessionNumber = s.accession
    ds.StudyID = how.study_id
    ds.ReferringPhysicianName = "HOUSE^GREGORY"
    ds.InstitutionName = "MedSPOT Synthetic Hospital"
    ds.SeriesInstanceUID = se.uid
    ds.SeriesNumber = se.number
    ds.SeriesDescription = se.description
    ds.Modality = se.modality
    ds.BodyPartExamined = how.body_part
    ds.FrameOfReferenceUID = f"{s.uid}.0"
    ds.InstanceNumber = k + 1
    ds.ImagePositionPatient = list(position)
    ds.ImageOrientationPatient = [1, 0, 0, 0, 1, 0]
    ds.SliceThickness = se.slice_thickness
    if how.spacing_between_slices:
        ds.SpacingBetweenSlices = se.slice_thickness
    ds.SliceLocation = position[2]
    ds.PixelSpacing = [se.pixel_spacing, se.pixel_spacing]
    ds.Rows, ds.Columns = pixels.shape
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = "MONOCHROME2"
    ds.BitsAllocated = 16
    ds.BitsStored = 12
    ds.HighBit = 11
    ds.PixelRepresentation = 0
    ds.WindowCenter, ds.WindowWidth = se.window
    if se.modality == "CT":
        ds.RescaleIntercept, ds.RescaleSlope, ds.RescaleType = -1024, 1, "HU"
        ds.KVP, ds.ConvolutionKernel = 120, "STANDARD"
    else:
        ds.MagneticFieldStrength = 1.5
        ds.ScanningSequence, ds.RepetitionTime, ds.EchoTime = how.mr
    ds.PixelData = pixels.tobytes()
    ds.save_as(path, enforce_file_format=True)


@dataclass(frozen=True, slots=True)
class SeedSet:
    """The seeded files on disk: `files[sop_instance_uid] -> path`, and the catalogue."""

    folder: Path
    catalogue: Catalogue
    files: dict[str, Path]


def _default_cache() -> Path:
    return cache_root() / "live"


def seed_files(cache: Path | None = None, seed: int = 0) -> SeedSet:
    """Write the seeded studies into `cache` (default: medspot's cache folder) once; reuse."""
    cat = build_catalogue(seed)
    folder = (cache or _default_cache()) / f"seed-{SEED_VERSION}-s{seed}"
    files: dict[str, Path] = {}
    for p in cat.patients:
        for s in p.studies:
            for se in s.series:
                for k, uid in enumerate(se.instance_uids):
                    files[uid] = folder / s.name / se.short / f"{k + 1:03d}.dcm"

    def write(tmp: Path) -> None:
        rng = np.random.default_rng(seed)
        for p in cat.patients:
            for s in p.studies:
                for se in s.series:
                    (tmp / s.name / se.short).mkdir(parents=True, exist_ok=True)
                    how = Acquisition("093000", s.name.split("-")[0] + "1",
                                      s.description.split()[-1], _mr_sequence(se))  # fmt: skip
                    for k in range(se.slices):
                        pixels = _phantom(se.modality, k, se.slices, rng)
                        position = _origin(se.pixel_spacing, se.slice_thickness, k)
                        write_slice(tmp / s.name / se.short / f"{k + 1:03d}.dcm",
                                    (p, s, se), k, pixels, position, how)  # fmt: skip
        (tmp / "catalogue.json").write_text(json.dumps(cat.to_json(), indent=1), encoding="utf-8")

    write_once(folder, "catalogue.json", write)
    return SeedSet(folder, cat, files)


def write_once(folder: Path, marker: str, write: Callable[[Path], None]) -> None:
    """`folder` made by `write` unless it holds `marker` (the file `write` writes last): into a
    folder of this process and thread beside it (environments of one process, the threads
    executor, write at once), then renamed into place; where another one won the race, its
    copy is used."""
    if (folder / marker).exists():
        return
    tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}-{threading.get_ident()}")
    write(tmp)
    try:
        tmp.rename(folder)
    except OSError:  # another process won the race: use its copy
        shutil.rmtree(tmp, ignore_errors=True)
        if not (folder / marker).exists():
            raise
