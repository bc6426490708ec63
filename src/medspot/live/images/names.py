"""The names of the environment images and of what medspot writes on them: image references,
the labels an image carries (`ImageLabels`: medspot's version and source, the family, the
content hash of the build's inputs, the family's Debian packages), the labels a container of a
run carries. Pure: no engine is asked here."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from medspot._version import __version__

__all__ = [
    "BASE_IMAGE",
    "CONTAINER_ENV_LABEL",
    "CONTAINER_OWNER_LABEL",
    "CONTAINER_RUN_LABEL",
    "IMAGE_PREFIX",
    "LABEL",
    "SOURCE_SUFFIXES",
    "ImageLabels",
    "image_ref",
    "source_digest",
    "source_hash",
]

# The base every family image is built on where the user names none (`--base`): Debian 12
# made by debootstrap from the machine's own apt sources (no registry needed).
BASE_IMAGE = "localhost/medspot-base:bookworm"
IMAGE_PREFIX = "localhost/medspot-"  # localhost/medspot-<env>:<medspot version>

# Image labels (`org.medspot.*`), read back by `ImageLabels.of`.
LABEL = "org.medspot"
_ENV, _VERSION, _SOURCE, _INPUTS = "env", "version", "source", "inputs"
_PACKAGES, _BASE, _PINNED = "packages", "base", "pinned"

# Container labels: every container of a live run carries its run and its owner (the driver
# process: host, pid namespace, pid and start time; `executors.container` sweeps the
# containers of dead owners).
CONTAINER_RUN_LABEL = "org.medspot.live.run"
CONTAINER_OWNER_LABEL = "org.medspot.live.owner"
CONTAINER_ENV_LABEL = "org.medspot.live.env"

# The files of medspot's package that make its source hash: what the wheel carries of it (the
# code and the package data that decide what an environment does).
SOURCE_SUFFIXES = (".py", ".json", ".js", ".html", ".css", ".txt", ".sh", ".Containerfile")


def image_ref(env: str, version: str = __version__) -> str:
    """The image of environment family `env` for medspot `version`."""
    return f"{IMAGE_PREFIX}{env}:{version}"


def source_digest(files: Iterable[tuple[str, bytes]]) -> str:
    """The hash of (path, content) pairs, paths relative to the package, in path order."""
    h = hashlib.sha256()
    for rel, data in sorted(files):
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return "sha256:" + h.hexdigest()[:32]


def source_hash() -> str:
    """The source hash of the medspot this process runs (its package's files, `SOURCE_SUFFIXES`
    only, without caches): equal to `build.wheel_source_hash` of a wheel built from it."""
    root = Path(str(resources.files("medspot")))
    files = (
        (p.relative_to(root).as_posix(), p.read_bytes())
        for p in root.rglob("*")
        if p.is_file() and p.name.endswith(SOURCE_SUFFIXES) and "__pycache__" not in p.parts
    )
    return source_digest(files)


@dataclass(frozen=True)
class ImageLabels:
    """What an environment image says of itself."""

    env: str
    version: str  # medspot's version inside
    source: str  # medspot's source hash inside (`source_hash`)
    inputs: str  # the content hash of everything the build put in
    packages: Mapping[str, str]  # the family's Debian packages and their versions inside
    base: str  # the base image it was built on
    pinned: bool = True  # every package at its validated version (else: --unpinned)

    def to_labels(self) -> dict[str, str]:
        return {
            f"{LABEL}.{_ENV}": self.env,
            f"{LABEL}.{_VERSION}": self.version,
            f"{LABEL}.{_SOURCE}": self.source,
            f"{LABEL}.{_INPUTS}": self.inputs,
            f"{LABEL}.{_PACKAGES}": json.dumps(dict(self.packages), sort_keys=True),
            f"{LABEL}.{_BASE}": self.base,
            f"{LABEL}.{_PINNED}": "true" if self.pinned else "false",
        }

    @classmethod
    def of(cls, labels: Mapping[str, str] | None) -> ImageLabels | None:
        """The labels of an image medspot built, or None for any other image."""
        labels = labels or {}
        env = labels.get(f"{LABEL}.{_ENV}")
        if not env:
            return None
        try:
            packages = json.loads(labels.get(f"{LABEL}.{_PACKAGES}") or "{}")
        except ValueError:
            packages = {}
        return cls(
            env=env,
            version=labels.get(f"{LABEL}.{_VERSION}", ""),
            source=labels.get(f"{LABEL}.{_SOURCE}", ""),
            inputs=labels.get(f"{LABEL}.{_INPUTS}", ""),
            packages={str(k): str(v) for k, v in dict(packages).items()},
            base=labels.get(f"{LABEL}.{_BASE}", ""),
            pinned=labels.get(f"{LABEL}.{_PINNED}", "true") == "true",
        )
