"""What API calls cost: a price table (built in, overridable by a JSON or TOML file), the cost
of one call from its token counts, and an estimate before a run.

Estimates count image tokens with OpenAI's published "high detail" tile rule (fit into
2048x2048, shortest side scaled to 768, 512-px tiles, base + per-tile tokens); it is an
approximation, newer models count differently.
"""

from __future__ import annotations

import json
import math
import re
import threading
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from medspot.adapters.base import Usage
from medspot.errors import ConfigError

__all__ = [
    "DEFAULT_PRICES",
    "TYPICAL_OUTPUT_TOKENS",
    "TYPICAL_TEXT_TOKENS",
    "CostMeter",
    "Price",
    "PriceTable",
    "estimate_cost",
    "image_tokens_high",
    "load_price_table",
]


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per one million tokens, and the image token rule of the model."""

    input_per_m: float
    output_per_m: float
    image_base_tokens: int = 85
    image_tile_tokens: int = 170

    def cost(self, usage: Usage) -> float:
        return (
            usage.input_tokens * self.input_per_m + usage.output_tokens * self.output_per_m
        ) / 1e6


# List prices in USD per 1M tokens (standard tier, no batch or cache discounts) as of writing
# (2025; the computer-use models 2026); they may be out of date. Override them with --price-file.
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60, image_base_tokens=2833, image_tile_tokens=5667),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5": Price(1.25, 10.00, image_base_tokens=70, image_tile_tokens=140),
    "gpt-5-mini": Price(0.25, 2.00, image_base_tokens=70, image_tile_tokens=140),
    "gpt-5-nano": Price(0.05, 0.40, image_base_tokens=70, image_tile_tokens=140),
    "o4-mini": Price(1.10, 4.40),
    # computer-use models (`medspot live run --model openai-computer-use / anthropic-computer-use`)
    "computer-use-preview": Price(3.00, 12.00),
    "gpt-5.4": Price(2.50, 15.00, image_base_tokens=70, image_tile_tokens=140),
    "claude-opus-4-6": Price(5.00, 25.00),
    "claude-opus-4-5": Price(5.00, 25.00),
    "claude-sonnet-4-6": Price(3.00, 15.00),
    "claude-sonnet-4-5": Price(3.00, 15.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-haiku-4-5": Price(1.00, 5.00),
}

TYPICAL_TEXT_TOKENS = 120  # instruction plus the request for a point
TYPICAL_OUTPUT_TOKENS = 20  # "(x, y)"; reasoning models use more (see estimate_cost)
_REASONING_OUTPUT_TOKENS = 1500
_DATED = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")  # gpt-5-2025-08-07, claude-...-20250929


class _PriceEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")
    input: float = Field(ge=0, allow_inf_nan=False)  # USD per 1M input tokens
    output: float = Field(ge=0, allow_inf_nan=False)  # USD per 1M output tokens
    image_base_tokens: int = Field(default=85, ge=0)
    image_tile_tokens: int = Field(default=170, ge=0)


class _PriceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: dict[str, _PriceEntry]


class PriceTable:
    """Prices by model name. A dated snapshot (`gpt-5-2025-08-07`, `claude-sonnet-4-5-20250929`)
    and an `openai:` prefix fall back to the base name."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self.prices: dict[str, Price] = dict(DEFAULT_PRICES if prices is None else prices)

    def get(self, model: str) -> Price | None:
        name = model.removeprefix("openai:").strip()
        for candidate in (name, name.lower(), _DATED.sub("", name.lower())):
            if candidate in self.prices:
                return self.prices[candidate]
        return None

    def cost(self, model: str, usage: Usage | None) -> float | None:
        """The call's cost in USD, or None for an unpriced model or a call without usage."""
        price = self.get(model)
        if price is None or usage is None:
            return None
        return price.cost(usage)


def load_price_table(path: str | Path | None) -> PriceTable:
    """The built-in table, with the models of `path` (JSON or TOML) added or replaced.

    The file: `{"models": {"NAME": {"input": 0.15, "output": 0.6}}}` (USD per 1M tokens), or
    in TOML `[models."NAME"]` with `input = 0.15` and `output = 0.6`."""
    table = PriceTable()
    if path is None:
        return table
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read the price file {p}: {e.strerror or e}") from None
    try:
        raw: Any = tomllib.loads(text) if p.suffix.lower() == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        kind = "TOML" if p.suffix.lower() == ".toml" else "JSON"
        raise ConfigError(f"price file {p} is not valid {kind}: {e}") from None
    try:
        parsed = _PriceFile.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(f"price file {p}: " + _problems(exc)) from None
    for name, ent in parsed.models.items():
        table.prices[name] = Price(
            ent.input, ent.output, ent.image_base_tokens, ent.image_tile_tokens
        )
    return table


def _problems(exc: ValidationError, most: int = 5) -> str:
    """Each problem of a price file as `field.path: what (got VALUE)`, the first few."""
    out = []
    for err in exc.errors()[:most]:
        where = ".".join(str(x) for x in err["loc"]) or "(the file)"
        got = err.get("input")
        shown = "" if err["type"] == "missing" else f" (got {got!r})"[:80]
        out.append(f"{where}: {err['msg']}{shown}")
    more = exc.error_count() - most
    hint = ' (expected {"models": {"NAME": {"input": USD, "output": USD}}}, USD per 1M tokens)'
    return "; ".join(out) + (f"; and {more} more" if more > 0 else "") + hint


def image_tokens_high(size: tuple[int, int], base: int = 85, per_tile: int = 170) -> int:
    """Tokens of one image at "high" detail: fit into 2048x2048, scale the shortest side to
    768 (never up), count 512-px tiles. 1920x1080 -> 1365x768 -> 3x2 tiles -> 85+6*170=1105."""
    w, h = float(size[0]), float(size[1])
    if w <= 0 or h <= 0:
        return base
    s = min(1.0, 2048 / max(w, h))
    w, h = w * s, h * s
    s = min(1.0, 768 / min(w, h))
    w, h = w * s, h * s
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return base + per_tile * tiles


def estimate_cost(
    model: str,
    sizes: Iterable[tuple[int, int]],
    price_file: str | Path | None = None,
    *,
    text_tokens: int = TYPICAL_TEXT_TOKENS,
    output_tokens: int | None = None,
) -> float | None:
    """Estimated USD for one call per screenshot size in `sizes`; None for an unpriced model.
    Reasoning models (gpt-5*, o*) are assumed to spend more output tokens."""
    table = load_price_table(price_file)
    price = table.get(model)
    if price is None:
        return None
    if output_tokens is None:
        name = model.removeprefix("openai:").lower()
        reasoning = name.startswith(("gpt-5", "o1", "o3", "o4"))
        output_tokens = _REASONING_OUTPUT_TOKENS if reasoning else TYPICAL_OUTPUT_TOKENS
    total = 0.0
    for size in sizes:
        tokens = text_tokens + image_tokens_high(
            size, price.image_base_tokens, price.image_tile_tokens
        )
        total += price.cost(Usage(tokens, output_tokens))
    return total


class CostMeter:
    """Cost so far of the calls made through one adapter (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total_usd = 0.0
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def add(self, usage: Usage | None, cost: float | None) -> None:
        with self._lock:
            self.calls += 1
            if usage is not None:
                self.input_tokens += usage.input_tokens
                self.output_tokens += usage.output_tokens
            if cost is not None:
                self.total_usd += cost
