"""The Python packages of an environment image, made on the host so that pip inside the build
needs no index: medspot's own wheel (built from its source tree, or packed from its installed
files) and the wheels of what it needs for the worker (`IMAGE_EXTRAS`), for the image's Python
(CPython 3.11 on Debian 12's glibc 2.36), each pinned to the version this process runs.

The dependencies' wheels are kept in the medspot cache (`<cache>/images/wheelhouse/<key>`),
keyed by what decides them (medspot's declared requirements, the pins, the image's Python), so
that a rebuild after a change of medspot's code downloads nothing."""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from medspot.errors import ConfigError
from medspot.live.images.names import SOURCE_SUFFIXES, source_digest, source_hash

__all__ = [
    "IMAGE_EXTRAS",
    "IMAGE_PYTHON",
    "Wheelhouse",
    "build_wheelhouse",
    "wheel_source_hash",
]

log = logging.getLogger(__name__)

IMAGE_PYTHON = "3.11"  # Debian 12's python3
IMAGE_GLIBC_MINOR = 36  # Debian 12's glibc 2.36: manylinux_2_5 .. manylinux_2_36 wheels fit
# the worker's extras: the environments' (playwright, pydicom, httpx) and a Ray node's
IMAGE_EXTRAS = ("live", "ray")
PIP_TIMEOUT_S = 1800.0
_COMPLETE = ".complete"
WHEEL_EPOCH = 315532800  # 1980-01-01, the earliest time a zip file holds


@dataclass(frozen=True)
class Wheelhouse:
    medspot: Path  # a folder holding medspot's wheel alone
    deps: Path  # a folder of the dependencies' wheels and their requirements.txt


def wheel_source_hash(wheel: Path) -> str:
    """The source hash (`names.source_hash`) of the medspot package inside `wheel`."""
    with zipfile.ZipFile(wheel) as z:
        files = [
            (name.removeprefix("medspot/"), z.read(name))
            for name in z.namelist()
            if name.startswith("medspot/") and name.endswith(SOURCE_SUFFIXES)
        ]
    return source_digest(files)


def _source_tree() -> Path | None:
    """The repository this medspot runs from (a checkout: `src/medspot` beside pyproject.toml
    naming medspot), or None for an installed medspot."""
    package = Path(str(resources.files("medspot"))).resolve()
    pyproject = package.parent.parent / "pyproject.toml"  # <repo>/src/medspot
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return pyproject.parent if re.search(r'(?m)^name\s*=\s*"medspot"', text) else None


def _pip(*args: str, timeout: float = PIP_TIMEOUT_S, env: dict[str, str] | None = None) -> None:
    if importlib.util.find_spec("pip") is None:
        raise ConfigError(
            f"building an image needs pip in the Python that runs medspot ({sys.executable})"
        )
    argv = [sys.executable, "-m", "pip", *args]
    try:
        out = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, env=env
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(f"`pip {args[0]}` did not end within {timeout:g} s") from None
    if out.returncode != 0:
        tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-8:])
        raise ConfigError(f"the image's wheelhouse could not be made (`pip {args[0]}`):\n{tail}")


def _medspot_wheel(out: Path) -> Path:
    """medspot's wheel in `out`: built from the source tree (a copy of it: the tree gets no
    build folder), or packed from the installed distribution's files."""
    out.mkdir(parents=True, exist_ok=True)
    tree = _source_tree()
    if tree is None:
        return _pack_installed(out)
    with tempfile.TemporaryDirectory(prefix="medspot-wheel-") as tmp:
        copy = Path(tmp) / "medspot"
        skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        shutil.copytree(tree / "src" / "medspot", copy / "src" / "medspot", ignore=skip)
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            if (tree / name).is_file():
                shutil.copy2(tree / name, copy / name)
        isolation = [] if importlib.util.find_spec("setuptools") is None else [
            "--no-build-isolation"
        ]  # fmt: skip
        # the wheel's bytes depend on its files only (zip times from SOURCE_DATE_EPOCH), so
        # that the image layer installing it is reused while the sources stay the same
        env = dict(os.environ, SOURCE_DATE_EPOCH=str(WHEEL_EPOCH))
        _pip("wheel", "-q", "--no-deps", *isolation, "-w", str(out), str(copy), env=env)
    wheels = sorted(out.glob("medspot-*.whl"))
    if not wheels:
        raise ConfigError(f"building medspot's wheel from {tree} made no wheel")
    return wheels[-1]


