"""The fields of one model call, declared once: the static journal (`predictions.jsonl`,
`runfolder.journal.JournalRecord`), the live journal (`live.loop.steplog.StepRecord`) and a live
agent's answer (`live.agents.turn.AgentAnswer`) all derive from `ModelCall`, and so share its
validator: only what reads back is kept (a point that is not finite is no point, flagged;
non-finite numbers are null; text that is not UTF-8 is mended)."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
            d["flags"] = [*(d.get("flags") or ()), "non_finite_point"]
        for name in ("latency_s", "cost_usd"):
            v = d.get(name)
            if isinstance(v, float) and not math.isfinite(v):
                d[name] = None
        for name in ("raw_text", "error"):
            v = d.get(name)
            if isinstance(v, str):
                d[name] = v.encode("utf-8", "replace").decode("utf-8")
        return d

    @property
    def ok(self) -> bool:
        return self.error is None

    def call_fields(self) -> dict[str, Any]:
        """The model-call fields alone, to carry into another record."""
        return {name: getattr(self, name) for name in CALL_FIELDS}


def _finite_pair(p: Any) -> bool:
    try:
        return all(isinstance(v, int | float) and math.isfinite(v) for v in p)
    except TypeError:
        return False


CALL_FIELDS: tuple[str, ...] = tuple(ModelCall.model_fields)
