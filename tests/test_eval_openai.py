"""`medspot eval` end to end through the real `openai` client against the scripted test server,
on the real annotations with placeholder screenshots.

The server answers per screenshot: a request is mapped back to its step(s) by the sha256 of the
image bytes it received plus the prompt text (the placeholders of different image files differ
in bytes, but GingkoCadx re-uses one screenshot for several steps, so the instruction in the
prompt tells those apart). Scripted rule: every step hits except the step at position 2 of the
tasks whose index is even. The expected metrics are worked out below from the dataset with a
plain point-in-box test, independently of medspot's scoring code.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from _builders import run_eval
from medspot.cli import main
from medspot.dataset.loading import load_dataset
from medspot.dataset.records import Dataset, Step, Task
from medspot.testing.openai_server import Fault, OpenAITestServer, SeenRequest

pytest.importorskip("openai")

KEY = "sk-test-evalopenai-4f9a0c2e7d"
HARNESS = (
    "\nGive the single point to click for this instruction as (x, y), with x and y integers "
    "from 0 (left/top edge) to 1000 (right/bottom edge) of the image. Reply with (x, y) only."
)
ALPHA = 0.8
Box4 = tuple[float, float, float, float]  # normalised x1, y1, x2, y2
Key = tuple[str, str]  # (sha256 of the screenshot's bytes, instruction)


# -- the script -----------------------------------------------------------------------------------
def _boxes(step: Step) -> list[Box4]:
    # from the percent boxes as written in the file: [x, y, w, h] -> corners
    out = []
    for a in step.actions:
        x, y, w, h = a.bbox_percent
        out.append((x / 100, y / 100, (x + w) / 100, (y + h) / 100))
    return out


def _inside(p: tuple[float, float], b: Box4) -> bool:
    return b[0] <= p[0] <= b[2] and b[1] <= p[1] <= b[3]


def scripted_miss(step: Step) -> bool:
    return step.position == 2 and step.task_index % 2 == 0


@dataclass
class Script:
    """Per (screenshot bytes, instruction): the rel1000 answer the server gives."""

    ds: Dataset
    steps_of: dict[Key, list[Step]] = field(default_factory=dict)
    key_of: dict[str, Key] = field(default_factory=dict)  # step uid -> key
    answer_of: dict[Key, str] = field(default_factory=dict)
    point_of: dict[Key, tuple[float, float] | None] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # requests the script could not place

    @classmethod
    def build(cls, ds: Dataset) -> Script:
        s = cls(ds)
        sha: dict[str, str] = {}
        for step in ds.steps():
            if step.image_path not in sha:
                sha[step.image_path] = hashlib.sha256(
                    (ds.root / step.image_path).read_bytes()
                ).hexdigest()
            key = (sha[step.image_path], step.instruction)
            s.steps_of.setdefault(key, []).append(step)
            s.key_of[step.uid] = key
        for key, steps in s.steps_of.items():
            s.point_of[key], s.answer_of[key] = s._answer(steps)
        return s

    def _answer(self, steps: list[Step]) -> tuple[tuple[float, float] | None, str]:
        first_boxes = [b[0] for b in map(_boxes, steps) if b]
        if not first_boxes:  # unannotated: never asked
            return None, "(500, 500)"
        if any(scripted_miss(s) for s in steps):
            s0 = steps[0]
            if s0.task_index % 4 == 0:
                return None, "I cannot find that element on this screen."
            every = [b for st in steps for b in _boxes(st)]
            for cand in ((0.02, 0.98), (0.98, 0.98), (0.98, 0.02), (0.5, 0.5), (0.02, 0.02)):
                if not any(_inside(cand, b) for b in every):
                    x, y = round(cand[0] * 1000), round(cand[1] * 1000)
                    return (x / 1000, y / 1000), f"({x}, {y})"
            raise AssertionError(f"no missing point for {s0.uid}")
        # a hit: the centre of the intersection of the first boxes of every step with this key
        x1 = max(b[0] for b in first_boxes)
        y1 = max(b[1] for b in first_boxes)
        x2 = min(b[2] for b in first_boxes)
        y2 = min(b[3] for b in first_boxes)
        assert x1 < x2 and y1 < y2, f"steps {[s.uid for s in steps]} share no target area"
        cx, cy = (x1 + x2) / 2 * 1000, (y1 + y2) / 2 * 1000
        return (cx / 1000, cy / 1000), f"({cx:.4f}, {cy:.4f})"

    def key_of_request(self, req: SeenRequest) -> Key | None:
        if req.image is None or not req.text.endswith(HARNESS):
            return None
        key = (req.image.sha256, req.text[: -len(HARNESS)])
        return key if key in self.steps_of else None

    def steps_for(self, req: SeenRequest) -> list[Step]:
        key = self.key_of_request(req)
        return self.steps_of[key] if key is not None else []

    def answer(self, req: SeenRequest) -> str:
        key = self.key_of_request(req)
        if key is None:
            self.unknown.append(req.text[:80])
            return "no idea"
        return self.answer_of[key]

    # -- expected numbers, by hand ----------------------------------------------------------------
    def hit(self, step: Step) -> bool:
        p = self.point_of[self.key_of[step.uid]]
        return p is not None and any(_inside(p, b) for b in _boxes(step))


@dataclass(frozen=True)
class Expected:
    tasks: int
    tca: float
    s1a: float
    shr: float
    wps: float
    calls: int
    completed: dict[str, bool]


def expected(script: Script, tasks: Iterable[Task]) -> Expected:
    """medspot-v1 by hand: evaluable = annotated steps, a task stops at its first miss."""
    n_tasks = done = s1 = k_sum = n_sum = calls = 0
    wps = 0.0
    completed: dict[str, bool] = {}
    for t in tasks:
        ev = [s for s in t.steps if s.actions]
        if not ev:
            continue
        hits = [script.hit(s) for s in ev]
        assert hits == [not scripted_miss(s) for s in ev]  # the script does what it says
        k = hits.index(False) if False in hits else len(ev)
        n_tasks += 1
        done += k == len(ev)
        s1 += hits[0]
        k_sum += k
        n_sum += len(ev)
        wps += sum(ALPHA**i for i in range(k))
        calls += k + (1 if k < len(ev) else 0)
        completed[t.uid] = k == len(ev)
    return Expected(
        n_tasks, done / n_tasks, s1 / n_tasks, k_sum / n_sum, wps / n_tasks, calls, completed
    )


# -- running the CLI ------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def _api_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def script(placeholder_root: Path) -> Script:
    return Script.build(load_dataset(placeholder_root))


def _eval(root: Path, out: Path, srv: OpenAITestServer, *extra: str) -> int:
    model = ("--model", "openai:scripted", "--convention", "rel1000", "--base-url", srv.base_url)
    return run_eval(root, out, *model, *extra, bootstrap=50)


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _journal(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]


def _completed(out: Path, apps: Iterable[str]) -> dict[str, bool]:
    got = {}
    for app in apps:
        for t in _json(out / app / "task_results.json"):
            if t["status"] == "scored":
                got[t["task_id"]] = bool(t["completed"])
    return got


def _check_metrics(m: dict[str, Any], exp: Expected) -> None:
    assert m["num_tasks"] == exp.tasks
    assert m["task_completion_accuracy"] == pytest.approx(exp.tca)
    assert m["step1_accuracy"] == pytest.approx(exp.s1a)
    assert m["step_hit_rate"] == pytest.approx(exp.shr)
    assert m["avg_weighted_prefix_score"] == pytest.approx(exp.wps)


def test_full_eval_metrics_and_concurrency(
    placeholder_root: Path, script: Script, tmp_path: Path
) -> None:
    n = 8
    gate = threading.Barrier(n, timeout=30)
    broken: list[int] = []

    def answer(req: SeenRequest) -> str:
        if req.index <= n:  # the first n requests are answered only once n are inside at once
            try:
                gate.wait()
            except threading.BrokenBarrierError:
                broken.append(req.index)
        return script.answer(req)

    out = tmp_path / "full"
    with OpenAITestServer(answer=answer, usage=(1000, 5)) as srv:
        code = _eval(placeholder_root, out, srv, "--concurrency", str(n))
        assert srv.max_in_flight == n
        requests = srv.request_count
        models = {r.model for r in srv.requests}
        auth = {r.headers.get("authorization") for r in srv.requests}
    assert code == 0
    assert not broken and not script.unknown
    assert models == {"scripted"} and auth == {f"Bearer {KEY}"}
    exp = expected(script, script.ds.tasks())
    # 216 tasks, all with an annotated step; the scripted misses end the 104 even-index tasks
    # that have an annotated step at position 2 (two of them at their first evaluable step)
    assert exp.tasks == 216
    assert sum(not c for c in exp.completed.values()) == 104
    assert exp.s1a == pytest.approx(214 / 216)
    info = _json(out / "run.json")
    assert info["status"] == "complete" and info["model"] == "openai:scripted"
    assert KEY not in (out / "run.json").read_text()
    assert requests == exp.calls == info["calls"] == len(_journal(out))
    _check_metrics(_json(out / "overall_dataset_metrics.json"), exp)
    assert _completed(out, script.ds.app_names) == exp.completed
    for app in script.ds.app_names:
        app_tasks = [t for t in script.ds.tasks() if t.app == app]
        _check_metrics(_json(out / app / "task_metrics.json"), expected(script, app_tasks))


def _failing_task(script: Script, app: str) -> Task:
    """An odd-index task (all hits) of `app` with at least two annotated steps."""
    for t in script.ds.tasks():
        if t.app == app and t.index % 2 == 1 and sum(1 for s in t.steps if s.actions) >= 2:
            return t
    raise AssertionError(f"no task to break in {app}")


def test_failed_step_is_an_error_and_resume_completes_it(
    placeholder_root: Path, script: Script, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    apps = ("Orthanc", "Weasis")
    ds_tasks = [t for t in script.ds.tasks() if t.app in apps]
    bad_task = _failing_task(script, "Orthanc")
    bad_step = next(s for s in bad_task.steps if s.actions)
    bad_key = script.key_of[bad_step.uid]
    assert len(script.steps_of[bad_key]) == 1

    def is_bad(req: SeenRequest) -> bool:
        return script.key_of_request(req) == bad_key

    out = tmp_path / "err"
    args = ("--apps", ",".join(apps), "--max-retries", "1", "--concurrency", "4")
    with OpenAITestServer(answer=script.answer, faults=[Fault("500", when=is_bad)]) as srv:
        code = _eval(placeholder_root, out, srv, *args)
        first_uids = [s.uid for r in srv.requests for s in script.steps_for(r)]
        statuses = srv.status_counts
    assert code == 1
    assert "incomplete" in capsys.readouterr().err
    assert statuses.get(500) == 2  # the call and its one retry
    assert first_uids.count(bad_step.uid) == 2
    info = _json(out / "run.json")
    assert info["status"] == "incomplete" and info["errors"] == 1
    errors = [r for r in _journal(out) if r.get("error")]
    assert [r["step"] for r in errors] == [bad_step.uid]
    # the metrics leave the errored task out
    others = [t for t in ds_tasks if t.uid != bad_task.uid]
    m = _json(out / "overall_dataset_metrics.json")
    assert m["complete"] is False and m["num_errored_tasks"] == 1
    _check_metrics(m, expected(script, others))
    assert bad_step.uid in m["missing_steps"]

    # a healthy server: only the errored task is asked, from its failed step on
    with OpenAITestServer(answer=script.answer) as srv2:
        code2 = _eval(placeholder_root, out, srv2, *args)
        second = [s.uid for r in srv2.requests for s in script.steps_for(r)]
    assert code2 == 0
    assert sorted(second) == sorted(s.uid for s in bad_task.steps if s.actions)
    info2 = _json(out / "run.json")
    assert info2["status"] == "complete"
    m2 = _json(out / "overall_dataset_metrics.json")
    assert m2["complete"] is True
    _check_metrics(m2, expected(script, ds_tasks))
    # every step answered once, apart from the errored record kept in the journal
    answered = [r["step"] for r in _journal(out) if not r.get("error")]
    assert len(answered) == len(set(answered)) == expected(script, ds_tasks).calls


def test_max_cost_stops_and_a_higher_budget_finishes(
    placeholder_root: Path, script: Script, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"scripted": {"input": 1.0, "output": 0.0}}}))
    apps = ("Orthanc", "Bluelight")
    exp = expected(script, [t for t in script.ds.tasks() if t.app in apps])
    out = tmp_path / "budget"
    common = ("--apps", ",".join(apps), "--price-file", str(prices), "--concurrency", "1")
    # 1000 input tokens at $1 per 1M: $0.001 a call. Under a cap of $0.0045 the run makes
    # calls while it has spent less than the cap: 5 calls ($0.005), then stops.
    with OpenAITestServer(answer=script.answer, usage=(1000, 3)) as srv:
        code = _eval(placeholder_root, out, srv, *common, "--max-cost", "0.0045")
        first = srv.request_count
    assert code == 3
    assert "--max-cost" in capsys.readouterr().err
    assert first == 5
    info = _json(out / "run.json")
    assert info["status"] == "budget_reached"
    assert info["cost_usd"] == pytest.approx(0.005)
    with OpenAITestServer(answer=script.answer, usage=(1000, 3)) as srv2:
        code2 = _eval(placeholder_root, out, srv2, *common, "--max-cost", "1")
        second = srv2.request_count
    assert code2 == 0
    assert first + second == exp.calls
    info2 = _json(out / "run.json")
    assert info2["status"] == "complete" and info2["calls"] == exp.calls
    assert info2["cost_usd"] == pytest.approx(exp.calls * 0.001)
    steps = [r["step"] for r in _journal(out)]
    assert len(steps) == len(set(steps))
    _check_metrics(_json(out / "overall_dataset_metrics.json"), exp)


def _image_tiles(w: int, h: int) -> int:
    """OpenAI's high-detail rule by hand: fit in 2048x2048, short side to 768, 512-px tiles."""
    s = min(1.0, 2048 / max(w, h))
    w2, h2 = w * s, h * s
    s = min(1.0, 768 / min(w2, h2))
    return math.ceil(w2 * s / 512) * math.ceil(h2 * s / 512)