def _pack_installed(out: Path) -> Path:
    """A wheel of the installed medspot, from the files its RECORD lists (the package and its
    dist-info; no scripts, no caches)."""
    dist = importlib.metadata.distribution("medspot")
    files = [f for f in dist.files or [] if f.parts and f.parts[0].startswith("medspot")]
    wheel = out / f"medspot-{dist.version}-py3-none-any.whl"
    info = f"medspot-{dist.version}.dist-info"
    record: list[str] = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for f in files:
            name = f.as_posix()
            if "__pycache__" in f.parts or name.endswith((".pyc", "/RECORD", "INSTALLER")):
                continue
            data = Path(str(f.locate())).read_bytes()
            z.writestr(name, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            record.append(f"{name},sha256={digest.decode()},{len(data)}")
        record.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return wheel


def _pins() -> list[str]:
    """NAME==VERSION of every distribution this process can import, medspot aside."""
    seen: dict[str, str] = {}
    for d in importlib.metadata.distributions():
        name = d.metadata["Name"]
        if name and name.lower() != "medspot" and name.lower() not in seen:
            seen[name.lower()] = f"{name}=={d.version}"
    return sorted(seen.values())


def _platforms() -> list[str]:
    machine = platform.machine() or "x86_64"
    machine = {"arm64": "aarch64", "amd64": "x86_64"}.get(machine.lower(), machine)
    tags = [f"manylinux_2_{m}_{machine}" for m in range(IMAGE_GLIBC_MINOR, 4, -1)]
    legacy = {"manylinux2014": 17, "manylinux2010": 12, "manylinux1": 5}
    tags += [
        f"{name}_{machine}" for name in legacy if machine == "x86_64" or name == "manylinux2014"
    ]
    return [*tags, "any"]


def _requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    return [line.partition(":")[2].strip() for line in text.splitlines()
            if line.startswith("Requires-Dist:")]  # fmt: skip


def build_wheelhouse(
    work: Path, cache: Path, echo: Callable[[str], None] = lambda _: None
) -> Wheelhouse:
    """medspot's wheel into `work/medspot` (its source hash checked against the medspot this
    process runs) and its dependencies' wheels (from `cache`, made there when missing)."""
    wheel = _medspot_wheel(work / "medspot")
    inside, here = wheel_source_hash(wheel), source_hash()
    if inside != here:
        raise ConfigError(
            f"medspot's wheel ({wheel.name}) does not hold the sources this medspot runs "
            f"(source {inside}, running {here}): a file of the package is left out of the "
            "wheel (pyproject.toml's package-data) or the tree changed during the build"
        )
    platforms = _platforms()
    pins = _pins()
    what = "\n".join(
        [IMAGE_PYTHON, *IMAGE_EXTRAS, *_requires(wheel), *pins, *platforms]
    ).encode()  # fmt: skip
    deps = cache / "wheelhouse" / hashlib.sha256(what).hexdigest()[:16]
    if (deps / _COMPLETE).is_file():
        echo(f"dependencies' wheels: reused ({deps})")
        return Wheelhouse(wheel.parent, deps)
    echo(
        f"dependencies' wheels: downloading for CPython {IMAGE_PYTHON} ({', '.join(IMAGE_EXTRAS)})"
    )
    deps.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=deps.name + ".", dir=deps.parent))
    try:
        constraints = tmp / "constraints.txt"
        constraints.write_text("\n".join(pins) + "\n", encoding="utf-8")
        flags = ["--only-binary=:all:", "--python-version", IMAGE_PYTHON, "--implementation",
                 "cp", "--abi", "cp" + IMAGE_PYTHON.replace(".", ""), "--abi", "abi3",
                 "--abi", "none"]  # fmt: skip
        for tag in platforms:
            flags += ["--platform", tag]
        spec = f"medspot[{','.join(IMAGE_EXTRAS)}] @ {wheel.resolve().as_uri()}"
        _pip("download", "-q", "-d", str(tmp), "-c", str(constraints), *flags, spec)
        constraints.unlink()
        for w in tmp.glob("medspot-*.whl"):
            w.unlink()
        reqs = sorted("{}=={}".format(*w.name.split("-")[:2]) for w in tmp.glob("*.whl"))
        (tmp / "requirements.txt").write_text("\n".join(reqs) + "\n", encoding="utf-8")
        (tmp / _COMPLETE).write_text("", encoding="utf-8")
        if deps.exists():  # another build made it meanwhile
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.replace(tmp, deps)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Wheelhouse(wheel.parent, deps)
