"""Planner + grounder without an application: the planner's answers read into steps (elements
named in words), and `PlannerGrounderAgent` through two OpenAI test servers and the real openai
client: the grounder is asked with its own unchanged prompt (the element's description as the
instruction), a drag grounds both ends, later steps are grounded on the screens of their own
turns, a missing point or coordinates from the planner are a no-action, never a guess."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from _runner_support import live_request
from PIL import Image

from medspot.adapters.base import StepRequest
from medspot.adapters.card import PromptStyle
from medspot.adapters.cards import get_card
from medspot.adapters.cards.gui_grounders import UGROUND_TEMPLATE
from medspot.errors import ConfigError
from medspot.live.agents.factory import create_planner_grounder, grounder_options
from medspot.live.agents.formats.planner import PlanStep, read_plan
from medspot.live.agents.grounded import NO_POINT, PLANNED_EARLIER, PlannerGrounderAgent
from medspot.live.agents.turn import QUEUED, AgentAnswer, AgentTurn, PastTurn
from medspot.live.core.actions import Click, Done, Drag, Infeasible, Key, Scroll, TypeText
from medspot.live.core.contract import Observation
from medspot.live.core.tasks import LiveTask
from medspot.testing.openai_server import OpenAITestServer, SeenRequest

W, H = 1280, 800
GOAL = "On this chest CT, measure the distance between marker A and marker B"
TASK = LiveTask.model_validate({
    "id": "measure-ab", "instruction": GOAL,
    "steps": [{"instruction": "Select the Length tool", "target": {"css": "#length"}}],
    "success": [{"kind": "web.url_matches", "pattern": "#x"}],
})  # fmt: skip


@pytest.mark.parametrize(
    ("text", "steps", "flags"),
    [
        (
            'Thought: select the tool.\nAction: click(element="the Length button in the toolbar")',
            [PlanStep("click", "the Length button in the toolbar")],
            (),
        ),
        (
            'Thought: measure.\nAction: drag(start="marker A", end="marker B")',
            [PlanStep("drag", "marker A", "marker B")],
            (),
        ),
        (
            'Action: scroll(element="the study list", 3)',
            [PlanStep("scroll", "the study list", dy=3)],
            (),
        ),
        (
            'Action: double_click(element="the CT series thumbnail")',
            [PlanStep("double_click", "the CT series thumbnail")],
            (),
        ),
        (
            'Action: type("DOE^JOAN")\nclick(element="the Do lookup button")',
            [
                PlanStep("act", action=TypeText("DOE^JOAN")),
                PlanStep("click", "the Do lookup button"),
            ],
            ("several_actions",),
        ),
        ('Action: key("Enter")', [PlanStep("act", action=Key("Enter"))], ()),
        ("Action: done()", [PlanStep("act", action=Done())], ()),
        (
            'Action: infeasible("no such patient")',
            [PlanStep("act", action=Infeasible("no such patient"))],
            (),
        ),
        ("Action: click(512, 48)", [], ("bad_action_args",)),  # the planner does not point
        ('Action: drag(start="marker A")', [], ("bad_action_args",)),
        ("Click the Length button.", [], ("malformed_answer",)),
    ],
)
def test_planner_answers(text: str, steps: list[PlanStep], flags: tuple[str, ...]) -> None:
    r = read_plan(text)
    assert list(r.steps) == steps
    for f in flags:
        assert f in r.flags
    for s in r.steps:
        assert PlanStep.from_json(s.to_json()) == s


def test_planner_prompt_is_the_harness_one_on_the_cards_request_settings() -> None:
    req = StepRequest("e/t/1", "e/t", "s.png", Path("s.png"), (W, H), GOAL, history=("a",))
    for name in ("gpt-5", "ui-tars-1.5-7b", "aguvis-7b-720p", "openai:my-vlm"):
        spec = get_card(name).style(PromptStyle.PLANNER).build(req)
        assert spec.user_text.startswith("You are operating clinical imaging software")
        assert (
            'click(element="...")' in spec.user_text and f"Your task:\n{GOAL}\n" in spec.user_text
        )
        assert "Your earlier steps (oldest first):\n1. a" in spec.user_text
        assert spec.system is None and spec.generation_prompt is None and spec.stop == ()
    assert get_card("gpt-5").style(PromptStyle.PLANNER).build(req).api == "responses"


def _turn(tmp: Path, n: int, previous: tuple[PastTurn, ...] = ()) -> AgentTurn:
    path = tmp / f"s{n}.png"
    Image.new("RGB", (W, H), (20 * n, 30, 30)).save(path)

    async def oracle() -> None:
        return None

    return AgentTurn(
        env="ohif", task=TASK, step_index=0, n=n, observation=Observation(b"", W, H),
        screen_path=path, screen_rel=path.name, history=(), oracle=oracle, mode="agent",
        previous=previous,
    )  # fmt: skip


def _pair(planner_url: str, grounder_url: str) -> PlannerGrounderAgent:
    return create_planner_grounder(
        "gpt-4o-mini", "uground-v1-7b",
        options={"backend": "openai", "base_urls": [planner_url], "api_key": "test"},
        grounder_overrides={"base_urls": [grounder_url]},
    )  # fmt: skip


POINTS = {"marker A": (250, 500), "marker B": (750, 500), "the Length button": (100, 40)}


def _grounder(seen: list[SeenRequest]) -> Any:
    def answer(req: SeenRequest) -> str:
        seen.append(req)
        element = req.text.split("Description: ", 1)[1].split("\n", 1)[0]
        x, y = POINTS.get(element, (None, None))
        return f"({x}, {y})" if x is not None else "I cannot find it."

    return answer


def _play(agent: PlannerGrounderAgent, tmp: Path, turns: int) -> list[AgentAnswer]:
    async def main() -> list[AgentAnswer]:
        out: list[AgentAnswer] = []
        previous: list[PastTurn] = []
        try:
            for n in range(1, turns + 1):
                turn = _turn(tmp, n, tuple(previous))
                ans = await agent.answer(turn)
                out.append(ans)
                previous.append(PastTurn(n, turn.screen_path, turn.screen_rel, ans))
        finally:
            await agent.aclose()
        return out

    return asyncio.run(main())


def test_pair_grounds_each_step_on_its_own_screen(tmp_path: Path) -> None:
    plans = [
        'Thought: pick the tool, then measure.\nAction: click(element="the Length button")\n'
        'drag(start="marker A", end="marker B")',
        "Thought: measured.\nAction: done()",
    ]
    planner_seen: list[SeenRequest] = []
    grounder_seen: list[SeenRequest] = []

    def planner(req: SeenRequest) -> str:
        planner_seen.append(req)
        return plans[len(planner_seen) - 1]

    with (
        OpenAITestServer(answer=planner) as p,
        OpenAITestServer(answer=_grounder(grounder_seen)) as g,
    ):
        a1, a2, a3 = _play(_pair(p.base_url, g.base_url), tmp_path, 3)
    assert len(planner_seen) == 2 and len(grounder_seen) == 3  # the drag: both of its ends
    assert a1.action == Click(100 / 1000 * W, 40 / 1000 * H) and a1.source == "planner"
    assert a1.thought == "pick the tool, then measure." and a1.call_state is not None
    assert a1.model_calls is not None
    planned, grounded = a1.model_calls
    assert planned.role == "planner" and planned.raw_text == a1.raw_text == plans[0]
    assert grounded.role == "grounder" and grounded.element == "the Length button"
    assert grounded.raw_text == "(100, 40)" and grounded.point == (0.1, 0.04)
    assert grounded.step == "click(element='the Length button')"
    assert a1.input_tokens == (planned.input_tokens or 0) + (grounded.input_tokens or 0)
    assert a2.action == Drag(0.25 * W, 0.5 * H, 0.75 * W, 0.5 * H)
    assert PLANNED_EARLIER in a2.flags and a2.raw_text is None and QUEUED not in a2.flags
    assert [(r.role, r.element) for r in a2.model_calls or []] == [
        ("grounder", "marker A"),
        ("grounder", "marker B"),
    ]
    # the drag was grounded on the second turn's screen, not the first's
    assert grounder_seen[1].image is not None and grounder_seen[0].image is not None
    assert grounder_seen[1].image.sha256 != grounder_seen[0].image.sha256
    assert a3.action == Done()
    # the grounder got its own prompt, unchanged, with the description as the instruction
    assert grounder_seen[0].text == UGROUND_TEMPLATE.replace("{instruction}", "the Length button")
    assert GOAL in planner_seen[0].text and "Select the Length tool" not in planner_seen[0].text
    assert "1. Thought: pick the tool" in planner_seen[1].text  # its own history


def test_no_point_and_planner_coordinates_are_no_actions(tmp_path: Path) -> None:
    plans = iter(['Action: click(element="the OK button")', "Action: click(512, 48)"])
    seen: list[SeenRequest] = []
    with (
        OpenAITestServer(answer=lambda r: next(plans)) as p,
        OpenAITestServer(answer=_grounder(seen)) as g,
    ):
        a1, a2 = _play(_pair(p.base_url, g.base_url), tmp_path, 2)
    assert a1.action is None and NO_POINT in a1.flags
    assert [r.role for r in a1.model_calls or []] == ["planner", "grounder"]
    assert a1.model_calls is not None and a1.model_calls[1].raw_text == "I cannot find it."
    assert [r.role for r in a2.model_calls or []] == ["planner"]
    assert a2.action is None and "bad_action_args" in a2.flags and len(seen) == 1
    assert not any(isinstance(a.action, Scroll) for a in (a1, a2))


def test_pair_options_and_refusals() -> None:
    opts = grounder_options(
        {"backend": "openai", "base_urls": ["http://a/v1"], "api_model": "gpt-x", "timeout": 9},
        {"base_urls": ["http://b/v1"]},
    )
    assert opts.base_urls == ("http://b/v1",) and opts.api_model is None and opts.timeout == 9
    with pytest.raises(ConfigError, match="baseline"):
        create_planner_grounder("random", "uground-v1-7b")
    with pytest.raises(ConfigError, match="oracle"):
        create_planner_grounder("gpt-5", "oracle")


@pytest.mark.parametrize(
    ("pair", "mode", "match"),
    [
        ({"planner": "gpt-5"}, "agent", "go together"),
        ({"planner": "gpt-5", "grounder": "uground-v1-7b"}, "guided", "--mode agent"),
        ({"planner": "noop", "grounder": "uground-v1-7b"}, "agent", "not oracle, noop"),
        ({"planner": "gpt-5", "grounder": "no-such-card"}, "agent", "unknown model"),
    ],
)
def test_a_bad_pair_is_refused_before_the_run_folder_is_made(
    tmp_path: Path, pair: dict[str, str], mode: str, match: str
) -> None:
    from medspot.live.loop.request import run_live

    out = tmp_path / "run"
    req = live_request(
        env="orthanc-explorer", model="pair", out=out, task_ids=("open-study-ct-doe-john",),
        mode=mode, **pair,
    )  # fmt: skip
    with pytest.raises(ConfigError, match=match):
        run_live(req)
    assert not out.exists()
