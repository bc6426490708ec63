"""Scripted models for the agent-mode tests: the oracle's path of a task (from a real oracle run)
written back as each model's own answers (UI-TARS calls, Qwen's computer_use tool calls,
Aguvis's monologue and pyautogui code, CogAgent's grounded operations), in each model's
coordinate convention, served by the OpenAI test server. A script knows its task by the goal
in the prompt and answers its turns in order."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medspot.testing.openai_server import SeenRequest

Action = dict[str, Any]  # a live action in its JSON form, in screenshot pixels
Writer = Callable[[Sequence[Action], SeenRequest, tuple[int, int]], str]


@dataclass(frozen=True)
class Plan:
    goal: str
    screen: tuple[int, int]
    actions: tuple[Action, ...]


def oracle_plans(run_dir: Path, task_ids: Sequence[str]) -> dict[str, Plan]:
    """Per task, the actions the oracle executed in `run_dir` (its trajectories)."""
    plans = {}
    for tid in task_ids:
        traj = json.loads((run_dir / "trajectories" / f"{tid}.json").read_text())
        steps = [s for s in traj["steps"] if s.get("executed") and s.get("action")]
        size = tuple(steps[0]["screen_size"])
        plans[tid] = Plan(
            traj["instruction"], (size[0], size[1]), tuple(s["action"] for s in steps)
        )
    return plans


@dataclass
class Script:
    """Answers per goal: `turns[goal]` is a list of (actions, writer) in order; after them the
    writer's ending. `asked` counts the requests per goal."""

    turns: dict[str, list[tuple[Sequence[Action], Writer]]]
    screen: dict[str, tuple[int, int]]
    asked: dict[str, int] = field(default_factory=dict)
    seen: list[SeenRequest] = field(default_factory=list)

    def __call__(self, req: SeenRequest) -> str:
        self.seen.append(req)
        goal = next(g for g in self.turns if g in req.text)
        k = self.asked.get(goal, 0)
        self.asked[goal] = k + 1
        turns = self.turns[goal]
        actions, writer = turns[k] if k < len(turns) else ((), turns[-1][1])
        return writer(actions, req, self.screen[goal])


def script(plans: Sequence[Plan], writer: Writer, groups: Sequence[int] | None = None) -> Script:
    """One answer per `groups[i]` consecutive oracle actions (default: one each)."""
    turns: dict[str, list[tuple[Sequence[Action], Writer]]] = {}
    for p in plans:
        sizes = list(groups) if groups is not None else [1] * len(p.actions)
        assert sum(sizes) == len(p.actions), (sizes, p.actions)
        out: list[tuple[Sequence[Action], Writer]] = []
        i = 0
        for n in sizes:
            out.append((p.actions[i : i + n], writer))
            i += n
        turns[p.goal] = out
    return Script(turns, {p.goal: p.screen for p in plans})


def _sent(req: SeenRequest) -> tuple[int, int]:
    assert req.image is not None
    return req.image.size


# ---- UI-TARS ----------------------------------------------------------------------------------


def ui_tars(rel1000: bool = False) -> Writer:
    """UI-TARS-1.5 (pixels of the image sent) or, `rel1000`, UI-TARS-7B-SFT (0..1000)."""

    def write(actions: Sequence[Action], req: SeenRequest, screen: tuple[int, int]) -> str:
        w, h = (1000, 1000) if rel1000 else _sent(req)

        def p(x: float, y: float) -> str:
            return f"({x * w / screen[0]:.0f},{y * h / screen[1]:.0f})"

        calls = []
        for a in actions:
            if a["kind"] == "click":
                name = "left_double" if a["double"] else "click"
                calls.append(f"{name}(start_box='{p(a['x'], a['y'])}')")
            elif a["kind"] == "drag":
                calls.append(
                    f"drag(start_box='{p(a['x1'], a['y1'])}', end_box='{p(a['x2'], a['y2'])}')"
                )
            elif a["kind"] == "type":
                calls.append(f"type(content='{a['text']}')")
            else:
                raise AssertionError(a)
        if not calls:
            return "Thought: The task is complete.\nAction: finished(content='Done.')"
        return (
            "Thought: Next, "
            + " then ".join(c.split("(")[0] for c in calls)
            + ".\nAction: "
            + ("\n\n".join(calls))
        )

    return write


# ---- Qwen2.5-VL computer_use -------------------------------------------------------------------


def _tool(**arguments: object) -> str:
    return (
        f"<tool_call>\n{json.dumps({'name': 'computer_use', 'arguments': arguments})}\n</tool_call>"
    )


