"""The pinned OHIF package: the integrity check rejects a corrupted or foreign tarball and
leaves no install behind; a good tarball unpacks `package/dist` only; the real cached install
matches the pin."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
from pathlib import Path

import pytest
from _orthanc_support import require_live

from medspot.live.envs.ohif.package import (
    OHIF_INTEGRITY,
    OhifPackageError,
    ensure_ohif,
    installed_dist,
    verify_integrity,
)

pytestmark = pytest.mark.live


def _npm_tarball(path: Path, files: dict[str, bytes]) -> str:
    """An npm-style .tgz (members under package/) and its sha512 integrity string."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return "sha512-" + base64.b64encode(hashlib.sha512(buf.getvalue()).digest()).decode()


FILES = {
    "package/package.json": b'{"name": "@ohif/app"}',
    "package/dist/index.html": b"<!doctype html><title>OHIF</title>",
    "package/dist/app.bundle.js": b"console.log(1)",
    "package/dist/assets/logo.svg": b"<svg/>",
    "package/src/secret.ts": b"not shipped",
}


def test_good_tarball_installs_dist_only(tmp_path: Path) -> None:
    tgz = tmp_path / "app.tgz"
    integrity = _npm_tarball(tgz, FILES)
    cache = tmp_path / "cache"
    dist = ensure_ohif(cache, version="9.9.9", integrity=integrity, tarball=tgz)
    assert dist == cache / "ohif" / "9.9.9" / "dist"
    assert (dist / "index.html").read_bytes().startswith(b"<!doctype html>")
    assert (dist / "assets" / "logo.svg").is_file()
    assert not (dist / "package.json").exists() and not list(dist.rglob("secret.ts"))
    assert installed_dist(cache, "9.9.9", integrity) == dist
    # a second call uses the install (the tarball is not needed any more)
    assert ensure_ohif(cache, version="9.9.9", integrity=integrity, tarball=None) == dist
    # a different pin does not accept this install
    assert installed_dist(cache, "9.9.9", OHIF_INTEGRITY) is None


def test_corrupted_tarball_is_rejected(tmp_path: Path) -> None:
    tgz = tmp_path / "app.tgz"
    integrity = _npm_tarball(tgz, FILES)
    data = bytearray(tgz.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte
    tgz.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(OhifPackageError, match="integrity check failed"):
        ensure_ohif(cache, version="9.9.9", integrity=integrity, tarball=tgz)
    assert installed_dist(cache, "9.9.9", integrity) is None
    assert not (cache / "ohif" / "9.9.9" / "dist").exists()


def test_foreign_tarball_and_bad_pin_are_rejected(tmp_path: Path) -> None:
    tgz = tmp_path / "other.tgz"
    _npm_tarball(tgz, {"package/dist/index.html": b"other"})
    with pytest.raises(OhifPackageError, match="integrity check failed"):
        verify_integrity(tgz, OHIF_INTEGRITY)  # the real pin: a different package
    with pytest.raises(OhifPackageError, match="unsupported integrity"):
        verify_integrity(tgz, "md5-abc")
    no_dist = tmp_path / "nodist.tgz"
    integrity = _npm_tarball(no_dist, {"package/README.md": b"x"})
    with pytest.raises(OhifPackageError, match=r"no package/dist/index\.html"):
        ensure_ohif(tmp_path / "c2", version="1", integrity=integrity, tarball=no_dist)
    assert not (tmp_path / "c2" / "ohif" / "1" / "dist").exists()


def test_the_pinned_viewer_is_installed() -> None:
    """CI runs `medspot live setup --env ohif` first: the cache holds the pinned, checked
    viewer (skipped elsewhere unless MEDSPOT_REQUIRE_LIVE=1)."""
    dist = installed_dist()
    require_live(dist is not None, "the OHIF viewer (medspot live setup --env ohif)")
    assert dist is not None
    html = (dist / "index.html").read_text(encoding="utf-8")
    assert "app-config.js" in html and "app.bundle." in html
