"""Baselines that run offline: `random`, `center`, `oracle`, `replay`.

`oracle` reads the target box (a pipeline check and the protocol's ceiling; reports label it);
no other adapter may.
"""

from __future__ import annotations

import hashlib
import random as _random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.adapters.base import AdapterContext, Convention, Prediction, StepRequest
from medspot.adapters.registry import AdapterEntry, register
from medspot.adapters.replayfile import read_replay_file
from medspot.dataset.records import Dataset
from medspot.errors import ConfigError, DataError, ModelCallError
from medspot.geometry import Point

__all__ = ["CenterAdapter", "OracleAdapter", "RandomAdapter", "ReplayAdapter"]


def _fmt(p: Point) -> str:
    return f"({p.x:.6f}, {p.y:.6f})"


class _Offline:
    """What the baselines share: nothing to close, and run.json's record of one (its name,
    kind, convention and `settings()`)."""

    name: str
    convention: Convention

    def settings(self) -> dict[str, Any]:
        """What run.json records of the baseline beyond its name, kind and convention."""
        return {}

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "baseline",
            "convention": str(self.convention),
            **self.settings(),
        }

    async def aclose(self) -> None:
        return None


@dataclass
class RandomAdapter(_Offline):
    """Uniform over the screen, seeded by the step's identity and the seed, so a step gets the
    same point whatever the order or concurrency."""

    seed: int = 0
    name: str = "random"
    convention: Convention = Convention.NORMALISED
    max_concurrency: int = 64

    def point_for(self, step_uid: str) -> Point:
        digest = hashlib.sha256(f"{self.seed}:{step_uid}".encode()).digest()
        rng = _random.Random(int.from_bytes(digest[:8], "big"))
        return Point(rng.random(), rng.random())

    async def predict(self, request: StepRequest) -> Prediction:
        p = self.point_for(request.step_uid)
        return Prediction(raw_text=_fmt(p), point=p, prompt=request.instruction)

    def settings(self) -> dict[str, Any]:
        return {"seed": self.seed}


@dataclass
class CenterAdapter(_Offline):
    """Always the centre of the screen."""

    name: str = "center"
    convention: Convention = Convention.NORMALISED
    max_concurrency: int = 64

    async def predict(self, request: StepRequest) -> Prediction:
        p = Point(0.5, 0.5)
        return Prediction(raw_text=_fmt(p), point=p, prompt=request.instruction)


@dataclass
class OracleAdapter(_Offline):
    """The centre of the step's first target box: the ceiling of a protocol, not a model."""

    dataset: Dataset
    name: str = "oracle"
    convention: Convention = Convention.NORMALISED
    max_concurrency: int = 64

    async def predict(self, request: StepRequest) -> Prediction:
        step = self.dataset.step(request.step_uid)
        if not step.boxes:
            return Prediction(raw_text="", point=None, prompt=request.instruction)
        p = step.boxes[0].center
        return Prediction(raw_text=_fmt(p), point=p, prompt=request.instruction)

    def settings(self) -> dict[str, Any]:
        return {"note": "oracle: reads the target box; a pipeline check, not a model"}


@dataclass
class ReplayAdapter(_Offline):
    """Answers from a JSONL file made elsewhere. Each line: {"step": "<App>/<i>/<k>"} and one of
    "point": [x, y] (normalised to the original), "point_px": [x, y] (pixels of the original), or
    "raw_text" (read as a rel1000 "(x, y)" answer unless --convention says otherwise)."""

    path: Path
    convention: Convention = Convention.NORMALISED
    text_convention: str = "rel1000"
    name: str = "replay"
    max_concurrency: int = 64
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)

    dataset: Dataset | None = None

    def __post_init__(self) -> None:
        self.answers = read_replay_file(self.path, self.dataset)

    async def predict(self, request: StepRequest) -> Prediction:
        obj = self.answers.get(request.step_uid)
        if obj is None:
            # the file is all there is: asking again cannot help, so this is not a failed call
            raise DataError(f"the replay file {self.path} has no answer for this step")
        raw = obj.get("raw_text")
        if "point" in obj and obj["point"] is not None:
            x, y = _pair(obj["point"], request.step_uid)
            return Prediction(
                raw_text=raw if raw is not None else f"({x}, {y})",
                point=Point(x, y),
                prompt=request.instruction,
            )
        if "point_px" in obj and obj["point_px"] is not None:
            x, y = _pair(obj["point_px"], request.step_uid)
            w, h = request.image_size
            return Prediction(
                raw_text=raw if raw is not None else f"({x}, {y})",
                point=Point(x / w, y / h),
                prompt=request.instruction,
            )
        text = str(raw or "")
        return Prediction(
            raw_text=text, point=self._parse_text(text, request), prompt=request.instruction
        )

    def _parse_text(self, text: str, request: StepRequest) -> Point | None:
        from medspot.adapters.base import Convention as C

        try:
            from medspot.adapters.cards import make_generic_card
        except ImportError:  # pragma: no cover - cards are part of the package
            return None
        card = make_generic_card("replay", C(self.text_convention), None)
        parsed = card.native.parse(text, request.image_size, request.image_size)
        return parsed.point

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "replay",
            "file": str(self.path),
            "text_convention": self.text_convention,
        }


def _pair(value: Any, uid: str) -> tuple[float, float]:
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return float(value[0]), float(value[1])
    raise ModelCallError(f"replay answer for {uid}: a point must be two numbers, got {value!r}")


def create_random(ctx: AdapterContext) -> RandomAdapter:
    return RandomAdapter(seed=ctx.seed)


def create_center(ctx: AdapterContext) -> CenterAdapter:
    return CenterAdapter()


def create_oracle(ctx: AdapterContext) -> OracleAdapter:
    if ctx.dataset is None:
        raise ConfigError("the oracle needs the dataset")
    return OracleAdapter(ctx.dataset)


def create_replay(ctx: AdapterContext) -> ReplayAdapter:
    path = ctx.options.replay_file
    if not path:
        raise ConfigError("--model replay needs --replay-file FILE (JSONL of step id to answer)")
    conv = ctx.options.convention or "rel1000"
    return ReplayAdapter(Path(path), text_convention=str(conv), dataset=ctx.dataset)


_M = "medspot.adapters.baselines"
register(
    AdapterEntry(
        "random",
        f"{_M}:create_random",
        "normalised",
        "uniform random point, seeded per step",
        kind="baseline",
    )
)
register(
    AdapterEntry(
        "center", f"{_M}:create_center", "normalised", "the centre of the screen", kind="baseline"
    )
)
register(
    AdapterEntry(
        "oracle",
        f"{_M}:create_oracle",
        "normalised",
        "the target box centre: pipeline check and protocol ceiling (not a model)",
        kind="baseline",
    )
)
register(
    AdapterEntry(
        "replay",
        f"{_M}:create_replay",
        "normalised",
        "answers from a JSONL file (--replay-file): points or raw text",
        kind="baseline",
    )
)
# The OCR baseline: its module imports rapidocr only when an adapter is built.
register(
    AdapterEntry(
        "ocr",
        "medspot.adapters.ocr:create",
        "normalised",
        "OCR (rapidocr) + fuzzy match of what the instruction names; offline, CPU",
        kind="baseline",
        extra="ocr",
    )
)
