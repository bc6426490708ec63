"""The container engine medspot drives, podman or docker, through its command line: found and
asked its version (`find_engine`), images inspected and listed, containers listed by label and
removed. Both engines take the same arguments for what medspot uses; where they differ (the
image digest, the id's prefix, a forced removal's wait) it is said here.

Podman on a machine whose default runtime (crun) cannot set its limits needs a containers.conf
naming runc (docs/live/running.md "Containers"); podman reads it from `CONTAINERS_CONF`, and so does
every command started here, which inherits this process's environment.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from medspot.errors import ConfigError
from medspot.live.core import processes
from medspot.live.images.names import ImageLabels

__all__ = [
    "ENGINES",
    "ContainerState",
    "Engine",
    "EngineName",
    "ImageInfo",
    "find_engine",
]

log = logging.getLogger(__name__)

EngineName = Literal["podman", "docker"]
ENGINES: tuple[EngineName, ...] = get_args(EngineName)
VERSION_TIMEOUT_S = 30.0  # `podman version` / `docker version` (docker asks its daemon)
QUERY_TIMEOUT_S = 60.0  # inspect, list, remove
INSTALL_HINT = (
    "install podman (Debian, Ubuntu: apt-get install podman runc; macOS: brew install podman "
    "&& podman machine init && podman machine start) or start Docker; docs/live/running.md, "
    "'Containers'"
)


@dataclass(frozen=True)
class ImageInfo:
    """An image as the engine knows it."""

    ref: str  # the reference it was asked by
    id: str  # sha256:... (the image's configuration digest, its content address)
    digest: str | None  # the manifest digest (podman; docker: a registry digest, if pushed)
    size: int  # bytes
    created: str
    labels: ImageLabels | None  # None: not an image medspot built


@dataclass(frozen=True)
class ContainerState:
    """A container as the engine lists it."""

    id: str
    name: str
    running: bool
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Engine:
    """A container engine that answered (`find_engine`)."""

    name: EngineName
    path: str
    version: str

    def argv(self, *args: str) -> list[str]:
        return [self.path, *args]

    def run(
        self, *args: str, timeout: float = QUERY_TIMEOUT_S, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """The engine's command `args`, its output captured (never raises on its status)."""
        return processes.run(
            self.argv(*args), timeout=timeout, input=stdin, capture_output=True, check=False
        )

    def query(self, *args: str, timeout: float = QUERY_TIMEOUT_S) -> str:
        """The output of a command that must succeed (else a `ConfigError` with its error)."""
        try:
            out = self.run(*args, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ConfigError(
                f"`{self.name} {' '.join(args)}` did not answer within {timeout:g} s"
            ) from None
        if out.returncode != 0:
            raise ConfigError(f"`{self.name} {' '.join(args)}` failed: {_first_error(out)}")
        return out.stdout.decode(errors="replace")

    # -- images -----------------------------------------------------------------------------

    def inspect_image(self, ref: str) -> ImageInfo | None:
        """The image `ref`, or None when the engine has none by that name."""
        out = self.run("image", "inspect", ref)
        if out.returncode != 0:
            return None
        try:
            data = json.loads(out.stdout)[0]
        except (ValueError, IndexError, KeyError):
            return None
        return _image_info(ref, data)

    def image_ids(self, label: str) -> list[str]:
        """The ids of the images carrying `label`."""
        text = self.query("images", "-q", "--no-trunc", "--filter", f"label={label}")
        return list(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))

    def image_names(self, image_id: str) -> list[str]:
        out = self.run("image", "inspect", image_id)
        try:
            data = json.loads(out.stdout)[0]
        except (ValueError, IndexError, KeyError):
            return []
        return [str(t) for t in data.get("RepoTags") or []]

    def remove_image(self, image_id: str) -> bool:
        """Remove an image no tag and no container uses any more; whether it went."""
        return self.run("rmi", image_id).returncode == 0

    # -- containers -------------------------------------------------------------------------

    def containers(self, label: str) -> list[ContainerState]:
        """Every container (running or not) carrying `label` (KEY or KEY=VALUE)."""
        text = self.query("ps", "-a", "-q", "--no-trunc", "--filter", f"label={label}")
        ids = [line.strip() for line in text.splitlines() if line.strip()]
        if not ids:
            return []
        out = self.run("container", "inspect", *ids)
        try:  # a container removed meanwhile makes the command fail: what it found still counts
            found = json.loads(out.stdout or b"[]")
        except ValueError:
            found = []
        return [_container_state(c) for c in found if isinstance(c, dict)]

    def remove_containers(self, ids: Sequence[str]) -> None:
        """Kill and remove the containers at once (already gone: nothing to do)."""
        if not ids:
            return
        # podman: no wait before the kill, and a missing one must not stop the others' removal
        # (podman 4.3 leaves them, with status 0); docker kills at once and goes on by itself
        flags = ["-t", "0", "--ignore"] if self.name == "podman" else []
        out = self.run("rm", "-f", *flags, *ids)
        if out.returncode != 0:
            log.debug("%s rm -f: %s", self.name, _first_error(out))


