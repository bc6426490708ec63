"""`medspot export-results`: finished runs in the Hugging Face Hub's "Eval Results" format
(validated against the format as huggingface/hub-docs specifies it: `eval_results.yaml` and
`docs/hub/eval-results.md`, the documented examples included) and as "Every Eval Ever"
records (the documented rules of evaleval/every_eval_ever's schemas, version 0.3.0)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from _builders import eval_argv, step, write_app
from medspot.cli import main
from medspot.testing.openai_server import OpenAITestServer

yaml = pytest.importorskip("yaml")
jsonschema = pytest.importorskip("jsonschema")

# huggingface/hub-docs `eval_results.yaml` (the specification the docs link), as a JSON
# schema: a list of entries, the keys it names and no other, `url` required in a `source`.
EVAL_RESULTS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "minItems": 1,
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": ["dataset", "value"],
        "properties": {
            "dataset": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "task_id"],
                "properties": {
                    "id": {"type": "string", "pattern": "^[^/\\s]+/[^/\\s]+$"},
                    "task_id": {"type": "string", "minLength": 1},
                    "revision": {"type": "string"},
                },
            },
            "value": {"type": "number"},
            "verifyToken": {"type": "string"},
            "date": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}"},
            "source": {
                "type": "object",
                "additionalProperties": False,
                "required": ["url"],
                "properties": {
                    "url": {"type": "string"},
                    "name": {"type": "string"},
                    "user": {"type": "string"},
                    "org": {"type": "string"},
                },
            },
            "notes": {"type": "string"},
        },
    },
}
# docs/hub/eval-results.md "Eval.yaml specification": name, description, evaluation_framework;
# tasks[] with a required `id`, optional `config` and `split`.
EVAL_YAML_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name", "description", "evaluation_framework", "tasks"],
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "evaluation_framework": {"type": "string"},
        "tasks": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["id"],
                "additionalProperties": False,
                "properties": {
                    "id": {"type": "string"},
                    "config": {"type": "string"},
                    "split": {"type": "string"},
                },
            },
        },
    },
}
# The documented examples, with the docs' placeholders filled in.
DOCUMENTED_EXAMPLES = """
- dataset:
    id: cais/hle
    task_id: default
    revision: 5503434ddd753f426f4b38109466949a1217c2bb
  value: 20.90
  verifyToken: abc
  date: "2025-01-15"
  source:
    url: https://huggingface.co/spaces/SaylorTwift/smollm3-mmlu-pro
    name: Eval traces
    user: SaylorTwift
  notes: "no-tools"
- dataset:
    id: Idavidrein/gpqa
    task_id: gpqa_diamond
  value: 0.412
"""
DOCUMENTED_EVAL_YAML = """
name: MathArena AIME 2026
description: The American Invitational Mathematics Exam (AIME).
evaluation_framework: "math-arena"

tasks:
  - id: MathArena/aime_2026
    config: default
    split: test
"""


def test_the_schemas_accept_the_documented_examples_and_only_them() -> None:
    jsonschema.validate(yaml.safe_load(DOCUMENTED_EXAMPLES), EVAL_RESULTS_SCHEMA)
    jsonschema.validate(yaml.safe_load(DOCUMENTED_EVAL_YAML), EVAL_YAML_SCHEMA)
    wrong = [{"dataset": {"id": "a/b", "task_id": "t"}, "value": 1, "ci": [0, 1]}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(wrong, EVAL_RESULTS_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{"dataset": {"id": "a/b"}, "value": 1}], EVAL_RESULTS_SCHEMA)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A single-pass and a zoom-in run of a served model, a random baseline run."""
    tmp = tmp_path_factory.mktemp("export")
    root = tmp / "data"
    box = (10.0, 10.0, 8.0, 8.0)
    write_app(root, "Viewer", [[step("Images/a.png", "Open File", box),
                                step("Images/b.png", "Click Save", box)],
                               [step("Images/c.png", "Zoom in", box)]])  # fmt: skip
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-test")
    out = {}
    try:
        with OpenAITestServer(answer="(140, 140)") as srv:
            for name, extra in (("single", []), ("zoom", ["--zoom", "2"])):
                argv = eval_argv(root, tmp / name, "--model", "openai:vlm", "--base-url",
                                 srv.base_url, *extra, bootstrap=50)  # fmt: skip
                assert main(argv) == 0
                out[name] = tmp / name
        assert main(eval_argv(root, tmp / "random", "--model", "random", bootstrap=50)) == 0
        out["random"] = tmp / "random"
    finally:
        mp.undo()
    return out


def _export(tmp_path: Path, *args: str) -> int:
    return main(["export-results", *args, "--out", str(tmp_path)])


