"""The OCR words cache (`medspot.adapters.ocr_cache`): the same image bytes are read by the
engine once, whatever their path; the words come back exactly; an unreadable entry is read
again and rewritten; a cache that cannot be written loses nothing; the key follows the engine.
And the real engine through `create`: the words from the cache equal the engine's."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import shutil
from pathlib import Path

import pytest

from medspot.adapters.ocr_cache import Word, cached_reader, engine_key, words_cache_dir

WORDS: list[Word] = [
    ("File", (10.0, 4.25, 38.5, 20.0), 0.9987654321),
    ("Patients 1/3", (101.125, 40.0, 190.0, 58.75), 0.5),
]


class _Engine:
    def __init__(self) -> None:
        self.calls: list[Path] = []

    def __call__(self, path: Path) -> list[Word]:
        self.calls.append(path)
        return list(WORDS)


def _image(path: Path, content: bytes = b"\x89PNG fake screen") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def test_same_bytes_are_read_once_and_come_back_exactly(tmp_path: Path) -> None:
    engine = _Engine()
    read = cached_reader(engine, tmp_path / "cache")
    a = _image(tmp_path / "a.png")
    b = _image(tmp_path / "elsewhere" / "b.png")  # the same bytes under another name
    assert read(a) == WORDS
    assert read(b) == WORDS
    assert cached_reader(_Engine(), tmp_path / "cache")(a) == WORDS  # another process, later
    assert engine.calls == [a]
    other = _image(tmp_path / "c.png", b"\x89PNG another screen")
    assert read(other) == WORDS and engine.calls == [a, other]
    assert len(list((tmp_path / "cache").rglob("*.json"))) == 2


def test_an_unreadable_entry_is_read_again_and_rewritten(tmp_path: Path) -> None:
    engine = _Engine()
    read = cached_reader(engine, tmp_path / "cache")
    img = _image(tmp_path / "a.png")
    read(img)
    (entry,) = (tmp_path / "cache").rglob("*.json")
    for broken in ('[["File", [1, 2]', '{"not": "a list"}', '[["File", [1, 2], 0.5]]'):
        entry.write_text(broken)
        assert read(img) == WORDS
    assert len(engine.calls) == 4
    assert read(img) == WORDS and len(engine.calls) == 4  # rewritten whole


def test_a_cache_that_cannot_be_written_loses_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    engine = _Engine()
    read = cached_reader(engine, blocked / "cache")
    with caplog.at_level(logging.WARNING, logger="medspot.adapters.ocr_cache"):
        assert read(_image(tmp_path / "a.png")) == WORDS
        assert read(_image(tmp_path / "b.png", b"other")) == WORDS
    assert len(engine.calls) == 2
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "cannot be written" in warnings[0].getMessage()


def test_the_key_follows_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = engine_key({"rapidocr": "3.4.0", "onnxruntime": "1.20.0"}, {"Global.use_cls": False})
    assert base.startswith("rapidocr-3.4.0-")
    assert base == engine_key({"onnxruntime": "1.20.0", "rapidocr": "3.4.0"},
                              {"Global.use_cls": False})  # fmt: skip
    others = {
        engine_key({"rapidocr": "3.5.0", "onnxruntime": "1.20.0"}, {"Global.use_cls": False}),
        engine_key({"rapidocr": "3.4.0", "onnxruntime": "1.21.0"}, {"Global.use_cls": False}),
        engine_key({"rapidocr": "3.4.0", "onnxruntime": "1.20.0"}, {"Global.use_cls": True}),
    }
    assert base not in others and len(others) == 3
    monkeypatch.setenv("MEDSPOT_CACHE", str(tmp_path / "mc"))
    assert words_cache_dir(base) == tmp_path / "mc" / "ocr" / base


@pytest.mark.ocr
@pytest.mark.skipif(importlib.util.find_spec("rapidocr") is None, reason="needs rapidocr")
def test_the_real_engine_through_create_reads_what_the_cache_gives_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medspot.adapters.base import AdapterContext, StepRequest
    from medspot.adapters.ocr import default_words_cache, rapidocr_reader
    from medspot.adapters.registry import create
    from medspot.synth import generate

    generate(tmp_path / "suite", tasks=1, seed=3, apps=1)
    screen = next((tmp_path / "suite").rglob("*.png"))
    monkeypatch.setenv("MEDSPOT_CACHE", str(tmp_path / "mc"))
    cache = default_words_cache()
    assert cache.is_relative_to(tmp_path / "mc" / "ocr")

    adapter = create("ocr", AdapterContext())
    req = StepRequest(step_uid="s", task_uid="t", image_rel=screen.name, image_path=screen,
                      image_size=(10, 10), instruction="Click the 'File' menu")  # fmt: skip
    asyncio.run(adapter.predict(req))
    (entry,) = cache.rglob("*.json")
    engine = rapidocr_reader()(screen)  # the engine itself, no cache
    assert engine, "the engine read no words on a generated screen"
    assert rapidocr_reader(cache)(screen) == engine  # served from the entry: the same words
    os.utime(entry, (0, 0))
    shutil.copy(screen, tmp_path / "copy.png")
    assert rapidocr_reader(cache)(tmp_path / "copy.png") == engine
    assert entry.stat().st_mtime == 0  # read, not rewritten
