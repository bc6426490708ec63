"""Seeded 3D phantoms for the InVesalius environment: CT and MR volumes whose structures are
known exactly, written once as DICOM series into the cache, with their true masks.

Every structure is a solid (ellipsoid, elliptic cylinder, shell) of one intensity, so a
threshold between two neighbouring intensities segments it exactly (the noise is small beside
the gaps): the true mask of a structure is the set of voxels whose centre lies inside it and
in no structure drawn over it. Names (volumes, structures) do not depend on the seed; tasks use
them, validated when a task file is read (`medspot.live.envs.invesalius.names`).

Geometry: volumes are `rows x cols x slices` voxels (index order z, y, x: slice, row,
column), world coordinates in mm with x = (col - (cols-1)/2) * spacing (to the patient's left,
the image's right), y = (row - (rows-1)/2) * spacing (posterior, down), z = slice *
thickness - centre (superior). Axial DICOM slices, `ImageOrientationPatient` 1,0,0,0,1,0,
`ImagePositionPatient` z increasing with the slice number (InstanceNumber 1 is the most
inferior slice).

CT-ABDOMEN-3D (ROE^RICHARD): air, body (fat), a bone shell (the rib cage, an elliptic
cylinder shell) and a vertebra, the liver (an organ), a spherical lesion inside it of its own
intensity, and two look-alike kidneys (same intensity and size, mirrored). MR-HEAD-3D
(ROE^RACHEL): scalp, skull (a dark shell), brain, two look-alike lateral ventricles, a tumour
of its own intensity.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from medspot.cache import cache_root
from medspot.live.services.seed import (
    Acquisition,
    PatientInfo,
    SeriesInfo,
    StudyInfo,
    write_once,
    write_slice,
)

__all__ = [
    "PHANTOM_VERSION",
    "VOLUMES",
    "Structure",
    "VolumeInfo",
    "phantom_files",
    "structure_names",
    "true_mask",
    "volume",
    "volume_values",
]

PHANTOM_VERSION = "v1"
UID_ROOT = "1.2.826.0.1.3680043.8.498.77"  # pydicom's UID root, a branch of ours


@dataclass(frozen=True, slots=True)
class Structure:
    """A solid of one intensity. `shape`: `ellipsoid` (centre, radii), `cylinder` (an elliptic
    cylinder along z: centre x, y and radii x, y; all slices), `cylinder_shell` (the same,
    minus the cylinder `thickness` mm smaller). Centres and radii in mm (x, y, z)."""

    name: str
    description: str  # what a clinician calls it, for instructions
    shape: str
    centre: tuple[float, float, float]
    radii: tuple[float, float, float]
    value: float  # HU (CT) or signal (MR)
    thickness: float = 0.0


@dataclass(frozen=True, slots=True)
class VolumeInfo:
    name: str  # "CT-ABDOMEN-3D"
    patient: str  # PatientName
    patient_id: str
    birth_date: str
    sex: str
    modality: str  # "CT" | "MR"
    description: str  # StudyDescription
    series_description: str
    date: str
    rows: int
    cols: int
    slices: int
    spacing: float  # mm, rows and columns
    thickness: float  # mm, also the slice step
    background: float  # outside every structure
    noise: float  # standard deviation of the added noise
    window: tuple[int, int]  # (level, width) in output units, as the DICOM header says
    structures: tuple[Structure, ...]  # drawn in order: a later one covers an earlier one
    number: int  # the study's index (UIDs)

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.slices, self.rows, self.cols)

    @property
    def voxel_mm3(self) -> float:
        return self.spacing * self.spacing * self.thickness

    def structure(self, name: str) -> Structure:
        for s in self.structures:
            if s.name == name:
                return s
        raise KeyError(f"{self.name} has no structure {name!r}")

    def study_uid(self, seed: int = 0) -> str:
        return f"{UID_ROOT}.{seed}.{self.number}"

    def series_uid(self, seed: int = 0) -> str:
        return f"{self.study_uid(seed)}.1"

    def world_axes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The world coordinates (mm) of the voxel centres along z, y, x."""
        z = (np.arange(self.slices) - (self.slices - 1) / 2) * self.thickness
        y = (np.arange(self.rows) - (self.rows - 1) / 2) * self.spacing
        x = (np.arange(self.cols) - (self.cols - 1) / 2) * self.spacing
        return z, y, x

    def dicom_series(self, seed: int = 0) -> tuple[PatientInfo, StudyInfo, SeriesInfo]:
        """The patient, study and series its DICOM files name (`services.seed.write_slice`)."""
        uid = self.series_uid(seed)
        se = SeriesInfo(f"{self.name}/3D", "3D", self.series_description, self.modality,
                        self.slices, 1, uid, tuple(f"{uid}.{k}" for k in range(1, self.slices + 1)),
                        self.spacing, self.thickness, self.window)  # fmt: skip
        st = StudyInfo(self.name, self.patient, self.description, self.date,
                       f"A3D{self.number:02d}", self.study_uid(seed), (se,))  # fmt: skip
        return PatientInfo(self.patient, self.patient_id, self.birth_date, self.sex, (st,)), st, se


