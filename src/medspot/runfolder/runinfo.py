"""`run.json`: what was run, validated with pydantic at the disk boundary."""

from __future__ import annotations

import json
import platform
import subprocess
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from medspot._version import __version__
from medspot.dataset.hub import is_hub_id
from medspot.dataset.records import Dataset
from medspot.errors import ConfigError, MedspotError

__all__ = [
    "FORMAT_VERSION",
    "DatasetInfo",
    "RunInfo",
    "ZoomInfo",
    "git_revision",
    "now_iso",
    "package_versions",
]

# The version of the run-folder format (layout and schemas) that this code writes. A run.json
# without the field is version 0, written before versioning; it reads the same way.
FORMAT_VERSION = 1

# Settings that change what a model is asked; a resumed run must match them.
PREDICTION_KEYS = ("model", "prompt_style", "history", "all_steps", "seed")


class DatasetInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    source: str = ""
    root: str = ""
    fingerprint: str = ""
    apps: list[str] = Field(default_factory=list)
    limit: int | None = None

    @classmethod
    def of(cls, ds: Dataset, limit: int | None = None) -> DatasetInfo:
        """How run.json names `ds`: its root as an absolute path (so that `score` and `report`
        find it from any working directory), and as source the hub id it came from, or the
        absolute path of the local folder given."""
        root = str(Path(ds.root).resolve())
        source = ds.source or root
        if Path(source).exists() or not is_hub_id(source):
            source = str(Path(source).resolve())  # else a hub dataset: recorded as its id
        return cls(
            source=source, root=root, fingerprint=ds.fingerprint, apps=list(ds.app_names),
            limit=limit,
        )  # fmt: skip


class ZoomInfo(BaseModel):
    """A multi-pass (zoom-in) run: `passes` model calls per step, each later one on a window
    `crop` times the width and height of the one before (`medspot.adapters.zoom`); the model
    calls of every pass of the run (`model_calls`), counted when it stops."""

    model_config = ConfigDict(extra="allow")
    passes: int
    crop: float
    model_calls: int | None = None

    @property
    def settings(self) -> tuple[int, float]:
        return self.passes, self.crop


class RunInfo(BaseModel):
    """`run.json`. `format_version` 0: a folder written before versioning (see `layout`)."""

    model_config = ConfigDict(extra="allow")
    format_version: int = FORMAT_VERSION
    model: str
    adapter: dict[str, Any] = Field(default_factory=dict)
    protocol: str = "medspot-v1"
    tolerance_px: float | None = None
    prompt_style: str = "native"
    history: str = "none"
    all_steps: bool = False
    seed: int = 0
    dataset: DatasetInfo = Field(default_factory=DatasetInfo)
    versions: dict[str, str] = Field(default_factory=dict)
    git_revision: str | None = None
    started: str = ""
    finished: str | None = None
    # running, complete, incomplete, interrupted, budget_reached, or failed (`error` says why)
    status: str = "running"
    error: str | None = None  # status "failed": the error that stopped the run
    calls: int = 0
    errors: int = 0
    retries: int = 0
    cost_usd: float | None = None
    medspot_version: str = __version__
    rescored_from: str | None = None  # the run folder whose journal this one was scored from
    zoom: ZoomInfo | None = None  # a multi-pass (zoom-in) run; None: one call per step

    @classmethod
    def load(cls, path: Path) -> Self:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                data.setdefault("format_version", 0)
            info = cls.model_validate(data)
        except FileNotFoundError:
            raise ConfigError(f"{path.parent} is not a medspot run (no run.json)") from None
        except (ValueError, ValidationError) as e:
            raise ConfigError(f"{path}: not a valid run.json ({e})") from None
        if info.format_version > FORMAT_VERSION:
            raise ConfigError(
                f"{path}: run-folder format {info.format_version} is newer than this medspot "
                f"reads ({FORMAT_VERSION}); upgrade medspot"
            )
        return info

    def record_failure(self, exc: BaseException) -> None:
        """Status "failed" with the error that stopped the run: a medspot error's message, or
        for any other exception (a bug) its type and message."""
        text = str(exc) if isinstance(exc, MedspotError) else f"bug: {type(exc).__name__}: {exc}"
        self.status = "failed"
        self.error = text.strip()[:2000] or type(exc).__name__
        self.finished = now_iso()

    def resuming(self, previous: RunInfo) -> RunInfo | None:
        """`previous` (the run.json of the folder this run goes on with) as a run of this
        run's kind, or None when it is a run of another kind (`LiveRunInfo`)."""
        return previous

    def mismatches(self, other: RunInfo) -> list[str]:
        """The prediction settings in which `other` differs from this run."""
        out = []
        for key in PREDICTION_KEYS:
            a, b = getattr(self, key), getattr(other, key)
            if a != b:
                out.append(f"{key}: run folder has {a!r}, this command asks {b!r}")
        zoom_a = self.zoom.settings if self.zoom is not None else None
        zoom_b = other.zoom.settings if other.zoom is not None else None
        if zoom_a != zoom_b:
            out.append(f"zoom (passes, crop): run folder has {zoom_a}, this command asks {zoom_b}")
        mine, theirs = self.dataset, other.dataset
        if mine.apps and theirs.apps and mine.apps != theirs.apps:
            out.append(f"apps: run folder has {mine.apps}, this command asks {theirs.apps}")
        elif self.dataset.fingerprint and other.dataset.fingerprint != self.dataset.fingerprint:
            out.append("dataset: the annotations differ from the ones this run was made on")
        if mine.limit != theirs.limit:
            out.append(f"limit: run folder has {mine.limit}, this command asks {theirs.limit}")
        return out


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "medspot": __version__}
    for name in ("numpy", "pillow", "pydantic", "openai", "transformers", "torch", "rapidocr"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_revision(path: Path | None = None) -> str | None:
    """The git revision of the medspot source tree, when it is a checkout."""
    here = path or Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
