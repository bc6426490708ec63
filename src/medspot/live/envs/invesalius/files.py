"""Files an agent writes with InVesalius (a surface as STL, a mask as NIfTI, a project), read
back for the checks: pure parsers from bytes, and `read_export` for one file of the instance's
export folder.

STL: binary or ASCII, its triangles; the enclosed volume (divergence theorem, absolute), area
and bounds. NIfTI-1 (`.nii`, `.nii.gz`): the header's dimensions, voxel sizes and data type,
and the voxels (as numpy, in the file's (i, j, k) order).
"""

from __future__ import annotations

import gzip
import hashlib
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "ExportedFile",
    "NiftiImage",
    "StlMesh",
    "parse_nifti",
    "parse_stl",
    "picture_type",
    "read_export",
]

MAX_BYTES = 200_000_000  # a file larger than this is not read (and so is not what was asked)


@dataclass(frozen=True)
class StlMesh:
    triangles: np.ndarray  # (n, 3, 3) float64

    @property
    def volume(self) -> float:
        """The enclosed volume (mm3) of a closed mesh, whatever its orientation."""
        t = self.triangles
        if not len(t):
            return 0.0
        return abs(float(np.einsum("ij,ij->i", t[:, 0], np.cross(t[:, 1], t[:, 2])).sum()) / 6)

    @property
    def area(self) -> float:
        t = self.triangles
        if not len(t):
            return 0.0
        return float(np.linalg.norm(np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]), axis=1).sum()
                     / 2)  # fmt: skip

    @property
    def bounds(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        p = self.triangles.reshape(-1, 3)
        lo, hi = p.min(axis=0), p.max(axis=0)
        return (tuple(float(x) for x in lo), tuple(float(x) for x in hi))  # type: ignore[return-value]


def parse_stl(data: bytes) -> StlMesh:
    """Triangles of a binary or ASCII STL; ValueError when it is neither."""
    if len(data) >= 84:
        (n,) = struct.unpack_from("<I", data, 80)
        if 84 + 50 * n == len(data):
            record = np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
            rec = np.frombuffer(data, dtype=record, count=n, offset=84)
            return StlMesh(rec["v"].astype(np.float64))
    head = data[:512].lstrip().lower()
    if head.startswith(b"solid"):
        nums = re.findall(rb"vertex\s+(\S+)\s+(\S+)\s+(\S+)", data)
        if nums and len(nums) % 3 == 0:
            try:
                v = np.array([[float(x) for x in t] for t in nums], np.float64)
            except ValueError:
                raise ValueError("STL: unreadable vertex") from None
            return StlMesh(v.reshape(-1, 3, 3))
    raise ValueError("not an STL file (neither binary nor ASCII)")


_NIFTI_TYPES = {2: "u1", 4: "<i2", 8: "<i4", 16: "<f4", 64: "<f8", 256: "i1", 512: "<u2",
                768: "<u4"}  # fmt: skip


@dataclass(frozen=True)
class NiftiImage:
    shape: tuple[int, ...]
    zooms: tuple[float, ...]
    data: np.ndarray  # (i, j, k) as stored (Fortran order in the file)


def parse_nifti(data: bytes) -> NiftiImage:
    """A NIfTI-1 single file (`.nii`, gzip allowed); ValueError when it is not one."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValueError(f"NIfTI: broken gzip ({exc})") from None
    if len(data) < 352:
        raise ValueError("NIfTI: shorter than its header")
    for endian in ("<", ">"):
        (size,) = struct.unpack_from(endian + "i", data, 0)
        if size == 348:
            break
    else:
        raise ValueError("NIfTI: not a NIfTI-1 header (sizeof_hdr is not 348)")
    if data[344:348] not in (b"n+1\x00", b"ni1\x00"):
        raise ValueError("NIfTI: no n+1 magic")
    dim = struct.unpack_from(endian + "8h", data, 40)
    ndim = dim[0]
    if not 1 <= ndim <= 7:
        raise ValueError(f"NIfTI: {ndim} dimensions")
    shape = tuple(int(x) for x in dim[1 : ndim + 1])
    (dtype_code,) = struct.unpack_from(endian + "h", data, 70)
    pixdim = struct.unpack_from(endian + "8f", data, 76)
    (offset,) = struct.unpack_from(endian + "f", data, 108)
    if dtype_code not in _NIFTI_TYPES:
        raise ValueError(f"NIfTI: unsupported data type {dtype_code}")
    dt = np.dtype(_NIFTI_TYPES[dtype_code]).newbyteorder(endian)
    count = int(np.prod(shape))
    start = int(offset)
    if start + count * dt.itemsize > len(data):
        raise ValueError("NIfTI: shorter than its voxels")
    arr = np.frombuffer(data, dt, count=count, offset=start).reshape(shape, order="F")
    return NiftiImage(shape, tuple(float(x) for x in pixdim[1 : ndim + 1]), arr)


_PICTURES = ((b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"BM", "bmp"),
             (b"II*\x00", "tiff"), (b"MM\x00*", "tiff"))  # fmt: skip


def picture_type(head: bytes) -> str | None:
    """The picture format a file's first bytes announce, or None."""
    return next((kind for magic, kind in _PICTURES if head.startswith(magic)), None)


@dataclass(frozen=True)
class ExportedFile:
    """One file of the export folder as a check sees it: `exists`, its digest, and what could
    be parsed (`mesh` for .stl, `nifti` for .nii/.nii.gz; `error` when parsing failed)."""

    name: str
    exists: bool
    sha256: str | None = None
    size: int = 0
    mesh: StlMesh | None = None
    nifti: NiftiImage | None = None
    picture: str | None = None  # png / jpeg / bmp / tiff, by the file's signature
    error: str | None = None


def read_export(folder: Path, name: str) -> ExportedFile:
    """Read `folder/name` (a name inside the folder; never outside it)."""
    path = (folder / name).resolve()
    if folder.resolve() not in path.parents or not path.is_file():
        return ExportedFile(name, False)
    size = path.stat().st_size
    if size > MAX_BYTES:
        return ExportedFile(name, True, None, size, error="too large to read")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    low = name.lower()
    picture = picture_type(data[:8])
    if picture is not None:
        return ExportedFile(name, True, digest, size, picture=picture)
    try:
        if low.endswith(".stl"):
            return ExportedFile(name, True, digest, size, mesh=parse_stl(data))
        if low.endswith((".nii", ".nii.gz")):
            return ExportedFile(name, True, digest, size, nifti=parse_nifti(data))
    except ValueError as exc:
        return ExportedFile(name, True, digest, size, error=str(exc))
    return ExportedFile(name, True, digest, size)