_CT = VolumeInfo(
    name="CT-ABDOMEN-3D", patient="ROE^RICHARD", patient_id="MS3D01", birth_date="19570309",
    sex="M", modality="CT", description="CT ABDOMEN 3D", series_description="Abdomen 2mm",
    date="20240415", rows=128, cols=128, slices=64, spacing=1.5, thickness=2.0,
    background=-1000.0, noise=5.0, window=(50, 400), number=1,
    structures=(
        Structure("body", "the body (subcutaneous and visceral fat)", "cylinder",
                  (0, 0, 0), (88, 68, 0), -90.0),
        Structure("bone", "the bone shell (rib cage)", "cylinder_shell",
                  (0, 0, 0), (80, 60, 0), 900.0, thickness=5.0),
        Structure("vertebra", "the vertebra", "cylinder", (0, 38, 0), (8, 8, 0), 900.0),
        Structure("liver", "the liver", "ellipsoid", (-30, -15, 5), (30, 25, 35), 50.0),
        Structure("lesion", "the liver lesion", "ellipsoid", (-32, -18, 8), (12, 12, 12), 190.0),
        Structure("kidney-left", "the left kidney (the patient's left, the image's right)",
                  "ellipsoid", (40, 32, -5), (13, 14, 22), 110.0),
        Structure("kidney-right", "the right kidney (the patient's right, the image's left)",
                  "ellipsoid", (-40, 32, -5), (13, 14, 22), 110.0),
    ),
)  # fmt: skip

_MR = VolumeInfo(
    name="MR-HEAD-3D", patient="ROE^RACHEL", patient_id="MS3D02", birth_date="19690722",
    sex="F", modality="MR", description="MR HEAD 3D", series_description="T1 3D 2mm",
    date="20240522", rows=128, cols=128, slices=60, spacing=1.5, thickness=2.0,
    background=0.0, noise=10.0, window=(700, 1400), number=2,
    structures=(
        Structure("scalp", "the scalp", "ellipsoid", (0, 0, 0), (75, 90, 58), 400.0),
        Structure("skull", "the skull (a dark shell)", "ellipsoid", (0, 0, 0), (70, 85, 54),
                  60.0),
        Structure("brain", "the brain", "ellipsoid", (0, 0, 0), (64, 79, 49), 650.0),
        Structure("ventricle-left", "the left lateral ventricle (the image's right)",
                  "ellipsoid", (14, -5, 6), (7, 22, 12), 150.0),
        Structure("ventricle-right", "the right lateral ventricle (the image's left)",
                  "ellipsoid", (-14, -5, 6), (7, 22, 12), 150.0),
        Structure("tumour", "the tumour", "ellipsoid", (-30, 35, 14), (11, 11, 11), 1050.0),
    ),
)  # fmt: skip

VOLUMES: dict[str, VolumeInfo] = {v.name: v for v in (_CT, _MR)}


def volume(name: str) -> VolumeInfo:
    try:
        return VOLUMES[name]
    except KeyError:
        raise KeyError(f"no phantom volume {name!r}; known: {', '.join(VOLUMES)}") from None


def structure_names(vol: str | None = None) -> list[str]:
    """The structures of one volume, or of every volume."""
    vols = [volume(vol)] if vol else list(VOLUMES.values())
    return sorted({s.name for v in vols for s in v.structures})


