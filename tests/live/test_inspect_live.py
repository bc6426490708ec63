"""`medspot/medspot_live` in Inspect on real Orthanc Explorer tasks: Inspect's scripted model
(`mockllm/model` with custom outputs: tool calls) acts through Inspect's ReAct agent on the
tools of `medspot live serve --mcp` (stdio, one server per sample, real Orthanc and chromium):
one task solved through the GUI (the oracle's clicks on the screens a served agent sees), one
ended in harm through the tools track (the wrong study deleted). The Inspect scores (success,
harm, the live columns) agree with the run folders the servers wrote, and the eval's metrics
with medspot's live metrics over those runs.

The model's part is scripted; everything else (Inspect's agent, its MCP client, the server,
the episode, the journal, the application) is real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _orthanc_support import CHROMIUM, require_orthanc_stack
from _runner_support import ENV, processes_of
from _serve_support import kill_leftovers, oracle_actions, rows, short_workroot

from medspot.live.core.actions import Click, LiveAction

pytestmark = pytest.mark.live
pytest.importorskip("mcp")
inspect_ai = pytest.importorskip("inspect_ai")

OPEN, DELETE = "open-study-ct-doe-john", "delete-study-ct-doe-john"


def _texts(message: Any) -> list[str]:
    from inspect_ai.model import ContentText

    c = message.content
    return [c] if isinstance(c, str) else [x.text for x in c if isinstance(x, ContentText)]


def scripted_model(oracle: dict[str, list[LiveAction]]) -> Any:
    """`mockllm/model` answering per sample: the oracle's clicks for OPEN; for DELETE the MR
    study (the wrong one) found and deleted with the tools."""
    from inspect_ai.model import ChatMessageTool, ModelOutput, ModelUsage, get_model

    def answer(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        first = next(m for m in messages if m.role == "user")
        goal = " ".join(_texts(first))
        done = [m for m in messages if isinstance(m, ChatMessageTool)]
        call: tuple[str, dict[str, Any]]
        if goal.startswith("Delete"):
            if not done:
                call = ("find_studies", {"patient_name": "DOE^JOHN", "modality": "MR"})
            else:
                found = json.loads(_texts(done[0])[0])["tool_result"]
                call = ("delete_study", {"study": found.splitlines()[1].split(":")[0][2:]})
        else:
            click = oracle[OPEN][len(done)]
            assert isinstance(click, Click)
            call = ("click", {"x": round(click.x), "y": round(click.y)})
        out = ModelOutput.for_tool_call("mockllm/model", call[0], call[1])
        out.usage = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)
        return out

    return get_model("mockllm/model", custom_outputs=answer)


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[LiveAction]]:
    require_orthanc_stack()
    return oracle_actions(tmp_path_factory.mktemp("oracle") / "run", [OPEN])


def test_the_inspect_agent_solves_and_harms_and_the_scores_are_the_run_folders(
    oracle: dict[str, list[LiveAction]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from inspect_ai import eval as inspect_eval

    from medspot.integrations.inspect.tasks import medspot_live
    from medspot.live.loop.livefolder import RunFolder, journal_state
    from medspot.live.loop.outcomes import live_metrics, task_results
    from medspot.runfolder.live_schema import LIVE_KEYS

    out = tmp_path / "runs"
    with short_workroot() as work:
        monkeypatch.setenv("TMPDIR", str(work))  # the servers' environments (a short path)
        try:
            task = medspot_live(env=ENV, tasks=f"{OPEN},{DELETE}", out=str(out),
                                tools="orthanc", env_options=[f"chromium={CHROMIUM}"])  # fmt: skip
            (log,) = inspect_eval(
                task, model=scripted_model(oracle), log_dir=str(tmp_path / "logs"),
                display="none", max_samples=1,
            )  # fmt: skip
        finally:
            kill_leftovers(None, work)
        assert not processes_of(work)  # every server and its application stopped
    assert log.status == "success", log.error
    samples = {str(s.id): s for s in log.samples or []}
    scores = {k: next(iter((s.scores or {}).values())) for k, s in samples.items()}
    values = {k: dict(sc.value) for k, sc in scores.items() if isinstance(sc.value, dict)}
    assert {k: sc.answer for k, sc in scores.items()} == {OPEN: "success", DELETE: "harmful"}
    assert values[OPEN]["success"] == 1.0 and values[DELETE]["harmful"] == 1.0

    # each sample's score is its run folder's row and metrics
    env_tasks = {}
    for task_id, sc in scores.items():
        meta = sc.metadata or {}
        run_dir = Path(meta["run_dir"])
        assert run_dir == (out / task_id).resolve()
        assert (samples[task_id].metadata or {})["run_dir"] == str(run_dir)
        (row,) = rows(run_dir).values()
        assert row["live_outcome"] == sc.answer and row["ending"] == meta["ending"] == "checks"
        written = json.loads((run_dir / "overall_dataset_metrics.json").read_text())
        for key, value in meta["run_metrics"].items():
            assert written[key] == value
        assert meta["success"] == (written["task_success_rate"] == 1.0)
        assert meta["harm"] == (written["harmful_failure_rate"] == 1.0)
        env_tasks[task_id] = run_dir
    assert (scores[OPEN].metadata or {})["steps_used"] == len(oracle[OPEN])

    # the eval's metrics are medspot's live metrics over the runs of both folders
    from medspot.live.envs.taskfiles import env_task_file

    file, _ = env_task_file(ENV, None)
    by_id = {t.id: t for t in file.tasks}
    results = [
        r
        for task_id, run_dir in env_tasks.items()
        for r in task_results([by_id[task_id]], journal_state(RunFolder(run_dir)), ENV)
    ]
    want = live_metrics(results, n_boot=0)
    assert log.results is not None
    (scored,) = log.results.scores
    got = {k: m.value for k, m in scored.metrics.items()}
    assert got["task_success_rate"] == 0.5 and got["harmful_failure_rate"] == 0.5
    assert set(got) == {k for k in LIVE_KEYS if want.get(k) is not None}
    for key, value in got.items():
        assert want[key] == pytest.approx(value, abs=1e-12), key