def _first_error(out: subprocess.CompletedProcess[bytes]) -> str:
    text = (out.stderr or out.stdout or b"").decode(errors="replace").strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit status {out.returncode}"


def _image_info(ref: str, data: Mapping[str, Any]) -> ImageInfo:
    image_id = str(data.get("Id", ""))
    if image_id and not image_id.startswith("sha256:"):
        image_id = "sha256:" + image_id
    digest = data.get("Digest") or None  # podman
    if digest is None:  # docker: a registry's digest, where the image was pushed or pulled
        repo = [str(d) for d in data.get("RepoDigests") or []]
        digest = repo[0].partition("@")[2] if repo else None
    config = data.get("Config") or {}
    labels = config.get("Labels") or data.get("Labels") or {}
    return ImageInfo(
        ref=ref,
        id=image_id,
        digest=str(digest) if digest else None,
        size=int(data.get("Size") or 0),
        created=str(data.get("Created", "")),
        labels=ImageLabels.of({str(k): str(v) for k, v in dict(labels).items()}),
    )


def _container_state(c: Mapping[str, Any]) -> ContainerState:
    config = c.get("Config") or {}
    labels = config.get("Labels") or {}
    state = c.get("State") or {}
    return ContainerState(
        id=str(c.get("Id", "")),
        name=str(c.get("Name", "")).lstrip("/"),
        running=bool(state.get("Running")),
        labels={str(k): str(v) for k, v in dict(labels).items()},
    )


def _version_argv(name: EngineName) -> list[str]:
    # docker's client answers without a daemon: its server's version needs one
    field_ = "{{.Client.Version}}" if name == "podman" else "{{.Server.Version}}"
    return ["version", "--format", field_]


def find_engine(name: str | None = None) -> Engine:
    """The engine `name` (podman or docker), or the first of them that answers; a
    `ConfigError` naming what each lacks (exit 2)."""
    if name is not None and name not in ENGINES:
        raise ConfigError(f"unknown container engine {name!r} (known: {', '.join(ENGINES)})")
    wanted: tuple[EngineName, ...] = (name,) if name is not None else ENGINES  # type: ignore[assignment]
    why: list[str] = []
    for candidate in wanted:
        path = shutil.which(candidate)
        if path is None:
            why.append(f"{candidate}: not installed")
            continue
        try:
            out = processes.run(
                [path, *_version_argv(candidate)], timeout=VERSION_TIMEOUT_S,
                capture_output=True, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            why.append(f"{candidate}: `{candidate} version` did not answer")
            continue
        version = out.stdout.decode(errors="replace").strip()
        if out.returncode != 0 or not version:
            why.append(f"{candidate}: {_first_error(out)}")
            continue
        return Engine(candidate, path, version)
    what = f"the container engine {name} does" if name else "no container engine (podman, docker)"
    if name:
        raise ConfigError(f"{what} not answer here ({'; '.join(why)}): {INSTALL_HINT}")
    raise ConfigError(f"{what} answers here ({'; '.join(why)}): {INSTALL_HINT}")
