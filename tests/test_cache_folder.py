"""One cache-folder rule: the demo's suites, the live seeds and the OHIF viewer share it."""

from __future__ import annotations

from pathlib import Path

import pytest

from medspot.cache import cache_root
from medspot.commands.demo import default_cache
from medspot.live.envs.ohif.package import installed_dist
from medspot.live.services import seed


def test_medspot_cache_is_the_folder_itself(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEDSPOT_CACHE", str(tmp_path / "x"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "x"
    assert default_cache() == tmp_path / "x"
    assert seed._default_cache() == tmp_path / "x" / "live"
    assert installed_dist() is None  # looked for under <cache>/ohif, which is empty


def test_xdg_and_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MEDSPOT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "medspot"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "medspot"