def test_hf_eval_files_are_in_the_hubs_format(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = _export(tmp_path, str(runs["single"]), str(runs["zoom"]), "--format", "hf-eval",
                   "--source-url", "https://huggingface.co/datasets/me/medspot-logs")  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    eval_yaml = yaml.safe_load(printed)
    jsonschema.validate(eval_yaml, EVAL_YAML_SCHEMA)
    assert eval_yaml["evaluation_framework"] == "medspot"
    task_ids = {t["id"] for t in eval_yaml["tasks"]}
    files = sorted((tmp_path / ".eval_results").iterdir())
    assert [f.name for f in files] == ["medspot.yaml", "medspot_multi-pass-zoom-x2-crop-0-5.yaml"]
    single = yaml.safe_load(files[0].read_text())
    zoom = yaml.safe_load(files[1].read_text())
    for entries in (single, zoom):
        jsonschema.validate(entries, EVAL_RESULTS_SCHEMA)
        assert {e["dataset"]["task_id"] for e in entries} <= task_ids  # tasks of the eval.yaml
        assert all(e["dataset"]["id"] == "Tajamul21/MedSPOT" for e in entries)
        assert all(e["source"]["url"].endswith("medspot-logs") for e in entries)
    tca = next(e for e in single if e["dataset"]["task_id"] == "task_completion_accuracy")
    metrics = json.loads((runs["single"] / "overall_dataset_metrics.json").read_text())
    assert tca["value"] == round(100 * metrics["task_completion_accuracy"], 2)
    lo, hi = metrics["confidence_intervals"]["task_completion_accuracy"]
    assert f"95% CI [{round(100 * lo, 2)}, {round(100 * hi, 2)}]" in tca["notes"]
    for part in ("protocol medspot-v1", "native prompt", "2 tasks", "harness medspot "):
        assert part in tca["notes"]
    assert "multi-pass (zoom x2, crop 0.5)" in zoom[0]["notes"]
    assert "multi-pass" not in tca["notes"]


def test_hf_eval_refuses_what_it_cannot_publish(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one = str(runs["single"])
    assert _export(tmp_path, one, one, "--format", "hf-eval") == 2  # the same run twice
    capsys.readouterr()
    assert _export(tmp_path, one, str(runs["random"]), "--format", "hf-eval") == 2
    assert "same kind of run" in capsys.readouterr().err  # two default runs: one file
    run_json = json.loads((runs["random"] / "run.json").read_text())
    broken = tmp_path / "incomplete"
    broken.mkdir()
    for f in runs["random"].iterdir():
        if f.is_file():
            (broken / f.name).write_bytes(f.read_bytes())
    (broken / "run.json").write_text(json.dumps({**run_json, "status": "incomplete"}))
    assert _export(tmp_path / "x", str(broken), "--format", "hf-eval") == 2
    assert "incomplete run" in capsys.readouterr().err


# The instance records' documented rules (every_eval_ever instance_level_eval.schema.json,
# version 0.3.0): a closed record, these keys required, multi_turn with messages and no output.
INSTANCE_KEYS = {
    "schema_version", "evaluation_id", "model_id", "evaluation_name", "evaluation_result_id",
    "sample_id", "sample_hash", "interaction_type", "input", "output", "messages",
    "answer_attribution", "evaluation", "token_usage", "performance", "error", "metadata",
}  # fmt: skip
INSTANCE_REQUIRED = {
    "schema_version", "evaluation_id", "model_id", "evaluation_name", "sample_id",
    "interaction_type", "input", "answer_attribution", "evaluation",
}  # fmt: skip
ATTRIBUTION_KEYS = {"turn_idx", "source", "extracted_value", "extraction_method", "is_terminal"}
UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"


def test_every_eval_ever_records(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _export(tmp_path, str(runs["zoom"]), "--format", "eee", "--organization", "Lab") == 0
    (log_file,) = tmp_path.glob("data/medspot/*/*/*.json")
    log = json.loads(log_file.read_text())
    detail = log["detailed_evaluation_results"]
    assert re.fullmatch(f"data/[^/]+/[^/]+/[^/]+/{UUID4}_samples\\.jsonl", detail["file_path"])
    samples = (tmp_path / detail["file_path"]).read_bytes()
    assert detail["checksum"] == hashlib.sha256(samples).hexdigest()
    lines = [json.loads(x) for x in samples.decode().splitlines()]
    assert detail["total_rows"] == len(lines) == 2  # one record per task
    assert {"schema_version", "evaluation_id", "retrieved_timestamp", "source_metadata",
            "model_info", "eval_library", "evaluation_results"} <= set(log)  # fmt: skip
    assert log["eval_library"]["name"] == "medspot"
    assert log["eval_library"]["additional_details"]["zoom"] == "zoom x2, crop 0.5"
    assert log["source_metadata"]["source_organization_name"] == "Lab"
    assert log["model_info"]["id"] == "vlm"
    results = {r["evaluation_result_id"]: r for r in log["evaluation_results"]}
    tca = results["task_completion_accuracy"]
    ci = tca["score_details"]["uncertainty"]["confidence_interval"]
    assert ci["confidence_level"] == 0.95 and ci["lower"] <= tca["score_details"]["score"]
    for rec in lines:
        assert set(rec) <= INSTANCE_KEYS and set(rec) >= INSTANCE_REQUIRED
        assert rec["evaluation_id"] == log["evaluation_id"] and rec["model_id"] == "vlm"
        assert rec["evaluation_result_id"] in results
        assert rec["interaction_type"] == "multi_turn" and rec["output"] is None
        assert rec["messages"] and rec["evaluation"]["num_turns"] == len(rec["messages"])
        assert all(set(a) == ATTRIBUTION_KEYS for a in rec["answer_attribution"])
        assert rec["answer_attribution"][-1]["is_terminal"] is True
        assert rec["evaluation"]["score"] in (0.0, 1.0)
        assert isinstance(rec["input"]["raw"], str) and isinstance(rec["input"]["reference"], list)
    # reproducible: the same run exports to the same files
    again = tmp_path / "again"
    assert _export(again, str(runs["zoom"]), "--format", "eee") == 0
    (other,) = again.glob("data/medspot/*/*/*.json")
    assert other.name == log_file.name
