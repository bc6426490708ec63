"""Hub datasets, offline: a hub cache laid out by hand as huggingface_hub lays it out
(`datasets--owner--name/{blobs,refs/main,snapshots/<commit>}`, snapshot files linked to blobs),
resolved by the real `snapshot_download` with HF_HUB_OFFLINE=1. Nothing is downloaded."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from medspot.cli import main
from medspot.dataset import hub
from medspot.dataset.loading import load_dataset
from medspot.errors import ConfigError, DataError

COMMIT = "3f2c1e0d9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e"
REPO = "Tajamul21/MedSPOT"


def add_file(cache: Path, repo_id: str, rel: str, data: bytes, commit: str = COMMIT) -> Path:
    """Store `data` as a blob and link `snapshots/<commit>/<rel>` to it, relatively, as
    huggingface_hub does; `refs/main` names the commit."""
    repo = cache / ("datasets--" + repo_id.replace("/", "--"))
    blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    link = repo / "snapshots" / commit / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(os.path.relpath(blob, link.parent))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    return link


def png(size: tuple[int, int] = (40, 30)) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, (200, 200, 200)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty hub cache, made the one huggingface_hub uses, offline. huggingface_hub reads
    these variables when imported, so its constants are set too."""
    import huggingface_hub.constants as constants

    c = tmp_path / "hf-home" / "hub"
    c.mkdir(parents=True)
    monkeypatch.setenv("HF_HOME", str(c.parent))
    monkeypatch.setenv("HF_HUB_CACHE", str(c))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(c))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return c


@pytest.fixture
def real_cache(cache: Path, annotations_dir: Path) -> Path:
    for f in sorted(annotations_dir.glob("*_Annotation.json")):
        add_file(cache, REPO, f"MedPSOT_bench/Annotations/{f.name}", f.read_bytes())
    add_file(cache, REPO, "README.md", b"# MedSPOT\n")
    return cache


def test_hf_url_resolves_the_cached_snapshot(
    real_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    calls: list[dict[str, Any]] = []
    real = huggingface_hub.snapshot_download

    def spy(**kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", spy)
    ds = load_dataset(f"hf://{REPO}", check_images=False)
    assert calls[0]["repo_id"] == REPO
    assert calls[0]["repo_type"] == "dataset"
    snap = real_cache / "datasets--Tajamul21--MedSPOT" / "snapshots" / COMMIT
    assert ds.root == snap / "MedPSOT_bench"
    assert ds.source == f"hf://{REPO}"
    assert len(ds.apps) == 10
    assert len(list(ds.tasks())) == 216
    assert len(list(ds.steps())) == 607


def test_bare_repo_id_when_no_such_local_folder(
    real_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./Tajamul21/MedSPOT here
    ds = load_dataset(REPO, apps=["Weasis"], limit=3, check_images=False)
    assert [t.uid for t in ds.tasks()] == ["Weasis/0", "Weasis/1", "Weasis/2"]
    # a local folder of that name wins over the hub
    local = tmp_path / "Tajamul21" / "MedSPOT"
    (local / "Annotations").mkdir(parents=True)
    (local / "Annotations" / "Solo_Annotation.json").write_text(
        '{"tasks": [{"task_overview": "o", "steps": [{"step_id": 1, "image_path": "Images/a.png",'
        ' "instruction": "i", "actions": []}]}]}'
    )
    assert load_dataset(REPO, check_images=False).app_names == ("Solo",)


def test_images_linked_to_blobs_are_inside_the_dataset(cache: Path) -> None:
    doc = (
        b'{"tasks": [{"task_overview": "o", "steps": [{"step_id": 1, "image_path": '
        b'"Images/Demo/a (1).png", "instruction": "i", "actions": [{"type": "click", '
        b'"target": "t", "bbox": [1, 1, 5, 5]}]}]}]}'
    )
    add_file(cache, "someone/tiny", "Annotations/Demo_Annotation.json", doc)
    add_file(cache, "someone/tiny", "Images/Demo/a (1).png", png((40, 30)))
    ds = load_dataset("hf://someone/tiny")  # checks the image through its blob link
    assert ds.step("Demo/0/1").image_path == "Images/Demo/a (1).png"

    # a link that leaves the repository's cache folder is still refused
    outside = cache.parent / "elsewhere.png"
    outside.write_bytes(png())
    link = ds.root / "Images/Demo/a (1).png"
    link.unlink()
    link.symlink_to(outside)
    with pytest.raises(DataError) as info:
        load_dataset("hf://someone/tiny")
    assert "leaves the dataset root" in info.value.message
    assert info.value.location is not None and info.value.location.field == "image_path"


def test_not_in_the_cache_offline(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "hf://nobody/nothing", "--no-images"]) == 2
    out, err = capsys.readouterr()
    assert "cannot get the hub dataset 'nobody/nothing'" in out
    assert "Traceback" not in out + err
    assert main(["stats", "hf://nobody/nothing"]) == 2
    assert capsys.readouterr().err.startswith("medspot: error: cannot get the hub dataset")


def test_missing_huggingface_hub_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ConfigError, match=r"medspot\[hub\]"):
        hub.snapshot(REPO)


def test_repo_id_parsing() -> None:
    assert hub.parse_repo_id("hf://Tajamul21/MedSPOT") == "Tajamul21/MedSPOT"
    assert hub.parse_repo_id("hf://datasets/Tajamul21/MedSPOT") == "Tajamul21/MedSPOT"
    assert hub.parse_repo_id("Tajamul21/MedSPOT@v1") == "Tajamul21/MedSPOT@v1"
    assert hub.is_hub_id("owner/name")
    assert not hub.is_hub_id("some/deeper/path")
    assert not hub.is_hub_id("./data")
    with pytest.raises(ConfigError):
        hub.parse_repo_id("hf://just-a-name")


def test_subprocess_with_only_the_environment(real_cache: Path) -> None:
    env = {
        **os.environ,
        "HF_HOME": str(real_cache.parent),
        "HF_HUB_CACHE": str(real_cache),
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "medspot", "validate", f"hf://{REPO}", "--no-images"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "216 tasks, 607 steps" in proc.stdout
    assert "MedPSOT_bench" in proc.stdout
