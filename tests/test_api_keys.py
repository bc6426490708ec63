"""Which API key goes where (`medspot.adapters.keys`), through the real `openai` and `anthropic`
clients to the local test server, asserting on what the server received: a variable named by
`--api-key-env` is the only one read (unset: exit 2 naming it, before any folder is made or
request sent, on every path: `eval`, `check-model`, a guided card, the planner and grounder,
both computer-use agents); without one, the API's own variable goes to a custom server too (as
documented) and a placeholder when it is unset; run.json names the variable, never the key."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path
from typing import Any

import pytest
from _computer_use_support import drive, script

from medspot.adapters.keys import GIVEN, PLACEHOLDER, api_key
from medspot.adapters.options import AdapterOptions
from medspot.cli import main
from medspot.errors import AdapterUnavailable, ConfigError
from medspot.live.agents.factory import create_agent, create_planner_grounder
from medspot.testing.cu_script import ScriptedComputerUse
from medspot.testing.openai_server import OpenAITestServer

pytest.importorskip("openai")
pytest.importorskip("anthropic")

NAMED = "MEDSPOT_NAMED_KEY"
WRONG_OPENAI = "sk-wrong-openai-" + secrets.token_hex(8)
WRONG_ANTHROPIC = "sk-ant-wrong-" + secrets.token_hex(8)
RIGHT = "named-key-" + secrets.token_hex(8)


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both APIs' own variables set to keys that must not travel, the named one to the right
    key, NOPE_NOT_SET unset."""
    monkeypatch.setenv("OPENAI_API_KEY", WRONG_OPENAI)
    monkeypatch.setenv("ANTHROPIC_API_KEY", WRONG_ANTHROPIC)
    monkeypatch.setenv(NAMED, RIGHT)
    monkeypatch.delenv("NOPE_NOT_SET", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from medspot.synth.generate import generate

    root = tmp_path_factory.mktemp("suite")
    generate(root, tasks=2, seed=0, apps=1)
    return root


def _sent(srv: OpenAITestServer) -> list[str]:
    """The key of every request the server received (OpenAI's bearer, Anthropic's header)."""
    out = []
    for r in srv.requests:
        auth = r.headers.get("authorization") or ""
        out.append(auth.removeprefix("Bearer ") if auth else r.headers.get("x-api-key", ""))
    return out


def _argv(kind: str, srv: OpenAITestServer, data: Path, out: Path) -> list[str]:
    live = ["live", "run", "--env", "orthanc-explorer", "--out", str(out), "--no-progress"]
    card = ["--convention", "rel1000", "--base-url", srv.base_url]
    return {
        "eval": ["eval", "--data", str(data), "--model", "openai:test", *card, "--out",
                 str(out), "--no-progress"],
        "check-model": ["check-model", "openai:test", *card],
        "live guided card": [*live, "--model", "openai:test", *card],
        "planner and grounder": [*live, "--mode", "agent", "--planner", "openai:planner",
                                 "--grounder", "uground-v1-7b", "--base-url", srv.base_url],
        "openai-computer-use": [*live, "--mode", "agent", "--model", "openai-computer-use",
                                "--base-url", srv.base_url],
        "anthropic-computer-use": [*live, "--mode", "agent", "--model",
                                   "anthropic-computer-use", "--base-url", srv.root_url],
    }[kind]  # fmt: skip


PATHS = ["eval", "check-model", "live guided card", "planner and grounder",
         "openai-computer-use", "anthropic-computer-use"]  # fmt: skip


@pytest.mark.parametrize("kind", PATHS)
def test_a_named_variable_that_is_unset_is_refused_before_anything(
    kind: str, keys: None, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with OpenAITestServer() as srv:
        code = main([*_argv(kind, srv, suite, out), "--api-key-env", "NOPE_NOT_SET"])
        assert srv.request_count == 0  # nothing was sent anywhere
    err = capsys.readouterr().err
    assert code == 2, err
    assert "--api-key-env NOPE_NOT_SET" in err and "NOPE_NOT_SET is not set" in err
    assert "set OPENAI_API_KEY" not in err and "Traceback" not in err
    assert not out.exists()  # no folder, no lock


def test_eval_sends_only_the_named_key_and_records_the_variable(
    keys: None, suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    with OpenAITestServer() as srv:
        code = main([*_argv("eval", srv, suite, out), "--api-key-env", NAMED])
        sent = _sent(srv)
    assert code == 0, capsys.readouterr().err
    assert sent and set(sent) == {RIGHT}
    info = json.loads((out / "run.json").read_text())
    assert info["adapter"]["api_key_env"] == NAMED
    for f in out.rglob("*"):
        if f.is_file():
            assert RIGHT.encode() not in f.read_bytes(), f


def test_without_a_named_variable_the_apis_own_key_goes_to_a_custom_server(
    keys: None, suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented default: `$OPENAI_API_KEY` is sent to any `--base-url` when no
    `--api-key-env` is given; unset, a placeholder is."""
    with OpenAITestServer() as srv:
        assert main(_argv("eval", srv, suite, tmp_path / "default")) == 0
        monkeypatch.delenv("OPENAI_API_KEY")
        assert main(_argv("eval", srv, suite, tmp_path / "none")) == 0
        sent = _sent(srv)
    n = len(sent) // 2
    assert set(sent[:n]) == {WRONG_OPENAI} and set(sent[n:]) == {PLACEHOLDER}
    default = json.loads((tmp_path / "default" / "run.json").read_text())["adapter"]
    assert default["api_key_env"] == "OPENAI_API_KEY"
    assert (
        json.loads((tmp_path / "none" / "run.json").read_text())["adapter"]["api_key_env"] is None
    )


def test_check_model_sends_only_the_named_key(
    keys: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with OpenAITestServer() as srv:
        main([*_argv("check-model", srv, Path(), Path()), "--api-key-env", NAMED])
        sent = _sent(srv)
    assert sent and set(sent) == {RIGHT}, capsys.readouterr().err


@pytest.mark.parametrize("named", [True, False], ids=["named", "default"])
@pytest.mark.parametrize("model", ["openai-computer-use", "anthropic-computer-use"])
def test_computer_use_agents_send_only_the_named_key(
    model: str, named: bool, keys: None, tmp_path: Path
) -> None:
    """With --api-key-env, its variable's key only; without, the API's own variable's key,
    also to this custom server (the documented default)."""
    own = "OPENAI_API_KEY" if model.startswith("openai") else "ANTHROPIC_API_KEY"
    default = WRONG_OPENAI if own == "OPENAI_API_KEY" else WRONG_ANTHROPIC
    expected = RIGHT if named else default
    turns: list[dict[str, Any]] = [
        {"actions": [{"type": "click", "button": "left", "x": 5, "y": 6}],
         "tool_uses": [{"input": {"action": "left_click", "coordinate": [5, 6]}}]},
        {"text": "done"},
    ]  # fmt: skip
    with OpenAITestServer(responder=ScriptedComputerUse(script(turns))) as srv:
        url = srv.base_url if model.startswith("openai") else srv.root_url
        opts = AdapterOptions.from_mapping(
            {"base_urls": [url], **({"api_key_env": NAMED} if named else {})}
        )
        agent = create_agent(model, options=opts, mode="agent", max_retries=0)
        assert agent.describe()["api_key_env"] == (NAMED if named else own)

        async def go() -> None:
            try:
                await drive(agent, tmp_path, max_turns=3)
            finally:
                await agent.aclose()

        asyncio.run(go())
        sent = _sent(srv)
    assert len(sent) == 2 and set(sent) == {expected}


def test_planner_and_grounder_take_the_named_key(keys: None) -> None:
    agent = create_planner_grounder(
        "openai:planner", "uground-v1-7b",
        options={"backend": "openai", "base_urls": ["http://127.0.0.1:9/v1"],
                 "api_key_env": NAMED},
    )  # fmt: skip
    described = agent.describe()
    assert described["planner"]["api_key_env"] == NAMED
    assert described["grounder"]["api_key_env"] == NAMED
    asyncio.run(agent.aclose())


def test_the_rule_in_one_place(keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def key(official: bool = False, **opts: Any) -> Any:
        needed_by = "the official API" if official else None
        return api_key(AdapterOptions.from_mapping(opts), default_env="OPENAI_API_KEY",
                       needed_by=needed_by)  # fmt: skip

    assert (key(api_key_env=NAMED).value, key(api_key_env=NAMED).source) == (RIGHT, NAMED)
    assert key().source == "OPENAI_API_KEY" and key().value == WRONG_OPENAI
    assert key(api_key="k").source == GIVEN and "k" not in repr(key(api_key="k"))
    with pytest.raises(ConfigError, match="not both"):
        key(api_key="k", api_key_env=NAMED)
    monkeypatch.setenv("EMPTY_ONE", "  ")
    with pytest.raises(ConfigError, match="EMPTY_ONE is empty"):
        key(api_key_env="EMPTY_ONE")
    with pytest.raises(ConfigError, match="NOPE_NOT_SET is not set"):
        key(api_key_env="NOPE_NOT_SET", official=True)  # never falls back to OPENAI_API_KEY
    monkeypatch.delenv("OPENAI_API_KEY")
    assert key().value == PLACEHOLDER and key().source is None
    with pytest.raises(AdapterUnavailable, match="set OPENAI_API_KEY"):
        key(official=True)
