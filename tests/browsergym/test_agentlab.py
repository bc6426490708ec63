"""AgentLab's generic agent runs a MedSPOT task end to end: an AgentLab experiment (`ExpArgs`
with `GenericAgentArgs`, `EnvArgs(task_name="medspot.orthanc-explorer.<task>")`) whose chat
model is AgentLab's OpenAI model pointed at the OpenAI-compatible test server (`OPENAI_BASE_URL`,
as at any OpenAI-compatible server), scripted to click, by its bid in the AXTree the agent's
prompt carries, the element the goal names; the experiment's result is medspot's success
(reward 1.0) in two steps, and a script that clicks the look-alike patient fails the task.

AgentLab is installed without its dependencies (they bring torch, ray, gradio and every
BrowserGym benchmark; the Makefile's `install-browsergym`); its step statistics count tokens with
tiktoken, whose tables are downloaded at first use: no network here, so this test counts words
instead (statistics only: the agent's prompt and actions are untouched)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from _bgym_support import bid_script, require_stack

from medspot.testing.openai_server import OpenAITestServer

pytestmark = pytest.mark.live

TASK = "open-study-ct-doe-john"  # the CT CHEST study of DOE^JOHN (MS0001)


def _run(tmp_path: Path, seed_cache: Path, patient: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    require_stack("orthanc-explorer")
    agentlab = pytest.importorskip("agentlab", reason="AgentLab (make install-browsergym)")
    del agentlab
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price list fetched
    import agentlab.experiments.loop as loop
    from agentlab.agents.generic_agent.agent_configs import FLAGS_GPT_4o
    from agentlab.agents.generic_agent.generic_agent import GenericAgentArgs
    from agentlab.llm.chat_api import OpenAIModelArgs

    import medspot.live.browsergym as mbg

    monkeypatch.setattr(loop, "count_tokens", lambda text, model="": len(str(text).split()))
    with OpenAITestServer(answer=bid_script(patient)) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        agent = GenericAgentArgs(
            chat_model_args=OpenAIModelArgs(
                model_name="medspot-scripted", max_total_tokens=None, max_input_tokens=None,
                max_new_tokens=200,
            ),
            flags=replace(FLAGS_GPT_4o, max_prompt_tokens=None),  # no tokenizer needed
        )  # fmt: skip
        env_args = loop.EnvArgs(
            task_name=mbg.task_name("orthanc-explorer", TASK), task_seed=0, max_steps=5,
            task_kwargs={"env_options": {"seed_cache": str(seed_cache)},
                         "workroot": str(tmp_path / "work")},
        )  # fmt: skip
        exp = loop.ExpArgs(agent_args=agent, env_args=env_args)
        exp.prepare(tmp_path / "agentlab")
        exp.run()
        assert srv.request_count >= 2
    return loop.get_exp_result(exp.exp_dir).summary_info


def test_agentlabs_generic_agent_solves_a_task_against_the_scripted_server(
    tmp_path: Path, seed_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = _run(tmp_path, seed_cache, "MS0001", monkeypatch)
    assert summary["err_msg"] is None, summary["stack_trace"]
    assert summary["cum_reward"] == 1.0 and summary["terminated"]
    assert summary["n_steps"] == 2


def test_the_look_alike_patient_does_not_solve_it(
    tmp_path: Path, seed_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = _run(tmp_path, seed_cache, "MS0002", monkeypatch)  # DOE^JOAN
    assert summary["err_msg"] is None, summary["stack_trace"]
    assert summary["cum_reward"] == 0.0
