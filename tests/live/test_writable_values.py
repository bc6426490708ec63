"""No value a model wrote makes a run folder's file unwritable: `medspot.jsonsafe.json_safe` and
the last line of every writer (the journals' `Journal.append`, `atomic_write_json_lines` of the
results, `atomic_write_json`) write a lone surrogate, an integer of 400 digits, a key that is
no string, nesting deeper than any serializer goes, and read them back; the records made of a
model's answer (`ModelCall` and the live journal's `StepRecord`) hold only such values."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from _action_strategies import deep, json_values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medspot.atomic_write import atomic_write_json, atomic_write_json_lines
from medspot.jsonsafe import CUT, MAX_DEPTH, MAX_INT, REPLACEMENT, finite_float, json_safe
from medspot.live.loop.steplog import FaultRecord, StepRecord, TaskRecord, read_live_journal
from medspot.runfolder.journal import Journal, JournalRecord, read_journal

HOSTILE: dict[str, Any] = {
    "surrogate": "a\ud800b",
    "huge": 10**400,
    "minus_huge": -(2**64),
    "keys": {1: "one", None: "none", (1, 2): "tuple"},
    "deep": deep(300),
    "fine": [1, 2.5, "ＡＢＣ😀", None, True],
}


def test_json_safe_makes_each_unwritable_value_writable() -> None:
    safe = json_safe(HOSTILE)
    assert safe["surrogate"] == f"a{REPLACEMENT}b"
    assert safe["huge"] == MAX_INT and safe["minus_huge"] == -MAX_INT - 1
    assert safe["keys"] == {"1": "one", "null": "none", "(1, 2)": "tuple"}
    assert safe["fine"] == HOSTILE["fine"]
    cut, depth = safe["deep"], 1
    while isinstance(cut, list):
        cut, depth = cut[0], depth + 1
    assert cut == CUT and depth == MAX_DEPTH
    assert json_safe([math.nan, math.inf, (1, 2)]) == [None, None, (1, 2)]
    assert json_safe(json_safe(HOSTILE)) == json_safe(HOSTILE)


def test_finite_float_reads_any_number_without_raising() -> None:
    assert finite_float(10**400) is None and finite_float(math.nan) is None
    assert finite_float(True) is None and finite_float("1") is None
    assert finite_float(2**63) == float(2**63) and finite_float(-0.5) == -0.5


def test_the_results_writers_write_what_a_model_wrote(tmp_path: Path) -> None:
    rows = tmp_path / "task_results.json"
    atomic_write_json_lines(rows, [{"ok": 1}, {"raw": HOSTILE}])
    back = json.loads(rows.read_text(encoding="utf-8"))
    assert back[0] == {"ok": 1} and back[1]["raw"]["huge"] == MAX_INT
    one = tmp_path / "trajectory.json"
    atomic_write_json(one, {"raw": HOSTILE, "digits": 10**5000})
    assert json.loads(one.read_text(encoding="utf-8"))["raw"]["surrogate"] == f"a{REPLACEMENT}b"
    with pytest.raises(ValueError):  # the harness's own numbers: NaN is still a bug
        atomic_write_json(one, {"a": math.nan})


def test_the_journals_write_records_holding_what_a_model_wrote(tmp_path: Path) -> None:
    live = tmp_path / "live_journal.jsonl"
    with Journal(live, fsync=False) as j:
        step = StepRecord(task="t", env="e", attempt=1, n=1, raw_text="x\ud800",
                          thought="\udfff", action={"kind": "type", "text": "\ud800"},
                          call_state={"items": HOSTILE}, tool_result={"t": "\ud800"})  # fmt: skip
        j.append(step)
        j.append(FaultRecord(task="t", env="e", attempt=1, message="no ID \ud800", n=1))
        j.append(TaskRecord(task="t", env="e", attempt=1, outcome="failure", reason="\ud800",
                            extra=HOSTILE))  # type: ignore[call-arg]  # fmt: skip
    read, fault, task = read_live_journal(live)
    assert isinstance(read, StepRecord) and read.action == {"kind": "type", "text": REPLACEMENT}
    assert isinstance(fault, FaultRecord) and fault.message == f"no ID {REPLACEMENT}"
    assert isinstance(task, TaskRecord) and task.reason == REPLACEMENT
    static = tmp_path / "predictions.jsonl"
    with Journal(static, fsync=False) as j:
        rec = JournalRecord(step="A/0/1", task="A/0", image_path="a.png", raw_text="\ud800",
                            extra_points=[(math.inf, 1.0), (0.5, 0.5)],
                            meta=HOSTILE)  # type: ignore[call-arg]  # fmt: skip
        j.append(rec)
    (back,) = read_journal(static)
    assert back.raw_text == REPLACEMENT and back.extra_points == [(0.5, 0.5)]


@settings(max_examples=80, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])  # fmt: skip
@given(value=json_values | st.sampled_from(list(HOSTILE.values())))
def test_any_value_writes_and_reads_back(tmp_path_factory: Any, value: Any) -> None:
    tmp = tmp_path_factory.mktemp("w")
    atomic_write_json_lines(tmp / "rows.json", [{"v": value}])
    assert len(json.loads((tmp / "rows.json").read_text(encoding="utf-8"))) == 1
    atomic_write_json(tmp / "one.json", {"v": json_safe(value)})  # NaN: null, as the rows
    json.loads((tmp / "one.json").read_text(encoding="utf-8"))
    with Journal(tmp / "j.jsonl", fsync=False) as j:
        j.append(StepRecord(task="t", env="e", attempt=1, n=1, call_state={"v": value},
                            thought=str(value)[:50]))  # fmt: skip
    (back,) = read_live_journal(tmp / "j.jsonl")
    assert isinstance(back, StepRecord) and back.call_state == json_safe({"v": value})