def _inside(v: VolumeInfo, s: Structure) -> np.ndarray:
    z, y, x = v.world_axes()
    zz, yy, xx = z[:, None, None], y[None, :, None], x[None, None, :]
    cx, cy, cz = s.centre
    rx, ry, rz = s.radii
    if s.shape == "ellipsoid":
        q = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 + ((zz - cz) / rz) ** 2
        out: np.ndarray = np.broadcast_to(q <= 1, v.shape).copy()
        return out
    q2 = ((xx - cx) / rx) ** 2 + ((yy - cy) / ry) ** 2 + 0 * zz
    solid = q2 <= 1
    if s.shape == "cylinder":
        return np.broadcast_to(solid, v.shape).copy()
    if s.shape == "cylinder_shell":
        t = s.thickness
        inner = ((xx - cx) / (rx - t)) ** 2 + ((yy - cy) / (ry - t)) ** 2 + 0 * zz <= 1
        return np.broadcast_to(solid & ~inner, v.shape).copy()
    raise ValueError(f"unknown shape {s.shape!r}")


@functools.lru_cache(maxsize=4)
def _labels(name: str) -> np.ndarray:
    """The label volume: 0 background, k+1 where structure k is the one drawn last."""
    v = volume(name)
    lab = np.zeros(v.shape, np.uint8)
    for k, s in enumerate(v.structures):
        lab[_inside(v, s)] = k + 1
    lab.setflags(write=False)
    return lab


def true_mask(vol: str, *structures: str) -> np.ndarray:
    """The voxels (bool, z/y/x) that belong to the named structures (their visible parts: a
    structure drawn over another takes its voxels)."""
    v = volume(vol)
    lab = _labels(vol)
    out = np.zeros(v.shape, bool)
    for name in structures:
        k = [s.name for s in v.structures].index(v.structure(name).name)
        out |= lab == k + 1
    return out


def volume_values(vol: str, seed: int = 0) -> np.ndarray:
    """The stored intensities (float32, output units: HU for CT), noise included."""
    v = volume(vol)
    lab = _labels(vol)
    lut = np.array([v.background, *(s.value for s in v.structures)], np.float32)
    img = lut[lab]
    rng = np.random.default_rng([seed, v.number])
    img = img + rng.normal(0, v.noise, img.shape).astype(np.float32)
    out: np.ndarray = np.round(img).astype(np.float32)
    return out


@dataclass(frozen=True, slots=True)
class PhantomSet:
    """The phantoms written on disk: one DICOM series folder per volume."""

    folder: Path

    def series_dir(self, vol: str) -> Path:
        return self.folder / volume(vol).name


def _write_series(folder: Path, v: VolumeInfo, seed: int) -> None:
    values = volume_values(v.name, seed)
    offset = 1024.0 if v.modality == "CT" else 0.0
    stored = np.clip(values + offset, 0, 4095).astype(np.uint16)
    z, _, _ = v.world_axes()
    x0 = -(v.cols - 1) / 2 * v.spacing
    y0 = -(v.rows - 1) / 2 * v.spacing
    how = Acquisition("101500", f"3D{v.number}", v.description.split()[1], ("GR", 8.1, 3.7),
                      spacing_between_slices=True)  # fmt: skip
    of = v.dicom_series(seed)
    for k in range(v.slices):
        write_slice(folder / f"{k + 1:03d}.dcm", of, k, stored[k], (x0, y0, float(z[k])), how)


def phantom_files(cache: Path | None = None, seed: int = 0) -> PhantomSet:
    """Write the phantoms' DICOM series into `cache` (default: medspot's cache folder) once;
    reuse them afterwards."""
    folder = (cache or cache_root() / "live") / f"phantoms3d-{PHANTOM_VERSION}-s{seed}"

    def write(tmp: Path) -> None:
        for v in VOLUMES.values():
            (tmp / v.name).mkdir(parents=True, exist_ok=True)
            _write_series(tmp / v.name, v, seed)
        info = {v.name: {"patient": v.patient, "shape": list(v.shape)} for v in VOLUMES.values()}
        (tmp / "phantoms.json").write_text(json.dumps(info, indent=1), encoding="utf-8")

    write_once(folder, "phantoms.json", write)
    return PhantomSet(folder)
