"""The prebuilt OHIF Viewer (`@ohif/app` on npm) at a pinned version, in a local cache.

`ensure_ohif()` fetches the package tarball with `npm pack` (the npm registry's ordinary
client), checks its sha512 against the pinned integrity string (the registry's
`dist.integrity`), and unpacks only `package/dist` (the static viewer) into
`<cache>/ohif/<version>/dist`. The cache is `medspot.cache.cache_root()`. A finished
install carries a marker file naming the integrity it was checked against; a half-finished one
(killed during unpacking) is never used. `medspot live setup --env ohif` and CI call it.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from medspot.cache import cache_root
from medspot.errors import MedspotError

__all__ = [
    "OHIF_INTEGRITY",
    "OHIF_PACKAGE",
    "OHIF_VERSION",
    "OhifPackageError",
    "ensure_ohif",
    "installed_dist",
    "unpack_dist",
    "verify_integrity",
]

log = logging.getLogger(__name__)

OHIF_PACKAGE = "@ohif/app"
OHIF_VERSION = "3.13.2"
# `npm view @ohif/app@3.13.2 dist.integrity`
OHIF_INTEGRITY = (
    "sha512-WZdxmpmG7rqFgW9ZJLcbgr3XCtLi1KDNPoMaeY5P"
    "Pe6j4G4fjEjjkycZM6C6Zk2F87BKxFfpq+jd5xXZB9E8EA=="
)
_MARKER = ".medspot-installed"
_PREFIX = "package/dist/"


class OhifPackageError(MedspotError):
    """The OHIF package could not be fetched, failed its integrity check, or is not installed."""

    exit_code = 2


def _version_dir(cache: Path | None, version: str) -> Path:
    return (cache if cache is not None else cache_root()) / "ohif" / version


def installed_dist(
    cache: Path | None = None, version: str = OHIF_VERSION, integrity: str = OHIF_INTEGRITY
) -> Path | None:
    """The unpacked `dist/` folder if a complete, checked install is in the cache, else None."""
    vdir = _version_dir(cache, version)
    marker = vdir / _MARKER
    dist = vdir / "dist"
    try:
        ok = marker.read_text(encoding="utf-8").strip() == integrity
    except OSError:
        return None
    return dist if ok and (dist / "index.html").is_file() else None


def verify_integrity(tarball: Path, integrity: str) -> None:
    """Raise OhifPackageError unless the file's digest matches an npm integrity string
    (`sha512-<base64>`)."""
    algo, _, expected = integrity.partition("-")
    if algo not in ("sha512", "sha384", "sha256") or not expected:
        raise OhifPackageError(f"unsupported integrity string {integrity!r}")
    h = hashlib.new(algo)
    try:
        with tarball.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError as exc:
        raise OhifPackageError(f"{tarball}: cannot read: {exc.strerror}") from None
    got = base64.b64encode(h.digest()).decode("ascii")
    if got != expected:
        raise OhifPackageError(
            f"{tarball}: integrity check failed ({algo} is {got[:16]}..., "
            f"expected {expected[:16]}...): the download is corrupt or not the pinned package"
        )


def unpack_dist(tarball: Path, dest: Path) -> None:
    """Extract `package/dist/**` of an npm tarball into `dest` (which must not exist)."""
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest.parent))
    try:
        with tarfile.open(tarball, "r:gz") as tar:
            members = []
            for m in tar.getmembers():
                if not m.name.startswith(_PREFIX) or not (m.isfile() or m.isdir()):
                    continue
                m.name = m.name[len(_PREFIX) :]
                if m.name:
                    members.append(m)
            if not any(m.name == "index.html" for m in members):
                raise OhifPackageError(f"{tarball}: no package/dist/index.html in the tarball")
            tar.extractall(tmp, members=members, filter="data")
        tmp.rename(dest)
    except (OSError, tarfile.TarError) as exc:
        raise OhifPackageError(f"{tarball}: cannot unpack: {exc}") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _npm_pack(spec: str, into: Path, npm: str) -> Path:
    exe = shutil.which(npm)
    if exe is None:
        raise OhifPackageError(
            f"`{npm}` not found: install Debian's npm (apt-get install npm) to fetch {spec}"
        )
    proc = subprocess.run(
        [exe, "pack", spec, "--silent", "--pack-destination", str(into)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    tgz = sorted(into.glob("*.tgz"))
    if proc.returncode != 0 or len(tgz) != 1:
        tail = (proc.stderr or proc.stdout).strip()[-400:]
        raise OhifPackageError(f"npm pack {spec} failed (exit {proc.returncode}): {tail}")
    return tgz[0]


def ensure_ohif(
    cache: Path | None = None,
    *,
    version: str = OHIF_VERSION,
    integrity: str = OHIF_INTEGRITY,
    tarball: Path | None = None,
    npm: str = "npm",
) -> Path:
    """Return the cached viewer's `dist/`, fetching (or taking `tarball`), checking and
    unpacking it first when needed. Raises OhifPackageError on any failure; the cache is then
    left without an install (never a half one)."""
    found = installed_dist(cache, version, integrity)
    if found is not None:
        return found
    vdir = _version_dir(cache, version)
    vdir.mkdir(parents=True, exist_ok=True)
    (vdir / _MARKER).unlink(missing_ok=True)
    if (vdir / "dist").exists():
        shutil.rmtree(vdir / "dist")
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=vdir) as td:
        if tarball is None:
            log.info("fetching %s@%s with npm pack", OHIF_PACKAGE, version)
            tarball = _npm_pack(f"{OHIF_PACKAGE}@{version}", Path(td), npm)
        verify_integrity(tarball, integrity)
        unpack_dist(tarball, vdir / "dist")
    (vdir / _MARKER).write_text(integrity + "\n", encoding="utf-8")
    log.info("OHIF %s installed in %s", version, vdir / "dist")
    return vdir / "dist"
