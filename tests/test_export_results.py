"""`medspot export-results`: finished runs in the Hugging Face Hub's "Eval Results" format
(validated against the format as huggingface/hub-docs specifies it: `eval_results.yaml` and
`docs/hub/eval-results.md`, the documented examples included; only metrics of which a larger
value is better are leaderboards) and as "Every Eval Ever" records (validated by that project's
released schemas and its validator's rules, `_eee_validator`); the runs of several models in
one call; nothing written when a run or an option is refused."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from _builders import eval_argv, step, write_app
from _eee_validator import validate, validate_with_package
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
    """A single-pass and a zoom-in run of a served model, a random baseline run (and one that
    asked every step: it has the propagation gap, a lower-is-better diagnostic)."""
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
        argv = eval_argv(root, tmp / "all", "--model", "random", "--all-steps", bootstrap=50)
        assert main(argv) == 0
        out["all_steps"] = tmp / "all"
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
    assert "given twice" in capsys.readouterr().err
    again = shutil.copytree(runs["single"], tmp_path / "again")  # another default run of vlm
    assert _export(tmp_path / "x", one, str(again), "--format", "hf-eval") == 2
    assert "same kind of run" in capsys.readouterr().err  # two default runs: one file
    assert not (tmp_path / "x").exists()
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


def test_every_eval_ever_validator_accepts_the_records(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    dirs = [str(runs[k]) for k in ("single", "zoom", "random", "all_steps")]
    assert _export(tmp_path, *dirs, "--format", "eee", "--organization", "Lab") == 0
    errors, warnings = validate(tmp_path)
    assert errors == []
    # only the served model's flat id ("vlm", no owner) is the validator's warning; medspot's
    # baselines are filed under medspot/
    assert warnings and all("'vlm' names no developer folder" in w for w in warnings)
    assert len(list(tmp_path.glob("data/medspot/medspot/random/*.json"))) == 2
    for log_file in tmp_path.glob("data/medspot/*/*/*.json"):
        log = json.loads(log_file.read_text())
        results = {r["evaluation_result_id"]: r for r in log["evaluation_results"]}
        for key in ("avg_correct_prefix", "avg_weighted_prefix_score"):
            config, score = results[key]["metric_config"], results[key]["score_details"]
            assert config["metric_unit"] == "steps" and config["min_score"] == 0
            # two tasks of 2 and 1 steps: 1.5 steps at most; WPS 1 + 0.8 and 1 (alpha 0.8)
            assert config["max_score"] == pytest.approx(1.5 if "correct" in key else 1.4)
            assert score["score"] <= config["max_score"]
        assert all(
            r["metric_config"]["lower_is_better"] is (k == "propagation_gap")
            for k, r in results.items()
        )
        if "propagation_gap" in results:
            gap = results["propagation_gap"]["metric_config"]
            assert (gap["min_score"], gap["max_score"]) == (-1, 1)
    # the served model that hit every step scored the maxima
    (single,) = [
        json.loads(p.read_text())
        for p in tmp_path.glob("data/medspot/unknown/vlm/*.json")
        if "zoom" not in json.loads(p.read_text())["eval_library"]["additional_details"]
    ]
    acp = next(
        r for r in single["evaluation_results"] if r["evaluation_result_id"] == "avg_correct_prefix"
    )
    assert acp["score_details"]["score"] == acp["metric_config"]["max_score"] == 1.5


def test_the_validator_refuses_a_continuous_score_without_its_bounds(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    """What the export wrote before: ACP and WPS with `max_score: null`."""
    assert _export(tmp_path, str(runs["random"]), "--format", "eee") == 0
    (log_file,) = tmp_path.glob("data/medspot/*/*/*.json")
    log = json.loads(log_file.read_text())
    for r in log["evaluation_results"]:
        if r["evaluation_result_id"] in ("avg_correct_prefix", "avg_weighted_prefix_score"):
            r["metric_config"]["max_score"] = None
    log_file.write_text(json.dumps(log))
    errors, _ = validate(tmp_path)
    assert len(errors) == 2 and all("continuous needs max_score" in e for e in errors)


def test_every_eval_evers_own_package_accepts_the_records(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    pytest.importorskip(
        "every_eval_ever.validator.validation_core",
        reason="the every-eval-ever package (Python 3.12+) is not installed",
    )
    dirs = [str(runs[k]) for k in ("single", "random", "all_steps")]
    assert _export(tmp_path, *dirs, "--format", "eee") == 0
    errors, warnings = validate_with_package(tmp_path)
    assert errors == [] and all("'vlm'" in w for w in warnings)


def test_hf_eval_ranks_only_metrics_of_which_more_is_better(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _export(tmp_path, str(runs["all_steps"]), "--format", "hf-eval") == 0
    tasks = {t["id"] for t in yaml.safe_load(capsys.readouterr().out)["tasks"]}
    assert "task_completion_accuracy" in tasks and "live_task_success_rate" in tasks
    for diagnostic in ("propagation_gap", "live_harmful_failure_rate", "live_steps_ratio",
                       "live_false_infeasible_rate", "live_tool_invocation_rate"):  # fmt: skip
        assert diagnostic not in tasks
    (file,) = (tmp_path / ".eval_results").iterdir()
    entries = yaml.safe_load(file.read_text())
    assert {e["dataset"]["task_id"] for e in entries} <= tasks
    assert "independent_step_accuracy" in {e["dataset"]["task_id"] for e in entries}
    gap = json.loads((runs["all_steps"] / "overall_dataset_metrics.json").read_text())
    expected = round(100 * gap["propagation_gap"], 2)
    assert f"not ranked: gap {expected} (percent, lower is better)" in entries[0]["notes"]


def test_several_models_in_one_call(runs: dict[str, Path], tmp_path: Path) -> None:
    pair = (str(runs["single"]), str(runs["random"]))
    hub = tmp_path / "hub"
    assert _export(hub, *pair, "--format", "hf-eval") == 0
    for model in ("vlm", "random"):  # a model repository's folder each
        entries = yaml.safe_load((hub / model / ".eval_results" / "medspot.yaml").read_text())
        jsonschema.validate(entries, EVAL_RESULTS_SCHEMA)
    assert not (hub / ".eval_results").exists()
    eee = tmp_path / "eee"
    assert _export(eee, *pair, "--format", "eee") == 0
    assert len(list(eee.glob("data/medspot/*/*/*.json"))) == 2
    assert validate(eee)[0] == []


def _incomplete(runs: dict[str, Path], where: Path) -> Path:
    broken = Path(shutil.copytree(runs["random"], where))
    info = json.loads((broken / "run.json").read_text())
    (broken / "run.json").write_text(json.dumps({**info, "status": "incomplete"}))
    return broken


@pytest.mark.parametrize("fmt", ["hf-eval", "eee"])
def test_a_refused_run_leaves_nothing_written(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    broken = _incomplete(runs, tmp_path / "broken")
    out = tmp_path / "out"
    # the good run first: before, its file was written when the second was refused
    assert _export(out, str(runs["single"]), str(broken), "--format", fmt) == 2
    assert "incomplete run" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--format", "hf-eval", "--dataset", "../../evil"), "not a hub dataset id"),
        (("--format", "eee", "--dataset", "../../evil"), "not a hub dataset id"),
        (("--format", "hf-eval", "--dataset", "owner/name/../x"), "not a hub dataset id"),
        (("--format", "hf-eval", "--source-url", "javascript:alert(1)"), "not an http(s) URL"),
        (("--format", "hf-eval", "--source-url", "file:///etc/passwd"), "not an http(s) URL"),
        (("--format", "hf-eval", "--source-url", "https://"), "not an http(s) URL"),
        (("--format", "eee", "--source-url", "https://h.org/x"), "hf-eval only"),
        (("--format", "hf-eval", "--organization", "Lab"), "eee only"),
        (("--format", "hf-eval", "--source-name", "logs"), "give both"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(
    runs: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    said: str,
) -> None:
    out = tmp_path / "out"
    code: object
    try:  # a bad value is argparse's usage error, an option of the other format medspot's
        code = main(["export-results", str(runs["single"]), *args, "--out", str(out)])
    except SystemExit as e:
        code = e.code
    assert code == 2
    assert said in capsys.readouterr().err
    assert not out.exists()
