"""A task's start in InVesalius (the environment's own `start` keys), validated:

    "start": {"volume": "CT-ABDOMEN-3D",                  (default: CT-ABDOMEN-3D)
              "masks": [{"name": "Liver", "threshold": [30, 80]},
                        {"name": "Lesion edit", "threshold": [150, 250],
                         "structures": ["lesion"]}],      (voxels: these structures)
              "current": "Liver",
              "surfaces": [{"mask": "Liver", "name": "Liver surface"}],
              "slices": {"axial": 36},
              "window": [350, 50],                        (width, level)
              "task_panel": false,
              "project_file": "case.inv3",                (saved there at the start)
              "files": {"lesion.stl": "an older export"}} (text put in the export folder)

Without `masks`, the study starts as InVesalius imports it (one mask, "Mask 1", Bone).
"""

from __future__ import annotations

import base64
import zlib
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from medspot.live.core.tasks import LiveTask
from medspot.live.envs.invesalius.geometry import to_invesalius
from medspot.live.envs.invesalius.names import ExportName, PhantomStructure, PhantomVolume
from medspot.live.envs.invesalius.phantoms import true_mask, volume

__all__ = ["DEFAULT_VOLUME", "InvStart", "StartMask", "encode_voxels", "parse_start"]

DEFAULT_VOLUME = "CT-ABDOMEN-3D"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class StartMask(_Strict):
    """A mask made by `threshold`; its voxels replaced by the `structures`' true ones, or none
    (`empty`), as an edited mask."""

    name: str = Field(min_length=1, max_length=60)
    threshold: list[int] = Field(min_length=2, max_length=2)
    structures: list[PhantomStructure] | None = Field(None, min_length=1, max_length=8)
    empty: bool = False

    @model_validator(mode="after")
    def _one(self) -> StartMask:
        if self.empty and self.structures is not None:
            raise ValueError("a mask is 'empty' or has 'structures', not both")
        return self


class StartSurface(_Strict):
    mask: str = Field(min_length=1)
    name: str = Field("", max_length=60)


class Slices(_Strict):
    axial: int | None = Field(None, ge=0)
    coronal: int | None = Field(None, ge=0)
    sagittal: int | None = Field(None, ge=0)


class InvStart(_Strict):
    volume: PhantomVolume = DEFAULT_VOLUME
    masks: list[StartMask] | None = Field(None, max_length=8)
    current: str | None = None
    surfaces: list[StartSurface] = Field(default_factory=list, max_length=4)
    slices: Slices | None = None
    window: list[float] | None = Field(None, min_length=2, max_length=2)
    task_panel: bool = True
    project_file: ExportName | None = None
    files: dict[ExportName, str] = Field(default_factory=dict, max_length=8)

    @model_validator(mode="after")
    def _consistent(self) -> InvStart:
        v = volume(self.volume)
        names = [m.name for m in self.masks] if self.masks is not None else ["Mask 1"]
        if len(set(names)) != len(names):
            raise ValueError("masks: names must be unique")
        if self.current is not None and self.current not in names:
            raise ValueError(f"current: no start mask named {self.current!r}")
        for surf in self.surfaces:
            if surf.mask not in names:
                raise ValueError(f"surfaces: no start mask named {surf.mask!r}")
        known = {s.name for s in v.structures}
        for m in self.masks or []:
            for s in m.structures or []:
                if s not in known:
                    raise ValueError(f"masks: {self.volume} has no structure {s!r}")
        if self.slices is not None:
            limits = {"axial": v.slices, "coronal": v.rows, "sagittal": v.cols}
            for view, n in self.slices.model_dump(exclude_none=True).items():
                if n >= limits[view]:
                    raise ValueError(f"slices: {view} has slices 0..{limits[view] - 1}")
        return self

    def probe_args(self, dicom: str) -> dict[str, Any]:
        """The probe's `load_start` arguments."""
        out: dict[str, Any] = {"dicom": dicom, "task_panel": self.task_panel}
        if self.masks is not None:
            out["masks"] = [
                {"name": m.name, "threshold": list(m.threshold),
                 **({"voxels": encode_voxels(self.volume, m.structures or [])}
                    if m.structures or m.empty else {})}
                for m in self.masks
            ]  # fmt: skip
        if self.current is not None:
            out["current"] = self.current
        if self.surfaces:
            out["surfaces"] = [s.model_dump() for s in self.surfaces]
        if self.slices is not None:
            out["slices"] = self.slices.model_dump(exclude_none=True)
        if self.window is not None:
            out["window"] = list(self.window)
        if self.project_file is not None:
            out["project_file"] = self.project_file
        return out


def encode_voxels(vol: str, structures: list[str]) -> str:
    """The structures' true voxels as the probe takes them: InVesalius's index order, packed
    bits, zlib, base64."""
    inv = np.ascontiguousarray(to_invesalius(true_mask(vol, *structures)))  # none: empty
    return base64.b64encode(zlib.compress(np.packbits(inv.reshape(-1)).tobytes())).decode()


def parse_start(task: LiveTask) -> InvStart:
    """The task's start keys as an `InvStart`; ValueError naming the problem."""
    params = dict(task.start.params)
    try:
        return InvStart.model_validate(params)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        raise ValueError(f"{where}: {msg}" if where else msg) from None
