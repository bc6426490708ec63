"""The fields of one model call, declared once next to the model's answer (`Prediction`): the
static journal (`predictions.jsonl`, `runfolder.journal.JournalRecord`), the live journal
(`live.loop.steplog.StepRecord`), a live agent's answer (`live.agents.turn.AgentAnswer`) and
each call of an agent made of several models (`live.agents.turn.TurnCall`) all derive from
`ModelCall`, and so share its validator: only what reads back is kept (a point that is not
finite is no point, flagged; non-finite numbers are null; every other value, the record's own
fields included, as `medspot.jsonsafe.json_safe` makes it: text that is not UTF-8 mended,
integers beyond 64 bits clamped, nesting bounded), so that no value a model wrote makes a
journal line unwritable. `ModelCall.of_prediction` is the one place a record is made from a
`Prediction`."""

from __future__ import annotations

import math
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from medspot.adapters.base import NON_FINITE_POINT, Prediction
from medspot.jsonsafe import finite_float, json_safe

__all__ = ["CALL_FIELDS", "ModelCall"]


class ModelCall(BaseModel):
    """What one model call said and cost. `point` is normalised to the original screenshot."""

    model_config = ConfigDict(extra="allow")

    raw_text: str | None = None
    point: tuple[float, float] | None = None
    flags: list[str] = Field(default_factory=list)
    sent_size: tuple[int, int] | None = None  # the image size sent (after any pre-resize)
    latency_s: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    retries: int = 0
    error: str | None = None  # the call failed (after retries): no answer

    @model_validator(mode="before")
    @classmethod
    def _writable(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        d = dict(data)
        point = d.get("point")
        if point is not None and not _finite_pair(point):
            d["point"] = None
            d["flags"] = [*(d.get("flags") or ()), NON_FINITE_POINT]
        for name in ("latency_s", "cost_usd"):
            v = d.get(name)
            if isinstance(v, float) and not math.isfinite(v):
                d[name] = None
        # every other value as JSON writes it back (`extra_points` keeps its own filter)
        return {k: v if k in _OWN_CHECKS else json_safe(v) for k, v in d.items()}

    @classmethod
    def of_prediction(
        cls, pred: Prediction | None, *, latency_s: float, retries: int, **fields: Any
    ) -> Self:
        """The record of one call that answered `pred` (None: it failed: give `error`) after
        `retries` retries and `latency_s` seconds; `fields` are the record's own fields (or
        replace a call field, such as the point an agent read from the answer)."""
        usage = pred.usage if pred is not None else None
        call: dict[str, Any] = {
            "raw_text": pred.raw_text if pred is not None else None,
            "point": (pred.point.x, pred.point.y) if pred is not None and pred.point else None,
            "flags": list(pred.flags) if pred is not None else [],
            "sent_size": pred.sent_size if pred is not None else None,
            "latency_s": round(latency_s, 6),
            "input_tokens": usage.input_tokens if usage else None,
            "output_tokens": usage.output_tokens if usage else None,
            "cost_usd": pred.cost_usd if pred is not None else None,
            "retries": retries,
        }
        return cls(**{**call, **fields})

    @property
    def ok(self) -> bool:
        return self.error is None

    def call_fields(self) -> dict[str, Any]:
        """The model-call fields alone, to carry into another record."""
        return {name: getattr(self, name) for name in CALL_FIELDS}


def _finite_pair(p: Any) -> bool:
    try:
        return all(finite_float(v) is not None for v in p)
    except TypeError:
        return False


CALL_FIELDS: tuple[str, ...] = tuple(ModelCall.model_fields)
_OWN_CHECKS = frozenset({"point", "extra_points"})  # fields checked by their own validators
