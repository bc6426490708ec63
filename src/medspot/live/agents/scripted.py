"""Agents that are not models: the `oracle` (the current step's target from the application),
`noop` (the do-nothing baseline: `done()` at once) and `replay` (actions from a JSON-lines file:
scripted agents for tests, answers made elsewhere).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medspot.errors import ConfigError
from medspot.live.agents.answer_reader import parse_action
from medspot.live.agents.turn import AgentAnswer, AgentTurn
from medspot.live.core.actions import (
    Done,
    action_from_json,
    action_to_json,
)
from medspot.spelling import suggestion

__all__ = ["ORACLE_TARGET_MISSING", "NoopAgent", "OracleAgent", "ReplayAgent"]

log = logging.getLogger(__name__)

# the flag of a turn the oracle could not act on: the current step's target (or a drag's
# release) is not on the screen
ORACLE_TARGET_MISSING = "oracle_target_missing"


def _shown(items: Sequence[str], most: int = 8) -> str:
    more = len(items) - most
    return ", ".join(items[:most]) + (f" and {more} more" if more > 0 else "")


async def oracle_answer(turn: AgentTurn, source: str) -> AgentAnswer:
    """The oracle's action for this turn; where the current step's target is not on the
    screen, a no-action answer flagged `oracle_target_missing` that says why (and a warning in
    the log)."""
    action = await turn.oracle()
    if action is None:
        step = turn.step
        needs = "target or its drag release" if step.to is not None else "target"
        why = (
            f"the oracle cannot act: the {needs} of step {turn.step_index + 1} "
            f"({step.instruction!r}) is not on the screen"
        )
        log.warning("task %s, turn %d (%s): %s; a no-action turn, flagged %s", turn.task.id,
                    turn.n, source, why, ORACLE_TARGET_MISSING)  # fmt: skip
        return AgentAnswer(
            raw_text="", action=None, source=source, flags=[ORACLE_TARGET_MISSING],
            not_executed=why,
        )  # fmt: skip
    return AgentAnswer(raw_text=json.dumps(action_to_json(action)), action=action, source=source)


@dataclass
class OracleAgent:
    name: str = "oracle"
    max_concurrency: int = 64

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        return await oracle_answer(turn, "oracle")

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": "baseline",
            "note": "oracle: the target element's box from the application; not a model",
        }

    async def aclose(self) -> None:
        return None


@dataclass
class NoopAgent:
    """The do-nothing baseline: answers `done()` at once. A task it solves was solved at its
    start (a broken task)."""

    name: str = "noop"
    max_concurrency: int = 64

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        return AgentAnswer(raw_text="done()", action=Done(), source="noop")

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "baseline", "note": "noop: answers done() at once"}

    async def aclose(self) -> None:
        return None


# ---- replay / scripted ----------------------------------------------------------------------


@dataclass
class ReplayAgent:
    """Each line: `{"task": ID, "n": 1, "action": {...}}` (a LiveAction in JSON form) or
    `{"task": ID, "n": 1, "raw_text": "click(412, 233)"}` (read like a model's answer, in
    screenshot pixels); `"n"` may be omitted (the lines of a task in order). A task's actions
    after its last line are `done()`. `{"task": ID, "n": k, "oracle": true}` takes the oracle's
    action for that turn (scripts such as one wrong click, then the right ones).

    `check_tasks` holds the file against the run's tasks before anything starts: a task that
    exists nowhere (a misspelt id) is an error naming the file and line; lines for tasks this
    run does not run, and tasks run without a line (they end with done() at once), are
    warnings."""

    path: Path
    name: str = "replay"
    max_concurrency: int = 64

    def __post_init__(self) -> None:
        self.lines: dict[str, dict[int, dict[str, Any]]] = {}
        self.first_line: dict[str, int] = {}  # the file's line first naming each task
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"cannot read replay file {self.path}: {e.strerror or e}") from None
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                task = obj["task"]
                if not isinstance(task, str):
                    raise TypeError("task must be a string")
                per = self.lines.setdefault(task, {})
                self.first_line.setdefault(task, i)
                n = obj.get("n", len(per) + 1)
                if not isinstance(n, int) or n < 1:
                    raise TypeError("n must be a whole number from 1")
                if "action" in obj:
                    action_from_json(obj["action"])  # validated now, not mid-run
                elif not isinstance(obj.get("raw_text"), str) and obj.get("oracle") is not True:
                    raise TypeError('needs "action", "raw_text" or "oracle": true')
                per[n] = obj
            except (ValueError, KeyError, TypeError) as e:
                raise ConfigError(f"{self.path}, line {i}: not a live replay line ({e})") from None
            except Exception as e:  # MedspotError from action_from_json
                raise ConfigError(f"{self.path}, line {i}: {e}") from None

    def check_tasks(
        self, known: Sequence[str], run: Sequence[str], *, where: str, listing: str
    ) -> list[str]:
        """A `ConfigError` for the first task of the file that is not in `known` (the ids of
        the run's task file, which `where` names and `listing` lists); the warnings about the
        tasks `run`."""
        known_set, run_set = set(known), set(run)
        for task, line in sorted(self.first_line.items(), key=lambda kv: kv[1]):
            if task not in known_set:
                hint = suggestion(task, known)
                raise ConfigError(
                    f"{self.path}, line {line}: task {task!r} is none of {where}{hint}; "
                    f"`{listing}` lists them"
                )
        out = []
        unused = [f"{t} (line {n})" for t, n in self.first_line.items() if t not in run_set]
        if unused:
            out.append(
                f"the replay file {self.path} has lines for {len(unused)} task(s) this run "
                f"does not run: {_shown(unused)}"
            )
        bare = [t for t in run if t not in self.lines]
        if bare:
            out.append(
                f"the replay file {self.path} has no line for {len(bare)} task(s) of this run, "
                f"which end with done() at once: {_shown(bare)}"
            )
        return out

    async def answer(self, turn: AgentTurn) -> AgentAnswer:
        obj = self.lines.get(turn.task.id, {}).get(turn.n)
        if obj is None:
            return AgentAnswer(raw_text="done()", action=Done(), source="replay")
        if obj.get("oracle") is True:
            return await oracle_answer(turn, "replay-oracle")
        if "action" in obj:
            action = action_from_json(obj["action"])
            return AgentAnswer(raw_text=json.dumps(obj["action"]), action=action, source="replay")
        parsed = parse_action(obj["raw_text"], turn.size)
        return AgentAnswer(
            raw_text=obj["raw_text"],
            action=parsed.action,
            source=parsed.source,
            flags=list(parsed.flags),
        )

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "replay", "file": str(self.path)}

    async def aclose(self) -> None:
        return None
