"""GPT-4o-mini under `upstream-b` gives the numbers of the authors' own script on the same
answers.

The authors' answer reading and scoring loop (Evaluation_scripts/evaluate_gpt4omini.py of
github.com/Tajamul21/MedSPOT, commit ad61552) is ported below, function by function, with the
API call replaced by a lookup of the scripted answer. The same answers are served by the test
server to `medspot eval --model gpt-4o-mini --protocol upstream-b` (upstream prompt implied),
and per-task results, the five metrics and the failure histogram must agree.

Differences between upstream-b and the script (on these answers only the last two occur: the
fourth is asserted below, the fifth changes no number):
- a call that fails after retries is an error in medspot (resumable) but an empty answer, hence
  a `no_prediction` miss, in the script (`call_gpt` returns "");
- an answer such as "(1.2.3, 4)" crashes the script (`float("1.2.3")`); medspot records no
  prediction flagged `upstream_parse_error`;
- the object-valued instruction of Weasis task 18 step 3 is put into the script's prompt as the
  dict's repr; medspot joins its texts with a space (protocol 1.2);
- `total_failed_tasks` of the failure statistics leaves out, in the script, the failed tasks
  that logged no step (a task with no click step); medspot counts them (asserted below);
- the script re-encodes every screenshot as PNG after converting it to RGB; medspot sends the
  PNG file's own bytes (same pixels and size), and caps the answer at 1024 tokens (the script
  sets no cap).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path

import pytest
from PIL import Image

from _gpt4omini_port import evaluate_step, extract_pixel_point, upstream_main
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.dataset.records import Dataset, Step
from medspot.testing.openai_server import OpenAITestServer, SeenRequest

pytest.importorskip("openai")

KEY = "sk-test-parity-7c1d2e3f4a5b"


Key = tuple[str, str]  # (sha256 of the screenshot bytes, instruction)


def upstream_prompt(instruction: str, w: int, h: int) -> str:
    """The script's prompt, written out here from the script's f-strings."""
    return (
        f"{instruction}\nImage resolution: width={w}, height={h}.\nClick the correct UI "
        f"element.\nReturn ONLY integer pixel coordinates as (x,y) where x is in [0,{w}] and y "
        f"is in [0,{h}]. No explanation."
    )


KINDS = (
    "paren",
    "paren_tight",
    "bracket",
    "x_eq",
    "x_colon",
    "prose_at",
    "prose_bare",
    "decimal",
    "bold",
    "near_in",
    "near_out",
    "out_of_image",
    "unreadable",
    "far",
    "json",
    "two_points",
    "negative",
    "huge",
)


def realistic_answer(kind: str, step: Step, size: tuple[int, int]) -> str:
    """An answer like GPT's, in pixels of the original screenshot, aimed at `step`'s first
    click box."""
    w, h = size
    box = next(a for a in step.actions if a.type == "click").bbox_percent
    x1, y1 = box[0] / 100 * w, box[1] / 100 * h
    x2, y2 = (box[0] + box[2]) / 100 * w, (box[1] + box[3]) / 100 * h
    cx, cy = round((x1 + x2) / 2), round((y1 + y2) / 2)
    return {
        "paren": f"({cx}, {cy})",
        "paren_tight": f"({cx},{cy})",
        "bracket": f"[{cx}, {cy}]",
        "x_eq": f"x={cx}, y={cy}",
        "x_colon": f"x: {cx}; y: {cy}",
        "prose_at": f"The button is located at {cx}, {cy} in the toolbar.",
        "prose_bare": f"Sure! {cx} {cy}",
        "decimal": f"({cx}.5, {cy}.25)",
        "bold": f"**({cx}, {cy})**",
        # 5 px right of the box (within the 7 px patch) and 10 px right of it (outside)
        "near_in": f"({round(x2) + 5}, {cy})",
        "near_out": f"({round(x2) + 10}, {cy})",
        "out_of_image": f"({w + 40}, {cy})",
        "unreadable": "I'm sorry, but I can't identify that element in the screenshot.",
        "far": f"({w - cx}, {h - cy})",
        "json": f'{{"x": {cx}, "y": {cy}}}',
        "two_points": f"Click at ({cx}, {cy}) or maybe ({w // 2}, {h // 2}).",
        "negative": f"(-{cx}, {cy})",
        "huge": f"({cx}0000, {cy})",
    }[kind]


class Script:
    """The scripted answers, per (screenshot bytes, instruction), for the server and the port."""

    def __init__(self, ds: Dataset) -> None:
        self.ds = ds
        self.sha: dict[str, str] = {}
        self.size: dict[str, tuple[int, int]] = {}
        self.steps_of: dict[Key, list[Step]] = {}
        self.key_of: dict[str, Key] = {}
        for step in ds.steps():
            rel = step.image_path
            if rel not in self.sha:
                path = ds.root / rel
                self.sha[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
                with Image.open(path) as im:
                    self.size[rel] = im.size
            key = (self.sha[rel], step.instruction)
            self.steps_of.setdefault(key, []).append(step)
            self.key_of[step.uid] = key
        self.answer_of: dict[Key, str] = {}
        self.kind_of: dict[Key, str] = {}
        for key, steps in self.steps_of.items():
            clicks = [s for s in steps if any(a.type == "click" for a in s.actions)]
            if not clicks:
                continue
            kind = KINDS[zlib.crc32(clicks[0].uid.encode()) % len(KINDS)]
            self.kind_of[key] = kind
            self.answer_of[key] = realistic_answer(kind, clicks[0], self.size[clicks[0].image_path])
        self.unknown: list[str] = []
        self.bad_prompt: list[str] = []
        self.asked: list[str] = []

    def by_uid(self, uid: str) -> str:
        return self.answer_of[self.key_of[uid]]

    def answer(self, req: SeenRequest) -> str:
        if req.image is None:
            self.unknown.append(req.text)
            return ""
        instruction = req.text.split("\nImage resolution: width=")[0]
        key = (req.image.sha256, instruction)
        if key not in self.answer_of:
            self.unknown.append(req.text)
            return ""
        step = self.steps_of[key][0]
        w, h = self.size[step.image_path]
        if req.text != upstream_prompt(step.instruction, w, h):
            self.bad_prompt.append(req.text)
        self.asked.append(step.uid)
        return self.answer_of[key]


@pytest.fixture(autouse=True)
def _api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_gpt4o_mini_upstream_b_equals_the_authors_script(
    placeholder_root: Path, tmp_path: Path
) -> None:
    ds = load_dataset(placeholder_root)
    script = Script(ds)
    # the mix is varied: every kind of answer is served for some click step
    assert set(script.kind_of.values()) == set(KINDS)

    per_file, overall, failures = upstream_main(
        placeholder_root / "Annotations", placeholder_root, script.by_uid
    )
    port_asked = sum(len(r["steps"]) for rs, _, _ in per_file.values() for r in rs)

    out = tmp_path / "gpt"
    with OpenAITestServer(answer=script.answer, usage=(1000, 8)) as srv:
        code = main(
            [
                "eval",
                "--data",
                str(placeholder_root),
                "--out",
                str(out),
                "--model",
                "gpt-4o-mini",
                "--protocol",
                "upstream-b",
                "--base-url",
                srv.base_url,
                "--no-progress",
                "--bootstrap",
                "50",
            ]
        )
        requests = list(srv.requests)
        n_requests = srv.request_count
    assert code == 0
    assert not script.unknown
    assert not script.bad_prompt  # the script's exact prompt text
    # the script's request: one user message, text then image (PNG, detail high), temperature 0
    for r in requests:
        assert r.model == "gpt-4o-mini" and r.system is None
        (msg,) = r.body["messages"]
        assert msg["role"] == "user"
        assert [p["type"] for p in msg["content"]] == ["text", "image_url"]
        assert msg["content"][1]["image_url"]["detail"] == "high"
        assert r.image is not None and r.image.mime == "image/png"
        assert r.body["temperature"] == 0.0
    # the same steps are asked
    assert n_requests == port_asked

    info = json.loads((out / "run.json").read_text())
    assert info["prompt_style"] == "upstream" and info["protocol"] == "upstream-b"
    for app, (results, metrics, _stats) in per_file.items():
        ours = json.loads((out / app / "task_results.json").read_text())
        assert len(ours) == len(results)
        for theirs, mine in zip(results, ours, strict=True):
            where = mine["task_id"]
            assert bool(mine["completed"]) == bool(theirs["completed"]), where
            assert mine["correct_steps"] == theirs["correct_steps"], where
            assert mine["num_steps"] == theirs["num_steps"], where
            assert mine["weighted_prefix_score"] == pytest.approx(
                theirs["weighted_prefix_score"]
            ), where
            asked = [s for s in mine["steps"] if s["outcome"] in ("hit", "miss")]
            assert [int(bool(s["hit"])) for s in asked] == [s["hit"] for s in theirs["steps"]]
            assert [s["failure_type"] for s in asked] == [
                s["failure_type"] for s in theirs["steps"]
            ], where
        app_m = json.loads((out / app / "task_metrics.json").read_text())
        for k, v in metrics.items():
            assert app_m[k] == pytest.approx(v), (app, k)

    ours_overall = json.loads((out / "overall_dataset_metrics.json").read_text())
    for k in (
        "task_completion_accuracy",
        "step1_accuracy",
        "step_hit_rate",
        "avg_weighted_prefix_score",
        "avg_correct_prefix",
    ):
        assert ours_overall[k] == pytest.approx(overall[k]), k
    # hits and misses of every kind happened
    assert 0 < overall["task_completion_accuracy"] < 1
    ours_fail = json.loads((out / "overall_failure_statistics.json").read_text())
    assert ours_fail["failure_type_histogram"] == failures["failure_type_histogram"]
    assert ours_fail["failure_by_difficulty"] == failures["failure_by_difficulty"]
    # A difference in `total_failed_tasks` (not one of the five metrics): the script's is the
    # sum of its histogram, so a task with no click step (never completed, nothing logged:
    # DICOMscope task 19) is not counted; medspot counts every task not completed.
    no_click = [
        t.uid for t in ds.tasks() if not any(a.type == "click" for s in t.steps for a in s.actions)
    ]
    assert no_click == ["DICOMscope/19"]
    assert ours_fail["total_failed_tasks"] == failures["total_failed_tasks"] + 1


def test_port_reads_answers_as_the_script_does() -> None:
    # the port itself, on hand-checked strings (pattern order decides)
    assert extract_pixel_point("(12, 34)") == (12.0, 34.0)
    assert extract_pixel_point("X=5; Y=6") == (5.0, 6.0)
    assert extract_pixel_point("located at 340, 120") == (340.0, 120.0)
    assert extract_pixel_point("(-5, 300)") == (5.0, 300.0)  # the minus is lost
    assert extract_pixel_point('{"x": 1, "y": 2}') is None
    assert extract_pixel_point("no numbers") is None
    # a 14 px patch: 7 px around the point, edges included
    box = [100.0, 100.0, 120.0, 110.0]
    assert evaluate_step((1000, 800), "(127, 105)", box)[0] is True
    assert evaluate_step((1000, 800), "(127.5, 105)", box)[0] is False
    assert evaluate_step((1000, 800), "(1001, 105)", box)[1] == "no_prediction"
