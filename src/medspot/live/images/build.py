"""`medspot live image build` as a function: the image of an environment family, built from
this repository by a container engine.

1. **The base**: `--base IMAGE` (e.g. `debian:bookworm-slim`, where a registry is reachable),
   or `localhost/medspot-base:bookworm`, made once by `debootstrap --variant=minbase` from the
   machine's own Debian mirror (its apt sources copied in) and imported (`make_base`); where
   that cannot be made (not root, no debootstrap) and none is there, Debian's own image from
   the Docker Hub (`REGISTRY_BASE`).
2. **The wheelhouse** (`wheelhouse.build_wheelhouse`): medspot's wheel and its dependencies'.
3. **The build context**: `env.Containerfile`, the pinned-install script, the wheels, and what
   the family needs beyond packages (the pinned OHIF viewer from the medspot cache).
4. **The build** (`<engine> build --network host`: apt inside reaches the mirror), its steps
   echoed as they come, with the labels (`names.ImageLabels`): medspot's version and source
   hash, the family, the pinned packages, the base, and the content hash of every input.

The family's Debian packages are pinned (`family_packages`): to the version installed on this
machine, else to the validated one (`validated-packages.txt`); a version apt inside cannot
provide fails the build naming it (`--unpinned` takes what apt offers, and says so in the
labels). Builds of one machine take turns (a lock in the medspot cache).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from medspot._version import __version__
from medspot.cache import cache_root
from medspot.errors import ConfigError
from medspot.live.core import processes
from medspot.live.envs.registry import env_entry
from medspot.live.images.engine import Engine, ImageInfo
from medspot.live.images.names import BASE_IMAGE, ImageLabels, image_ref, source_hash
from medspot.live.images.wheelhouse import build_wheelhouse

__all__ = [
    "BuildResult",
    "build_image",
    "build_lock",
    "family_packages",
    "make_base",
    "validated_versions",
]

log = logging.getLogger(__name__)

Echo = Callable[[str], None]
CONTAINERFILE = "env.Containerfile"
PIN_SCRIPT = "apt-pinned.sh"
VALIDATED = "validated-packages.txt"
BUILD_TIMEOUT_S = 3600.0
DEBOOTSTRAP_TIMEOUT_S = 1800.0
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# the base where the debootstrap one cannot be made (not root, not Debian): Debian 12 from the
# Docker Hub, named in full (podman asks nothing of short names then)
REGISTRY_BASE = "docker.io/library/debian:bookworm-slim"
DEFAULT_SOURCES = """Types: deb
URIs: {mirror}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
# the build's own lines worth showing as progress (podman's and docker's step lines)
_STEP = re.compile(r"^(STEP \d+/\d+|#\d+ \[|Step \d+/\d+|COMMIT|Successfully|medspot-pin:)")


@dataclass(frozen=True)
class BuildResult:
    env: str
    image: ImageInfo
    seconds: float
    base: str


def _resource(name: str) -> bytes:
    return (resources.files("medspot.live.images") / name).read_bytes()


def validated_versions() -> dict[str, str]:
    """The validated Debian package versions (`validated-packages.txt`)."""
    out: dict[str, str] = {}
    for line in _resource(VALIDATED).decode().splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.startswith("#"):
            out[parts[0]] = parts[1]
    return out


def _installed_version(pkg: str) -> str | None:
    if shutil.which("dpkg-query") is None:
        return None
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}\t${Version}", pkg],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    status, _, version = out.stdout.partition("\t")
    return version.strip() or None if "install ok installed" in status else None


def family_packages(env: str, *, unpinned: bool = False) -> dict[str, str | None]:
    """The family's Debian packages and the version each is pinned to (None: unpinned)."""
    validated = validated_versions()
    out: dict[str, str | None] = {}
    for pkg in env_entry(env).system_packages:
        out[pkg] = None if unpinned else (_installed_version(pkg) or validated.get(pkg))
    return out


# -- the base ---------------------------------------------------------------------------------


def _host_sources() -> list[Path]:
    """The machine's deb822 apt sources that name Debian 12 (bookworm)."""
    found = []
    for p in sorted(Path("/etc/apt/sources.list.d").glob("*.sources")):
        with contextlib.suppress(OSError):
            if re.search(r"(?m)^Suites:.*\bbookworm\b", p.read_text(encoding="utf-8")):
                found.append(p)
    return found


def _mirror(sources: list[Path]) -> str:
    for p in sources:
        text = p.read_text(encoding="utf-8")
        for block in text.split("\n\n"):
            suites = re.search(r"(?m)^Suites:(.*)$", block)
            uris = re.search(r"(?m)^URIs:\s*(\S+)", block)
            if suites and uris and re.search(r"\bbookworm\b(?!-)", suites.group(1)):
                return uris.group(1)
    return DEFAULT_MIRROR