def qwen25(actions: Sequence[Action], req: SeenRequest, screen: tuple[int, int]) -> str:
    w, h = _sent(req)

    def p(x: float, y: float) -> list[int]:
        return [round(x * w / screen[0]), round(y * h / screen[1])]

    calls = []
    for a in actions:
        if a["kind"] == "click":
            kind = "double_click" if a["double"] else "left_click"
            calls.append(_tool(action=kind, coordinate=p(a["x"], a["y"])))
        elif a["kind"] == "drag":
            calls.append(_tool(action="mouse_move", coordinate=p(a["x1"], a["y1"])))
            calls.append(_tool(action="left_click_drag", coordinate=p(a["x2"], a["y2"])))
        elif a["kind"] == "type":
            calls.append(_tool(action="type", text=a["text"]))
        else:
            raise AssertionError(a)
    return "\n".join(calls) or _tool(action="terminate", status="success")


# ---- Aguvis -----------------------------------------------------------------------------------


def aguvis(actions: Sequence[Action], req: SeenRequest, screen: tuple[int, int]) -> str:
    def p(x: float, y: float) -> str:
        return f"x={x / screen[0]:.4f}, y={y / screen[1]:.4f}"

    code = []
    for a in actions:
        if a["kind"] == "click":
            code.append(f"pyautogui.click({p(a['x'], a['y'])})")
        elif a["kind"] == "drag":
            code.append(f"pyautogui.moveTo({p(a['x1'], a['y1'])})")
            code.append(f"pyautogui.dragTo({p(a['x2'], a['y2'])}, duration=0.5)")
        elif a["kind"] == "type":
            code.append(f"pyautogui.write(message='{a['text']}')")
        else:
            raise AssertionError(a)
    if not code:
        code = ["computer.terminate(status='success')"]
    return (
        "all\nThought: I follow the task step by step.\nAction: Do the next step.\nassistantos\n"
        + "\n".join(code)
    )


# ---- CogAgent ---------------------------------------------------------------------------------


def cogagent(actions: Sequence[Action], req: SeenRequest, screen: tuple[int, int]) -> str:
    """A click followed by typing is one TYPE in the clicked box (CogAgent clicks it first)."""

    def box(x: float, y: float) -> str:
        bx, by = x / screen[0] * 1000, y / screen[1] * 1000
        return f"[[{bx - 4:.0f},{by - 4:.0f},{bx + 4:.0f},{by + 4:.0f}]]"

    kinds = [a["kind"] for a in actions]
    if kinds == ["click", "type"]:
        c, t = actions
        op = f"TYPE(box={box(c['x'], c['y'])}, text='{t['text']}', element_type='Text input box')"
        act = f"Type '{t['text']}' into the box."
    elif kinds == ["click"]:
        op = f"CLICK(box={box(actions[0]['x'], actions[0]['y'])}, element_type='Clickable text')"
        act = "Click the next element."
    elif not kinds:
        op, act = "END()", "The task is complete."
    else:
        raise AssertionError(kinds)
    return f"Action: {act}\nGrounded Operation: {op}\n<<一般操作>>"


# ---- MAI-UI mobile_use (0..999) -----------------------------------------------------------------


def mai_ui(actions: Sequence[Action], req: SeenRequest, screen: tuple[int, int]) -> str:
    """One mobile_use call per answer (the repository's harness reads one), on 0..999."""

    def p(x: float, y: float) -> list[int]:
        return [round(x / screen[0] * 999), round(y / screen[1] * 999)]

    args: dict[str, object]
    if not actions:
        args = {"action": "terminate", "status": "success"}
    else:
        (a,) = actions
        if a["kind"] == "click":
            args = {"action": "double_click" if a["double"] else "click",
                    "coordinate": p(a["x"], a["y"])}  # fmt: skip
        elif a["kind"] == "drag":
            args = {"action": "drag", "start_coordinate": p(a["x1"], a["y1"]),
                    "end_coordinate": p(a["x2"], a["y2"])}  # fmt: skip
        elif a["kind"] == "type":
            args = {"action": "type", "text": a["text"]}
        else:
            raise AssertionError(a)
    call = json.dumps({"name": "mobile_use", "arguments": args})
    return f"<thinking>\nThe next step of the task.\n</thinking>\n<tool_call>\n{call}\n</tool_call>"


# ---- GUI-Owl-1.5 computer_use (0..1000) ---------------------------------------------------------


def gui_owl(actions: Sequence[Action], req: SeenRequest, screen: tuple[int, int]) -> str:
    """Mobile-Agent-v3.5's response format: `Action:` then one tool call, on 0..1000."""

    def p(x: float, y: float) -> list[int]:
        return [round(x / screen[0] * 1000), round(y / screen[1] * 1000)]

    if not actions:
        return "Action: The task is done.\n" + _tool(action="terminate", status="success")
    (a,) = actions
    if a["kind"] == "click":
        kind = "double_click" if a["double"] else "left_click"
        return (
            f"Action: Click the next element.\n{_tool(action=kind, coordinate=p(a['x'], a['y']))}"
        )
    if a["kind"] == "type":
        return f"Action: Type {a['text']}.\n{_tool(action='type', text=a['text'])}"
    raise AssertionError(a)
