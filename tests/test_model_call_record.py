"""One declaration of a model call's fields (`adapters.modelcall.ModelCall`): the static
journal, the live journal and a live agent's answer share the fields and the validator."""

from __future__ import annotations

import json
import math

from medspot.adapters.modelcall import CALL_FIELDS, ModelCall
from medspot.live.agents.turn import AgentAnswer
from medspot.live.core.actions import Click
from medspot.live.loop.steplog import StepRecord
from medspot.runfolder.journal import JournalRecord


def test_the_three_records_share_the_call_fields() -> None:
    for cls in (JournalRecord, StepRecord, AgentAnswer):
        assert issubclass(cls, ModelCall)
        assert set(CALL_FIELDS) <= set(cls.model_fields)


def test_the_validator_holds_for_every_record() -> None:
    bad = {"point": (math.nan, 0.5), "raw_text": "caf\udce9", "latency_s": math.inf}
    recs: list[ModelCall] = [
        JournalRecord(step="A/0/1", task="A/0", image_path="x.png", **bad),
        StepRecord(task="t", env="e", attempt=1, n=1, **bad),
        AgentAnswer(action=Click(1, 2), source="x", **bad),
    ]
    for r in recs:
        assert r.point is None and "non_finite_point" in r.flags
        assert r.latency_s is None
        assert r.raw_text is not None and r.raw_text.startswith("caf")
        r.raw_text.encode("utf-8")  # no lone surrogate left
        json.loads(r.model_dump_json())  # reads back


def test_a_live_journal_line_of_the_earlier_format_reads() -> None:
    line = (
        '{"type": "step", "task": "t", "env": "orthanc-explorer", "attempt": 1, "n": 1, '
        '"raw_text": "click(3, 4)", "point": [0.1, 0.2], "flags": [], "sent_size": [1280, 800], '
        '"latency_s": 0.5, "input_tokens": 10, "output_tokens": 2, "cost_usd": 0.001, '
        '"retries": 1, "error": null, "action": {"kind": "click", "x": 3, "y": 4}, '
        '"executed": true, "hit_intended": true, "achieved": [1]}'
    )
    rec = StepRecord.model_validate_json(line)
    assert rec.point == (0.1, 0.2) and rec.retries == 1 and rec.ok
    answer = AgentAnswer(**rec.call_fields(), source="replay")
    assert answer.call_fields() == rec.call_fields()
