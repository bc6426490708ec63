"""The container executor's options (`--engine`, `--container-image`, `--container-memory`,
`--container-cpus`) and their defaults, checked before anything starts. Light to import."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from medspot.errors import ConfigError

__all__ = [
    "DEFAULT_CONTAINER_CPUS",
    "DEFAULT_CONTAINER_MEMORY",
    "ContainerOptions",
    "check_container_options",
]

# Each slot's container: its instance and its spares (orthanc-explorer measured at about
# 0.3 GB an instance, DICOMscope's JVM and InVesalius more; benchmarks/README.md), and at most
# two cores of the machine's.
DEFAULT_CONTAINER_MEMORY = "4g"
DEFAULT_CONTAINER_CPUS = 2.0


@dataclass(frozen=True)
class ContainerOptions:
    """How environment containers are run (`--executor container`); None: the default."""

    engine: str | None = None  # podman | docker; None: the first of them that answers
    image: str | None = None  # None: localhost/medspot-<env>:<medspot version>
    memory: str | None = None  # a size the engines take (4g, 512m); None: the default
    cpus: float | None = None  # CPUs (a fraction: part of one); None: the default

    def given(self) -> list[str]:
        """The options set, as their flags."""
        return [flag for flag, v in (("--engine", self.engine), ("--container-image", self.image),
                ("--container-memory", self.memory), ("--container-cpus", self.cpus))
                if v is not None]  # fmt: skip


def check_container_options(opts: ContainerOptions) -> None:
    from medspot.live.images.engine import ENGINES

    if opts.engine is not None and opts.engine not in ENGINES:
        raise ConfigError(f"--engine {opts.engine}: unknown (known: {', '.join(ENGINES)})")
    if opts.memory is not None and not re.fullmatch(r"\d+(\.\d+)?[bkmg]?", opts.memory.lower()):
        raise ConfigError(f"--container-memory {opts.memory!r}: expected a size like 4g or 512m")
    if opts.cpus is not None and not (opts.cpus > 0 and math.isfinite(opts.cpus)):
        raise ConfigError(f"--container-cpus {opts.cpus}: must be a number above 0")
    if opts.image is not None and not opts.image.strip():
        raise ConfigError("--container-image needs an image reference")