def can_debootstrap() -> bool:
    """Whether this machine can make the base: root, with debootstrap."""
    return shutil.which("debootstrap") is not None and hasattr(os, "geteuid") and os.geteuid() == 0


def make_base(engine: Engine, echo: Echo, ref: str = BASE_IMAGE) -> ImageInfo:
    """`ref` made from Debian's own packages: debootstrap (minbase) of bookworm from this
    machine's mirror, its apt sources copied in, imported into the engine (root only)."""
    if not can_debootstrap():
        raise ConfigError(
            f"no base image {ref}: medspot makes it with debootstrap, which needs root and the "
            "debootstrap package (apt-get install debootstrap); or name a Debian 12 image with "
            "--base (e.g. --base debian:bookworm-slim, where a registry is reachable)"
        )
    sources = _host_sources()
    mirror = _mirror(sources)
    echo(f"base: debootstrap --variant=minbase bookworm from {mirror} (about a minute or two)")
    with tempfile.TemporaryDirectory(prefix="medspot-base-") as tmp:
        root = Path(tmp) / "rootfs"
        try:
            out = processes.run(
                ["debootstrap", "--variant=minbase", "bookworm", str(root), mirror],
                timeout=DEBOOTSTRAP_TIMEOUT_S, capture_output=True, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise ConfigError(
                f"debootstrap did not end within {DEBOOTSTRAP_TIMEOUT_S:g} s"
            ) from None
        if out.returncode != 0:
            tail = out.stdout.decode(errors="replace").strip().splitlines()[-5:]
            raise ConfigError("debootstrap failed:\n" + "\n".join(tail))
        apt = root / "etc" / "apt"
        (apt / "sources.list").unlink(missing_ok=True)
        if sources:
            for p in sources:
                shutil.copy2(p, apt / "sources.list.d" / p.name)
        else:
            (apt / "sources.list.d" / "debian.sources").write_text(
                DEFAULT_SOURCES.format(mirror=mirror), encoding="utf-8"
            )
        for cached in (root / "var" / "cache" / "apt" / "archives").glob("*.deb"):
            cached.unlink()
        echo(f"base: importing into {engine.name} as {ref}")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        try:
            imported = subprocess.run(
                engine.argv("import", "--change", 'CMD ["/bin/bash"]', "-", ref),
                stdin=tar.stdout, capture_output=True, check=False, timeout=BUILD_TIMEOUT_S,
            )  # fmt: skip
        finally:
            if tar.stdout is not None:
                tar.stdout.close()
            tar.wait()
        if imported.returncode != 0:
            err = imported.stderr.decode(errors="replace").strip()
            raise ConfigError(f"importing the base into {engine.name} failed: {err}")
    info = engine.inspect_image(ref)
    if info is None:
        raise ConfigError(f"{engine.name} does not show the base {ref} it imported")
    return info


# -- the family image -------------------------------------------------------------------------


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """Held while an image is built: the builds of one machine (and their users, who wait
    for one to end) take turns."""
    lock = cache_root() / "images" / "build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _link_tree(src: Path, dest: Path) -> None:
    """`src`'s files under `dest`, hard-linked where possible (same file system), else copied."""

    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dest, copy_function=link, dirs_exist_ok=True)


def _family_extras(env: str, cache_dir: Path) -> None:
    """What the family needs in the user's medspot cache inside the image: the pinned OHIF
    viewer for `ohif` (`medspot live setup --env ohif` puts it in this machine's cache)."""
    if env != "ohif":
        return
    from medspot.live.envs.ohif.package import OHIF_VERSION, installed_dist

    dist = installed_dist()
    if dist is None:
        raise ConfigError(
            "the ohif image needs the pinned OHIF viewer in this machine's medspot cache: run "
            "`medspot live setup --env ohif` first"
        )
    version_dir = Path(dist).parent
    _link_tree(version_dir, cache_dir / "ohif" / OHIF_VERSION)


def _inputs_hash(context: Path, base_id: str, packages: str) -> str:
    h = hashlib.sha256(f"{base_id}\n{packages}\n".encode())
    for p in sorted(context.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(context).as_posix().encode() + b"\0")
            with p.open("rb") as f:
                h.update(hashlib.file_digest(f, "sha256").digest())
    return "sha256:" + h.hexdigest()[:32]


def _pin_failures(lines: list[str]) -> list[str]:
    return [line.split("medspot-pin:", 1)[1].strip() for line in lines if "medspot-pin:" in line]


