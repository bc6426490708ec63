"""The hf path: the image the model saw is the one the harness resized.

The tiny Qwen2.5-VL checkpoint's image processor allows at most 16*28*28 pixels; the real
qwen2.5-vl-7b card pre-resizes within 16384*28*28. Before the fix the harness sent 308x196
for a 300x200 screen, the processor re-resized it to 112x84 and the answers (pixels of
112x84) were divided by 308x196: every click scaled toward the top-left by 0.36."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from medspot.adapters.backends.hf.imagecheck import (
    check_grid,
    grid_size,
    processor_pixel_bounds,
    resize_within,
)
from medspot.adapters.card import ResizeSpec
from medspot.errors import ConfigError

CARD = ResizeSpec(factor=28, min_pixels=4 * 28 * 28, max_pixels=16384 * 28 * 28)


def test_bounds_and_resize_within() -> None:
    assert processor_pixel_bounds({"size": {"shortest_edge": 3136, "longest_edge": 12544}}) == (
        3136,
        12544,
    )
    assert processor_pixel_bounds({"min_pixels": 10, "max_pixels": 20}) == (10, 20)
    assert processor_pixel_bounds({"size": {"height": 224, "width": 224}}) is None
    assert resize_within(CARD, None) is CARD
    assert resize_within(None, (1, 2)) is None
    assert resize_within(CARD, (4 * 28 * 28, 16384 * 28 * 28)) is CARD
    small = resize_within(CARD, (3136, 1280 * 28 * 28))
    assert small == ResizeSpec(28, 4 * 28 * 28, 1280 * 28 * 28)
    assert grid_size([1, 6, 8], 14) == (112, 84)


def test_check_grid_names_the_re_resize() -> None:
    check_grid([(112, 84), None], [[1, 6, 8], [1, 2, 2]], 14, checkpoint="ck", bounds=None)
    with pytest.raises(ConfigError, match=r"sent 308x196 .* saw 112x84 .*max_pixels=12544"):
        check_grid([(308, 196)], [[1, 6, 8]], 14, checkpoint="ck", bounds=(3136, 12544))


torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from test_hf_backend import Capture, build_qwen, make, run_adapter, step  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("tiny-imagecheck")
    return {f: build_qwen(root / f, f) for f in ("qwen2_5_vl", "qwen3_vl")}


def _card(name: str) -> Any:
    from medspot.adapters.cards import get_card

    return get_card(name)


@pytest.mark.hf
def test_abs_resized_card_stays_within_the_checkpoints_bounds(
    tiny: dict[str, Path], tmp_path: Path
) -> None:
    adapter = make(_card("qwen2.5-vl-7b"), tiny["qwen2_5_vl"])
    assert adapter.describe()["processor_pixels"] == [4 * 28 * 28, 16 * 28 * 28]
    cap = Capture(adapter.runner.processor)
    adapter.runner.processor = cap
    (pred,) = run_adapter(adapter, [step(tmp_path, size=(300, 200))])
    assert cap.sizes == [(112, 84)]
    assert pred.sent_size == (112, 84)  # the size the answer is divided by


@pytest.mark.hf
def test_a_re_resize_the_bounds_did_not_foresee_is_an_error(
    tiny: dict[str, Path], tmp_path: Path
) -> None:
    adapter = make(_card("qwen2.5-vl-7b"), tiny["qwen2_5_vl"])
    adapter.runner.pixel_bounds = None  # a processor whose bounds cannot be read
    with pytest.raises(ConfigError, match=r"sent 308x196 .* saw 140x84"):
        run_adapter(adapter, [step(tmp_path, size=(300, 200))])


@pytest.mark.hf
def test_frames_that_do_not_depend_on_the_sent_size_are_not_checked(
    tiny: dict[str, Path], tmp_path: Path
) -> None:
    """Qwen3-VL's upstream script ran a factor-28 resize before a factor-32 processor; its
    answers are /1000, so the re-resize is part of what it did and is not an error."""
    adapter = make(_card("qwen3-vl-8b"), tiny["qwen3_vl"], prompt_style="upstream")
    (pred,) = run_adapter(adapter, [step(tmp_path, size=(300, 200))])
    assert pred.sent_size is not None and isinstance(pred.raw_text, str)
