"""The pure parts of the tools track and of `medspot live serve`: the servers' tool schemas and
how a call is read (their bounds), tool reachability of the packaged tasks, the toolset's
argument checks, `tool(name, {...})` in the text form, what prompted agents are told, the tool
invocation rate; and the MCP server's bad calls through the official client, in-process (no
environment is started: every call here fails before one would be)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from medspot.live.agents.answer_reader import parse_action
from medspot.live.agents.tools_prompt import tool_result_line, tools_prompt, with_tools
from medspot.live.core.actions import (
    Click,
    Done,
    Drag,
    Infeasible,
    Key,
    LiveAction,
    Scroll,
    ToolCall,
    TypeText,
    action_from_json,
    action_to_json,
    describe_action,
)
from medspot.live.core.executable import MAX_SCROLL_NOTCHES, MAX_TEXT_CHARS
from medspot.live.core.tools import ToolArgsError, check_tool_args, tool_reach
from medspot.live.envs.orthanc.tools import ORTHANC_TOOLS
from medspot.live.envs.registry import env_entry
from medspot.live.envs.taskfiles import env_task_file, select_tasks
from medspot.live.envs.toolsets import offered_tools, toolset_info
from medspot.live.loop.outcomes import live_metrics, task_results
from medspot.live.loop.steplog import JournalState, StepRecord, TaskRecord
from medspot.live.serve.tools import GUI_TOOLS, MAX_NAME_CHARS, parse_call, serve_tools

ENV = "orthanc-explorer"
TOOLS = serve_tools(ORTHANC_TOOLS)


STUDY = "-".join(["0123abcd"] * 5)  # an Orthanc ID (five groups of 8 hex digits)


@pytest.mark.parametrize(
    ("name", "args", "action"),
    [
        ("click", {"x": 3, "y": 4.5}, Click(3, 4.5)),
        ("double_click", {"x": 1, "y": 2}, Click(1, 2, double=True)),
        ("right_click", {"x": 1, "y": 2}, Click(1, 2, button="right")),
        ("drag", {"x1": 1, "y1": 2, "x2": 3, "y2": 4}, Drag(1, 2, 3, 4)),
        ("scroll", {"x": 5, "y": 6, "dy": -2}, Scroll(5, 6, -2)),
        ("type", {"text": "DOE^JOAN"}, TypeText("DOE^JOAN")),
        ("key", {"key": "ctrl+a"}, Key("Control+a")),
        ("done", {}, Done()),
        ("infeasible", {"reason": "no such study"}, Infeasible("no such study")),
        ("delete_study", {"study": STUDY}, ToolCall("delete_study", {"study": STUDY})),
        ("find_series", {"modality": "MR"}, ToolCall("find_series", {"modality": "MR"})),
    ],
)  # fmt: skip
def test_each_tool_is_one_action(name: str, args: dict[str, Any], action: Any) -> None:
    call = parse_call(name, args, TOOLS)
    assert call.kind == "action" and call.action == action and call.episode is None


@pytest.mark.parametrize(
    ("name", "args", "says"),
    [
        ("click", {"x": "left", "y": 1}, "click: x: Input should be a valid number"),
        ("click", {"x": 1}, "click: y: Field required"),
        ("click", {"x": 1, "y": 2, "button": "left"}, "click: button: Extra inputs"),
        ("scroll", {"x": 1, "y": 2, "dy": 1.5}, "scroll: dy: Input should be a valid integer"),
        ("type", {"text": 3}, "type: text: Input should be a valid string"),
        ("wait", {"seconds": 60}, "wait: seconds: Input should be less than or equal to 10"),
        ("start_task", {}, "start_task: task_id: Field required"),
        ("delete_study", {"study": ""}, "delete_study: study: String should match pattern"),
        ("delete_study", {"study": "ＡＢＣ"}, "delete_study: study: String should match pattern"),
        ("no_such_tool", {}, "unknown tool 'no_such_tool' (this server has: list_tasks,"),
        ("find_studies", {}, "unknown tool 'find_studies'"),  # no --tools: not offered
    ],
)  # fmt: skip
def test_a_bad_call_names_the_tool_and_the_field(
    name: str, args: dict[str, Any], says: str
) -> None:
    tools = GUI_TOOLS if name == "find_studies" else TOOLS
    with pytest.raises(ToolArgsError) as e:
        parse_call(name, args, tools)
    assert says in str(e.value)


def test_several_environments_need_the_episode_named() -> None:
    with pytest.raises(ToolArgsError, match="click: episode: required"):
        parse_call("click", {"x": 1, "y": 2}, TOOLS, episode_required=True)
    call = parse_call("click", {"x": 1, "y": 2, "episode": "e1"}, TOOLS, episode_required=True)
    assert call.episode == "e1" and call.raw == "click(x=1.0, y=2.0)"
    assert parse_call("start_task", {"task_id": "t"}, TOOLS, episode_required=True).task_id == "t"
    schema = next(t for t in TOOLS if t.name == "delete_study").schema(episode_required=True)
    assert schema["required"] == ["study", "episode"] and schema["additionalProperties"] is False
    assert "episode" not in next(t for t in TOOLS if t.name == "click").schema()["required"]


@pytest.mark.parametrize(
    ("name", "args", "says"),
    [
        ("type", {"text": "a" * (MAX_TEXT_CHARS + 1)},
         f"type: text: String should have at most {MAX_TEXT_CHARS} characters"),
        ("type", {"text": "a" * 2_000_000}, "type: text: String should have at most"),
        ("infeasible", {"reason": "r" * (MAX_TEXT_CHARS + 1)}, "infeasible: reason: String"),
        ("key", {"key": "a" * (MAX_NAME_CHARS + 1)}, "key: key: String should have at most"),
        ("start_task", {"task_id": "t" * (MAX_NAME_CHARS + 1)}, "start_task: task_id: String"),
        ("click", {"x": 1, "y": 2, "episode": "e" * (MAX_NAME_CHARS + 1)}, "click: episode:"),
        ("click", {"x": float("nan"), "y": 2}, "click: x: Input should be a finite number"),
        ("drag", {"x1": 1, "y1": float("inf"), "x2": 1, "y2": 2}, "drag: y1: Input should be"),
        ("type", {"text": "DOE\ud800"}, "type: text: not Unicode text (it holds a lone surrogate)"),
        ("find_studies", {"patient_name": "\udfff"}, "find_studies: patient_name: not Unicode"),
    ],
)  # fmt: skip
def test_what_no_file_could_hold_is_refused_at_the_schema(
    name: str, args: dict[str, Any], says: str
) -> None:
    """A call the schema refuses (and says so): a typed text or reason over the core's bound
    of one typed text, an over-long name, a number that is not finite, a string that is not
    Unicode; the bounds are in the schemas the client is shown."""
    with pytest.raises(ToolArgsError) as e:
        parse_call(name, args, TOOLS)
    assert says in str(e.value) and len(str(e.value)) < 200


def test_the_schemas_show_their_bounds_and_what_fits_is_an_action() -> None:
    schemas = {t.name: t.schema(episode_required=True) for t in TOOLS}
    assert schemas["type"]["properties"]["text"]["maxLength"] == MAX_TEXT_CHARS
    assert schemas["click"]["properties"]["episode"]["maxLength"] == MAX_NAME_CHARS
    # off the screen, a scroll of more notches than one action turns, a tool the task may
    # not be offered: all fit the schema; the episode judges them (scored no-action steps)
    for name, args, action in (
        ("click", {"x": 1e308, "y": -5}, Click(1e308, -5)),
        ("scroll", {"x": 1, "y": 1, "dy": MAX_SCROLL_NOTCHES * 10}, Scroll(1, 1, 1000)),
        ("type", {"text": "a" * MAX_TEXT_CHARS}, TypeText("a" * MAX_TEXT_CHARS)),
        ("key", {"key": " + "}, Key(" + ")),
    ):
        assert parse_call(name, args, TOOLS).action == action


def test_only_tasks_whose_end_state_the_api_reaches_are_offered_tools() -> None:
    tf, _ = env_task_file(ENV)
    kinds = env_entry(ENV).check_kinds
    reads = toolset_info(ENV, "orthanc").reads
    by_id = {t.id: t for t in tf.tasks}
    assert tool_reach(by_id["delete-study-ct-doe-john"], kinds, reads).reachable
    gui = tool_reach(by_id["open-study-ct-doe-john"], kinds, reads)
    assert not gui.reachable and gui.reason == "its success is read in the GUI: web.url_matches"
    req = tool_reach(by_id["delete-dialog-cancel-ct-doe-john"], kinds, reads)
    assert req.reason == "it requires GUI steps to happen: dialog"
    (task,) = select_tasks(tf, ["open-study-ct-doe-john"])
    assert offered_tools(ENV, None, task) == ((), None)
    tools, reach = offered_tools(ENV, "orthanc", by_id["delete-study-ct-doe-john"])
    assert reach is not None and reach.reachable and tools == ORTHANC_TOOLS


def test_a_toolset_is_offered_only_by_environments_that_have_it() -> None:
    from medspot.errors import ConfigError

    with pytest.raises(ConfigError, match="dicomscope offers no such toolset"):
        toolset_info("dicomscope", "orthanc")
    with pytest.raises(ConfigError, match="--tools pacs: orthanc-explorer offers no such"):
        toolset_info(ENV, "pacs")


def test_the_toolset_checks_its_arguments() -> None:
    ids = check_tool_args(ORTHANC_TOOLS, "read_tags", {"id": STUDY})
    assert ids.model_dump() == {"id": STUDY}
    with pytest.raises(ToolArgsError, match="tool read_tags: id: String should match pattern"):
        check_tool_args(ORTHANC_TOOLS, "read_tags", {"id": "x"})
    with pytest.raises(ToolArgsError, match="unknown tool 'drop_database'") as e:
        check_tool_args(ORTHANC_TOOLS, "drop_database", {})
    assert e.value.flag == "unknown_tool"
    with pytest.raises(ToolArgsError, match="tool find_studies: modality: Input should be"):
        check_tool_args(ORTHANC_TOOLS, "find_studies", {"modality": 3})


def test_the_text_form_writes_and_reads_tool_calls() -> None:
    call = ToolCall("find_studies", {"patient_name": "DOE^JOHN", "modality": "CT"})
    text = describe_action(call)
    assert text == 'tool(find_studies, {"modality": "CT", "patient_name": "DOE^JOHN"})'
    assert parse_action(text, (100, 100)).action == call
    assert action_from_json(action_to_json(call)) == call
    assert parse_action("tool(find_patients)", (100, 100)).action == ToolCall("find_patients", {})
    bad = parse_action("tool(delete_study, {study: x})", (100, 100))
    assert bad.action is None and bad.flags == ("bad_action_args",)


def test_prompted_agents_are_told_the_tools_and_their_results() -> None:
    assert with_tools("Delete it", ()) == "Delete it"
    text = tools_prompt(ORTHANC_TOOLS)
    assert 'tool(delete_study, {"study": string}): Delete a study' in text
    assert '"modality": string (optional)' in text
    assert tool_result_line(None) is None
    assert tool_result_line({"name": "find_studies", "text": "1 studies found"}) == (
        "Tool result (find_studies): 1 studies found"
    )
    assert tool_result_line({"error": "unknown tool 'x'"}) == "Tool error: unknown tool 'x'"


def _journal(tools: bool) -> JournalState:
    """Two tasks: one offered tools and solved with two tool calls, one GUI-only, clicked."""
    offered = [s.name for s in ORTHANC_TOOLS] if tools else None
    recs: list[Any] = []
    runs: list[tuple[str, list[LiveAction], list[str] | None]] = [
        (
            "delete-study-ct-doe-john",
            [ToolCall("find_studies", {}), ToolCall("delete_study", {"study": "s"})],
            offered,
        ),
        ("open-study-ct-doe-john", [Click(1, 2), Click(3, 4)], [] if tools else None),
    ]
    for task, actions, offer in runs:
        for n, a in enumerate(actions, 1):
            recs.append(StepRecord(task=task, env=ENV, attempt=1, n=n, executed=True,
                                   action=action_to_json(a)))  # fmt: skip
        recs.append(TaskRecord(task=task, env=ENV, attempt=1, outcome="success", steps_used=2,
                               oracle_steps=2, achieved=2, tools_offered=offer))  # fmt: skip
    return JournalState.from_records(recs)


def test_the_tool_invocation_rate_counts_the_tasks_offered_tools() -> None:
    tf, _ = env_task_file(ENV)
    tasks = select_tasks(tf, ["delete-study-ct-doe-john", "open-study-ct-doe-john"])
    m = live_metrics(task_results(tasks, _journal(True), ENV), n_boot=50)
    assert m["tool_invocation_rate"] == 1.0 and m["num_tools_offered"] == 1
    assert m["num_tool_calls"] == 2 and m["num_tool_invoked"] == 1
    assert set(m["by_tools"]) == {"tools offered", "gui-only"}
    gui = live_metrics(task_results(tasks, _journal(False), ENV), n_boot=50)
    assert gui["tool_invocation_rate"] is None and "by_tools" not in gui


def test_the_mcp_server_answers_bad_calls_with_tool_errors(tmp_path: Path) -> None:
    """Through the official client, in-process: every call below fails before an environment
    would start, with a tool error that says why; the server answers the next call."""
    mcp = pytest.importorskip("mcp")
    import anyio
    import mcp_types

    from medspot.live.loop.envspec import EnvSpec
    from medspot.live.serve.host import ServeOptions
    from medspot.live.serve.mcp_server import McpServe

    serve = McpServe(
        ServeOptions(
            spec=EnvSpec(ENV, tools="orthanc", task_ids=("open-study-ct-doe-john",)),
            out=tmp_path / "run",
        )
    )

    async def main() -> list[tuple[bool, str]]:
        await serve.host.open()
        me = mcp_types.Implementation(name="unit-agent", version="2")
        out = []
        try:
            async with mcp.Client(serve.server, client_info=me) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                assert names[:2] == ["list_tasks", "start_task"] and "delete_study" in names
                for name, args in (
                    ("click", {"x": 1, "y": 2}),
                    ("start_task", {"task_id": "nope"}),
                    ("drag", {"x1": 1}),
                    ("find_studies", {"episode": "nope"}),
                    ("list_tasks", {}),
                ):
                    res = await client.call_tool(name, args)
                    out.append((bool(res.is_error), str(res.content[0].text)))
        finally:
            await serve.host.close()
        return out

    got = anyio.run(main)
    assert [e for e, _ in got] == [True, True, True, True, False]
    assert got[0][1] == "no task started: call start_task(task_id) first (list_tasks)"
    assert got[1][1].startswith("unknown task 'nope': 1 tasks are offered")
    assert got[2][1] == "drag: y1: Field required"
    assert "no running episode 'nope'" in got[3][1]
    listed = json.loads(got[4][1])
    assert listed[0]["id"] == "open-study-ct-doe-john" and listed[0]["tools"] == []
    assert not (tmp_path / "run" / "run.json").exists()  # no episode: nothing recorded


@pytest.mark.parametrize(
    ("flag", "blocked", "extra"),
    [("--mcp", ("mcp", "mcp_types"), "medspot[mcp]"),
     ("--openenv", ("openenv",), "medspot[openenv]")],
)  # fmt: skip
def test_a_missing_extra_is_named(
    flag: str, blocked: tuple[str, ...], extra: str, tmp_path: Path
) -> None:
    """Without the server's package, `medspot live serve` says which extra to install (exit
    2) before it starts anything."""
    import os
    import subprocess
    import sys

    block = "; ".join(f"sys.modules[{m!r}] = None" for m in blocked)
    code = (f"import sys; {block}; from medspot.cli import main; "
            f"raise SystemExit(main(['live', 'serve', '--env', 'orthanc-explorer', '{flag}', "
            f"'--out', {str(tmp_path / 'run')!r}]))")  # fmt: skip
    src = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(src)), timeout=120)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"pip install '{extra}'" in done.stderr and "Traceback" not in done.stderr


def test_the_docs_state_the_servers_bounds() -> None:
    """docs/live.md's "MCP" and "OpenEnv" say the bounds the code holds."""
    from medspot.limits import MAX_IDLE_TIMEOUT_S, MAX_PORT, MIN_IDLE_TIMEOUT_S

    pytest.importorskip("openenv")
    from medspot.live.serve.openenv_models import MAX_ACTION_CHARS

    text = (Path(__file__).resolve().parents[2] / "docs" / "live.md").read_text(encoding="utf-8")
    section = " ".join(text[text.index("\n## MCP\n") : text.index("\n## Metrics\n")].split())
    for said in (
        f"more than {MAX_TEXT_CHARS:,} characters",
        f"key name of more than {MAX_NAME_CHARS}",
        f"at most {MAX_ACTION_CHARS:,} characters",
        f"else {MIN_IDLE_TIMEOUT_S:g} to {MAX_IDLE_TIMEOUT_S:g})",
        f"`--port` 1 to {MAX_PORT}",
    ):
        assert said in section, said