def _run_build(engine: Engine, argv: list[str], context: Path, echo: Echo) -> list[str]:
    """The engine's build, its step lines echoed as they come; all its lines."""
    proc = processes.popen(
        engine.argv(*argv), context, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    lines: list[str] = []
    assert proc.stdout is not None
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    for raw in proc.stdout:
        line = raw.decode(errors="replace").rstrip()
        lines.append(line)
        if _STEP.match(line.strip()):
            echo("  " + line.strip()[:160])
        if time.monotonic() > deadline:
            proc.kill()
            break
    code = proc.wait()
    if code != 0:
        failed = _pin_failures(lines)
        if failed:
            raise ConfigError(
                "the image cannot hold the validated package versions:\n  "
                + "\n  ".join(failed)
                + "\nvalidate the environment with the versions apt offers, then build with "
                "--unpinned (the image's labels say it is unpinned)"
            )
        tail = "\n".join(lines[-25:])
        raise ConfigError(f"`{engine.name} build` failed (exit {code}):\n{tail}")
    return lines


def build_image(
    env: str,
    engine: Engine,
    *,
    base: str | None = None,
    unpinned: bool = False,
    no_cache: bool = False,
    echo: Echo = lambda _: None,
) -> BuildResult:
    """Build the image of family `env` (`names.image_ref`) and return what the engine says of
    it; the image that tag named before (another build) is removed when nothing uses it.
    `no_cache`: every layer built again (the base is kept), e.g. to take Debian's updates of
    an unpinned build, or to time a build."""
    env_entry(env)
    t0 = time.monotonic()
    packages = family_packages(env, unpinned=unpinned)
    specs = [p if v is None else f"{p}={v}" for p, v in packages.items()]
    ref = image_ref(env)
    with build_lock():
        base_ref = base or BASE_IMAGE
        base_info = engine.inspect_image(base_ref)
        if base_info is None and base is None and can_debootstrap():
            base_info = make_base(engine, echo, base_ref)
        elif base_info is None and base is None:  # not root, or not Debian: a registry's
            base_ref = REGISTRY_BASE
            base_info = engine.inspect_image(base_ref)
            echo(f"base: {base_ref} (no {BASE_IMAGE} and no debootstrap as root here)")
        elif base_info is None:
            echo(f"base: {base_ref} (the engine fetches it)")
        else:
            echo(f"base: {base_ref} ({base_info.id[:19]})")
        before = engine.inspect_image(ref)
        cache = cache_root() / "images"
        with tempfile.TemporaryDirectory(prefix="medspot-image-") as tmp:
            context = Path(tmp) / "context"
            context.mkdir()
            (context / CONTAINERFILE).write_bytes(_resource(CONTAINERFILE))
            (context / PIN_SCRIPT).write_bytes(_resource(PIN_SCRIPT))
            wheels = build_wheelhouse(Path(tmp) / "wheels", cache, echo)
            _link_tree(wheels.deps, context / "wheels" / "deps")
            (context / "wheels" / "deps" / ".complete").unlink(missing_ok=True)
            _link_tree(wheels.medspot, context / "wheels" / "medspot")
            (context / "cache").mkdir()
            _family_extras(env, context / "cache")
            pinned = " ".join(specs)
            labels = ImageLabels(
                env=env, version=__version__, source=source_hash(),
                inputs=_inputs_hash(context, base_info.id if base_info else base_ref, pinned),
                packages={p: v or "" for p, v in packages.items()}, base=base_ref,
                pinned=not unpinned,
            )  # fmt: skip
            wheel = next((context / "wheels" / "medspot").glob("*.whl"))
            args = {
                "BASE": base_ref, "PACKAGES": pinned, "DEPS_HASH": wheels.deps.name,
                "MEDSPOT_WHEEL_HASH": hashlib.sha256(wheel.read_bytes()).hexdigest(),
            }  # fmt: skip
            argv = ["build", "--network", "host", "-f", CONTAINERFILE, "-t", ref]
            argv += ["--no-cache"] if no_cache else []
            for key, value in args.items():
                argv += ["--build-arg", f"{key}={value}"]
            for key, value in labels.to_labels().items():
                argv += ["--label", f"{key}={value}"]
            echo(f"{engine.name} build {ref} ({env}: {len(specs)} Debian packages, pinned: "
                 f"{'no' if unpinned else 'yes'})")  # fmt: skip
            _run_build(engine, [*argv, str(context)], context, echo)
        info = engine.inspect_image(ref)
        if info is None:
            raise ConfigError(f"{engine.name} does not show the image {ref} it built")
        if before is not None and before.id != info.id and not engine.image_names(before.id):
            engine.remove_image(before.id)  # the previous build of this tag, if unused
    return BuildResult(env, info, time.monotonic() - t0, base_ref)