def test_dry_run_prints_plan_and_cost_and_calls_nothing(
    placeholder_root: Path, script: Script, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from medspot.adapters.backends.pricing import TYPICAL_OUTPUT_TOKENS, TYPICAL_TEXT_TOKENS
    from medspot.testing import DEFAULT_SIZES

    out = tmp_path / "dry"
    with OpenAITestServer(answer=script.answer) as srv:
        code = main(
            [
                "eval",
                "--data",
                str(placeholder_root),
                "--out",
                str(out),
                "--model",
                "gpt-4o-mini",
                "--base-url",
                srv.base_url,
                "--dry-run",
            ]
        )
        assert srv.request_count == 0
    assert code == 0
    text = capsys.readouterr().out
    annotated = sum(1 for s in script.ds.steps() if s.actions)
    assert annotated == 603
    assert "calls certain now: 216; at most: 603" in text
    # every placeholder size is 6 tiles: 1920x1080 -> 1365x768 (3x2); 1280x800 -> 1229x768;
    # 2560x1440 -> 2048x1152 -> 1365x768; 1366x768 as is
    assert {_image_tiles(w, h) for w, h in DEFAULT_SIZES} == {6}
    # gpt-4o-mini: $0.15 / $0.60 per 1M; image tokens 2833 + 5667 per tile
    per_call = ((TYPICAL_TEXT_TOKENS + 2833 + 6 * 5667) * 0.15 + TYPICAL_OUTPUT_TOKENS * 0.60) / 1e6
    assert f"${603 * per_call:.4f}" in text
    assert not (out / "predictions.jsonl").exists() or not (out / "predictions.jsonl").read_text()

    # a generic model priced by a price file (default image rule: 85 + 170 per tile)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {"scripted": {"input": 1.0, "output": 0.0}}}))
    with OpenAITestServer(answer=script.answer) as srv:
        code = _eval(placeholder_root, out, srv, "--price-file", str(prices), "--dry-run")
        assert srv.request_count == 0
    assert code == 0
    text = capsys.readouterr().out
    # (120 typical text tokens + 85 + 6 * 170) tokens at $1 per 1M = $0.001225 a call
    assert "calls certain now: 216; at most: 603" in text
    assert f"${603 * (TYPICAL_TEXT_TOKENS + 85 + 6 * 170) / 1e6:.4f}" in text


# -- abs_resized: qwen2.5-vl-7b over the openai backend ------------------------------------------
def _colour(i: int) -> tuple[int, int, int]:
    return (40 + (i * 37) % 200, 40 + (i * 91) % 200, 40 + (i // 5 * 53) % 200)


def _solid_root(
    tmp: Path, annotations: Path, apps: tuple[str, ...]
) -> tuple[Path, dict[tuple[int, int, int], str]]:
    """A dataset root whose screenshots are flat colours, one per image file, at the
    placeholder size of their app: the colour survives resizing, the bytes do not."""
    from PIL import Image

    from medspot.testing import size_for_app

    root = tmp / "solid"
    (root / "Annotations").mkdir(parents=True)
    for app in apps:
        name = f"{app}_Annotation.json"
        (root / "Annotations" / name).write_bytes((annotations / name).read_bytes())
    ds = load_dataset(root, check_images=False)
    colours: dict[tuple[int, int, int], str] = {}
    for step in ds.steps():
        if step.image_path in colours.values():
            continue
        c = _colour(len(colours))
        assert c not in colours
        colours[c] = step.image_path
        path = root / step.image_path
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", size_for_app(step.app), c).save(path, compress_level=1)
    return root, colours


def _decoded(req: SeenRequest) -> Any:
    from PIL import Image

    for m in req.body["messages"]:
        for part in m["content"] if isinstance(m["content"], list) else []:
            if part.get("type") == "image_url":
                data = part["image_url"]["url"].split(",", 1)[1]
                return Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")
    raise AssertionError("no image in the request")


def test_abs_resized_sends_smart_resized_frame_and_maps_back(
    annotations_dir: Path, tmp_path: Path
) -> None:
    apps = ("Orthanc", "Bluelight")
    root, colours = _solid_root(tmp_path, annotations_dir, apps)
    ds = load_dataset(root)
    # qwen-vl-utils defaults (factor 28, 3136..12845056 px), neither bound is reached:
    # Orthanc 1920x1080 -> round(68.57)*28 x round(38.57)*28 = 1932x1092;
    # Bluelight 1366x768 -> round(48.79)*28 x round(27.43)*28 = 1372x756.
    want_size = {"Orthanc": (1932, 1092), "Bluelight": (1372, 756)}
    seen: list[tuple[str, tuple[int, int]]] = []
    sent_point: dict[str, tuple[int, int, int, int]] = {}  # step -> x, y, width, height sent
    unknown: list[str] = []

    def find(req: SeenRequest) -> Step | None:
        im = _decoded(req)
        c = im.getpixel((im.width // 2, im.height // 2))
        nearest = min(colours, key=lambda k: sum((a - b) ** 2 for a, b in zip(k, c, strict=True)))
        rel = colours[nearest]
        m = re.fullmatch(
            r'Locate the UI element to click for the instruction "(.*)", output its bbox '
            r"coordinates in JSON format\.",
            req.text,
            re.DOTALL,
        )
        if m is None:
            return None
        for s in ds.steps():
            if s.image_path == rel and s.instruction == m[1] and s.actions:
                return s
        return None

    def answer(req: SeenRequest) -> str:
        step = find(req)
        if step is None or req.image is None:
            unknown.append(req.text)
            return "[]"
        w, h = req.image.size
        seen.append((step.uid, (w, h)))
        x, y, bw, bh = step.actions[0].bbox_percent
        cx, cy = round((x + bw / 2) / 100 * w), round((y + bh / 2) / 100 * h)
        sent_point[step.uid] = (cx, cy, w, h)
        return f'```json\n[\n\t{{"point_2d": [{cx}, {cy}], "label": "target"}}\n]\n```'

    out = tmp_path / "qwen"
    with OpenAITestServer(answer=answer) as srv:
        code = main(
            [
                "eval",
                "--data",
                str(root),
                "--out",
                str(out),
                "--model",
                "qwen2.5-vl-7b",
                "--backend",
                "openai",
                "--base-url",
                srv.base_url,
                "--no-progress",
                "--bootstrap",
                "50",
            ]
        )
        models = {r.model for r in srv.requests}
    journal = _journal(out)
    retried = {r["step"] for r in journal if r["retries"]}
    assert code == 0 and not unknown, (code, unknown, [r for r in journal if r["error"]])
    assert models == {"Qwen/Qwen2.5-VL-7B-Instruct"}
    for uid, size in seen:
        assert size == want_size[uid.split("/")[0]], uid
    # every annotated step asked once (more only where the runner retried a failed call)
    asked = [uid for uid, _ in seen]
    assert set(asked) == {s.uid for s in ds.steps() if s.actions}
    assert all(asked.count(u) == 1 or u in retried for u in asked), (asked, retried)
    m = _json(out / "overall_dataset_metrics.json")
    assert m["task_completion_accuracy"] == 1.0 and m["step_hit_rate"] == 1.0
    for rec in journal:
        assert tuple(rec["sent_size"]) == want_size[rec["step"].split("/")[0]]
        # pixels of the sent frame divided by the sent size (not the original's)
        px, py, w, h = sent_point[rec["step"]]
        assert rec["point"] == pytest.approx([px / w, py / h], abs=1e-9)


def test_fault_predicate_matches_only_its_requests() -> None:
    # the `when` schedule of the test server, used above: a fault for matching requests only
    import openai

    def only_b(r: SeenRequest) -> bool:
        return "b" in r.text

    with OpenAITestServer(answer="(1, 1)", faults=[Fault("500", when=only_b)]) as srv:
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        ok = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}])
        assert srv.status_counts == {200: 1, 500: 1}
    assert ok.choices[0].message.content == "(1, 1)"
