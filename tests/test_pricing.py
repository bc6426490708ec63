"""Price table, overrides from JSON/TOML files, call costs and the pre-run estimate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from medspot.adapters.backends.pricing import (
    CostMeter,
    PriceTable,
    estimate_cost,
    image_tokens_high,
    load_price_table,
)
from medspot.adapters.base import Usage
from medspot.errors import ConfigError


def test_image_tokens_high_detail_rule() -> None:
    # 1920x1080: already within 2048; shortest side 1080 -> 768 gives 1365.3x768: 3x2 tiles.
    assert image_tokens_high((1920, 1080)) == 85 + 170 * 6
    # 512x512 is never scaled up: one tile.
    assert image_tokens_high((512, 512)) == 85 + 170
    # 4096x1024 -> fit into 2048: 2048x512; shortest side 512 stays: 4x1 tiles.
    assert image_tokens_high((4096, 1024)) == 85 + 170 * 4
    assert image_tokens_high((1920, 1080), base=2833, per_tile=5667) == 2833 + 5667 * 6


def test_call_cost_and_snapshots() -> None:
    t = PriceTable()
    # gpt-4o-mini: 0.15 $/1M input, 0.60 $/1M output
    assert t.cost("gpt-4o-mini", Usage(2000, 100)) == pytest.approx(2000 * 0.15e-6 + 100 * 0.6e-6)
    assert t.get("gpt-5-2025-08-07") == t.get("gpt-5")
    assert t.get("openai:gpt-5") == t.get("gpt-5")
    assert t.get("gpt-5-mini") != t.get("gpt-5")
    assert t.get("Qwen/Qwen2.5-VL-7B-Instruct") is None
    assert t.cost("Qwen/Qwen2.5-VL-7B-Instruct", Usage(10, 10)) is None
    assert t.cost("gpt-4o", None) is None


def test_estimate_cost_by_hand() -> None:
    # gpt-4o: 2.50 / 10.00 $ per 1M. One 512x512 image = 255 tokens, + 45 text = 300 in.
    got = estimate_cost("gpt-4o", [(512, 512)], text_tokens=45, output_tokens=20)
    assert got == pytest.approx(300 * 2.5e-6 + 20 * 10e-6)
    two = estimate_cost("gpt-4o", [(512, 512)] * 2, text_tokens=45, output_tokens=20)
    assert two == pytest.approx(2 * got)  # type: ignore[operator]
    assert estimate_cost("local-model", [(512, 512)]) is None
    # reasoning models assume more output tokens than chat models
    cheap = estimate_cost("gpt-5", [(512, 512)], output_tokens=20)
    default = estimate_cost("gpt-5", [(512, 512)])
    assert cheap is not None and default is not None and default > cheap


def test_price_file_json_and_toml(tmp_path: Path) -> None:
    j = tmp_path / "prices.json"
    j.write_text(
        json.dumps(
            {
                "models": {
                    "my-model": {"input": 1.0, "output": 2.0},
                    "gpt-4o": {"input": 5, "output": 20},
                }
            }
        )
    )
    t = load_price_table(j)
    assert t.cost("my-model", Usage(1_000_000, 500_000)) == pytest.approx(1.0 + 1.0)
    assert t.cost("gpt-4o", Usage(1_000_000, 0)) == pytest.approx(5.0)
    assert t.get("gpt-4o-mini") is not None  # defaults kept
    toml = tmp_path / "prices.toml"
    toml.write_text('[models."served-qwen"]\ninput = 0.1\noutput = 0.2\n')
    assert load_price_table(toml).cost("served-qwen", Usage(10_000_000, 0)) == pytest.approx(1.0)
    assert estimate_cost("served-qwen", [(512, 512)], price_file=toml) is not None


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("bad.json", "{not json"),
        ("neg.json", '{"models": {"m": {"input": -1, "output": 1}}}'),
        ("extra.json", '{"models": {"m": {"input": 1, "output": 1, "typo": 2}}}'),
        ("bad.toml", "[models\n"),
    ],
)
def test_bad_price_files(tmp_path: Path, name: str, text: str) -> None:
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ConfigError):
        load_price_table(p)
    with pytest.raises(ConfigError):
        load_price_table(tmp_path / "missing.json")


def test_cost_meter() -> None:
    m = CostMeter()
    m.add(Usage(10, 2), 0.5)
    m.add(None, None)
    m.add(Usage(5, 1), 0.25)
    assert (m.calls, m.input_tokens, m.output_tokens) == (3, 15, 3)
    assert m.total_usd == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            '{"models": {"gpt-x": {"input": "cheap", "output": 1}}}',
            "models.gpt-x.input: Input should be a valid number, unable to parse string as a "
            "number (got 'cheap')",
        ),
        (
            '{"models": {"gpt-x": {"input": 1, "output": -2}}}',
            "models.gpt-x.output: Input should be greater than or equal to 0 (got -2)",
        ),
        (
            '{"models": {"gpt-x": {"input": Infinity, "output": 1}}}',
            "models.gpt-x.input: Input should be a finite number",
        ),
        ('{"model": {}}', "models: Field required; model: Extra inputs are not permitted"),
    ],
)
def test_a_bad_price_file_names_each_field_not_a_raw_dump(
    tmp_path: Path, text: str, says: str
) -> None:
    p = tmp_path / "prices.json"
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_price_table(p)
    message = str(e.value)
    assert message.startswith(f"price file {p}: ") and says in message
    assert "validation error" not in message and "errors.pydantic.dev" not in message
    assert '{"models": {"NAME": {"input": USD, "output": USD}}}' in message
    assert "\n" not in message