def test_an_episode_is_found_by_its_owner_only_and_its_ending_told_to_its_owner() -> None:
    from dataclasses import dataclass

    from medspot.live.serve.episodes import EpisodeBook, new_episode_id

    @dataclass
    class Run:
        id: str
        owner: str

    book: EpisodeBook[Run] = EpisodeBook(remember=2)
    mine, theirs = Run("e1", "session-a"), Run("e1", "session-b")  # one id, two owners
    book.add(mine)
    assert book.running("session-a", "e1") is mine
    assert book.running("session-b", "e1") is None and book.of("session-b") == []
    book.add(theirs)
    assert book.running("session-b", "e1") is theirs and len(book) == 2
    book.end(mine, "episode e1 was abandoned: no call for 600 s")
    assert book.ended("session-a", "e1") == "episode e1 was abandoned: no call for 600 s"
    assert book.ended("session-a") == book.ended("session-a", "e1")
    assert book.ended("session-b", "e1") is None and book.running("session-b", "e1") is theirs
    for i in range(3):  # a bounded memory: the oldest endings are forgotten
        book.end(Run(f"x{i}", "session-c"), f"x{i} ended")
    assert book.ended("session-a", "e1") is None and book.ended("session-c") == "x2 ended"
    ids = {new_episode_id("t", 1) for _ in range(100)}
    assert len(ids) == 100 and all(len(i.rsplit("-", 1)[1]) >= 16 for i in ids)
