"""The live journal, `live_journal.jsonl`: per step a line with the model's answer as soon as
it arrives and a second with the action's effect (same task, attempt and `n`; the later
wins), one line per environment fault, one per finished task attempt; appended and fsynced,
torn last line tolerated (the run folder's `Journal` and `read_records`).

Every record names its repeat (`--repeats K`: each task runs K times, `repeat` 0..K-1; a
journal written before repeats reads as repeat 0). Resume works per (task, repeat)
(`JournalState`: one `ResumeState` per repeat, keyed by task): a repeat whose last attempt
ended as success, harmful failure or failure is done, and its answers are replayed into that
repeat only, never into another. Within one repeat, a task whose last attempt ended as success,
harmful failure or failure is done; any other task is run again from its start state, and the
model answers journaled for it (from any earlier attempt, by step number) are replayed instead
of asking the model again. A failed model call is journaled with its error and asked again.

A fault record says where the attempt was (`n`: the action number, 0 for the reset, None while
the environment started) and, when the answers up to there were all replayed, the replayed
action. A fault that recurs at the same place on fresh environments, with the same replayed
answer, is deterministic: the runner ends the task as an environment error with
`fault_recurs` set, and such a task is not run again on a resume unless asked
(`--retry-env-errors`; `ResumeState.given_up`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from medspot.adapters.modelcall import ModelCall
from medspot.live.agents.turn import QUEUED, TurnCall
from medspot.runfolder.journal import read_records

__all__ = [
    "FINAL_OUTCOMES",
    "FaultRecord",
    "JournalState",
    "LiveRecord",
    "ResumeState",
    "StepRecord",
    "TaskRecord",
    "read_live_journal",
]

Outcome = Literal["success", "harmful", "failure", "abandoned", "error", "env_error"]
# a served agent's episode it left unfinished (`medspot live serve`) is scored: never a success
FINAL_OUTCOMES = ("success", "harmful", "failure", "abandoned")


class StepRecord(ModelCall):
    """One action of one attempt: what the model saw and said (the call fields are
    `ModelCall`'s), what was executed, its effect."""

    type: Literal["step"] = "step"
    task: str  # the task id of the task file
    env: str
    attempt: int  # 1-based attempt of this task (a fresh environment after a fault)
    repeat: int = 0  # 0-based repeat of the task (`--repeats K`); journals before: 0
    n: int  # 1-based action number within the attempt
    target_step: int | None = None  # 1-based oracle step it aimed at (the current step)
    instruction: str = ""
    screen: str = ""  # sha256 of the screenshot shown (screens/<sha>.png)
    screen_size: tuple[int, int] | None = None
    url: str | None = None
    url_after: str | None = None  # the URL after the action (web environments)
    replayed: bool = False  # the answer came from the journal, not from the model
    source: str | None = None  # how the answer was read (answer_reader sources)
    thought: str | None = None  # the agent's own reasoning text, where its format has one
    call_state: dict[str, Any] | None = None  # an agent's conversation state (response ids)
    # each model's call of an agent made of several (planner + grounder), a model-call record
    model_calls: list[TurnCall] | None = None
    action: dict[str, Any] | None = None  # the parsed action (actions.action_to_json)
    executed: bool = False
    # why the answer was not executed: an action the environment cannot execute (flag
    # not_executable:<why>), an answer that cannot be turned into an action
    not_executed: str | None = None
    settle_s: float | None = None
    changed: bool | None = None
    intended_box: tuple[float, float, float, float] | None = None  # pixels
    intended_to: tuple[float, float, float, float] | None = None  # drag release box, pixels
    hit_intended: bool | None = None
    element: dict[str, Any] | None = None  # ElementInfo of what the action hit
    achieved: list[int] = Field(default_factory=list)  # oracle steps achieved by this action
    checks: dict[str, Any] = Field(default_factory=dict)  # success / fail_if / done_if results
    # a tool call (the tools track): what the tool said (`name`, `text`, `data`), or why it
    # could not run (`error`)
    tool_result: dict[str, Any] | None = None
    # the harm recorded at this action (`core.harm.HarmEvent.to_json`): a rule that fired
    harms: list[dict[str, Any]] | None = None
    step_s: float | None = None  # wall time of the whole step
    env_s: float | None = None  # of which inside the environment (act, observe, locate, checks)
    time: str = ""

    @property
    def calls_made(self) -> int:
        """The model calls this answer made (each one paid): none for an answer replayed
        from the journal or a later action of an earlier answer (`queued`); a computer-use
        turn's API calls (its `call` events: none for a batched action, several when the model
        only looked first); a planner + grounder turn's calls; else one."""
        if self.replayed or QUEUED in self.flags:
            return 0
        if self.model_calls:
            return len(self.model_calls)
        state = self.call_state or {}
        events = state.get("events")
        if state.get("api") and isinstance(events, list):
            return sum(1 for e in events if isinstance(e, dict) and e.get("e") == "call")
        return 1


class FaultRecord(BaseModel):
    """An environment fault that ended one attempt, and where the attempt was."""

    model_config = ConfigDict(extra="allow")

    type: Literal["fault"] = "fault"
    task: str
    env: str
    attempt: int
    message: str
    repeat: int = 0
    n: int | None = None  # the action number it happened at; 0: the reset; None: the start
    action: dict[str, Any] | None = None  # the action being executed at `n`, if any
    replayed: bool = False  # every answer up to `n` in this attempt came from the journal
    time: str = ""

    def same_place(self, earlier: FaultRecord) -> bool:
        """Whether this fault happened where `earlier` did, with the same input: the same
        reset, or the same action number and action with every answer replayed."""
        if self.n is None or self.n != earlier.n or self.action != earlier.action:
            return False
        return self.n == 0 or self.replayed


class TaskRecord(BaseModel):
    """The end of one attempt."""

    model_config = ConfigDict(extra="allow")

    type: Literal["task"] = "task"
    task: str
    env: str
    attempt: int
    outcome: Outcome
    repeat: int = 0
    reason: str = ""
    steps_used: int = 0
    oracle_steps: int = 0
    achieved: int = 0  # oracle steps achieved
    fired: list[str] = Field(default_factory=list)  # fail_if kinds that fired
    final_screen: str = ""
    final_url: str | None = None
    reset_s: float | None = None  # the environment's reset with `start.prepare` (`Episode`)
    # what the wait between tasks was: from the end of the slot's previous attempt (a task's
    # last step, or a fault) to this attempt's first observation; None for a slot's first
    # task. With a spare it is a swap, without one a reset (`reset_s` then ran in the
    # background, on the spare)
    between_tasks_s: float | None = None
    swapped: bool = False  # the attempt started on a spare swapped in
    # each success / fail_if check and required step on the start state, when the run read
    # them (`start_checks`: success_each, fail_if_each, requires_each)
    start_checks: dict[str, list[bool]] | None = None
    duration_s: float | None = None
    # env_error only: the fault recurred at the same place on every fresh environment; the
    # task is not run again on a resume unless asked (--retry-env-errors)
    fault_recurs: bool = False
    # the tools track (`--tools`): the tools offered in this attempt (None: no tools track) and,
    # for a task the toolset cannot reach, why it stays GUI-only
    tools_offered: list[str] | None = None
    gui_only: str | None = None
    # the environment's measures of the end state (`Environment.task_quality`), e.g. the Dice
    # of a segmentation with the truth: {"dice": 0.93}
    quality: dict[str, float] | None = None
    # graded harm and partial credit (`Episode.tally`): the harm events of the attempt
    # (`core.harm.HarmEvent.to_json`; None: a journal written before harm was labelled, its
    # harm counted as major), the task's subgoals (`core.subgoals`) and which were reached,
    # the share reached and the first not reached (None: all were)
    harms: list[dict[str, Any]] | None = None
    subgoals: list[str] | None = None
    subgoals_reached: list[bool] | None = None
    progress: float | None = None
    first_failed_subgoal: str | None = None
    time: str = ""


LiveRecord = StepRecord | FaultRecord | TaskRecord
_ADAPTER: TypeAdapter[LiveRecord] = TypeAdapter(
    StepRecord | FaultRecord | TaskRecord  # type: ignore[arg-type]
)


def read_live_journal(path: Path) -> Iterator[LiveRecord]:
    """Every well-formed record in file order; a torn or corrupt line is skipped (a torn last
    line is the normal trace of a killed run)."""
    return read_records(path, _ADAPTER.validate_json)


@dataclass
class ResumeState:
    """What the journal says about each task."""

    finished: dict[str, TaskRecord] = field(default_factory=dict)  # task -> final record
    last: dict[str, TaskRecord] = field(default_factory=dict)  # task -> latest task record
    steps: dict[str, dict[int, list[StepRecord]]] = field(default_factory=dict)
    answers: dict[str, dict[int, StepRecord]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    faults: dict[str, int] = field(default_factory=dict)
    # task -> the faults in a row at one place (`FaultRecord.same_place`), since the task was
    # last given up on
    fault_streak: dict[str, list[FaultRecord]] = field(default_factory=dict)
    # task -> its latest record, an env_error whose fault recurs (not retried unless asked)
    given_up: dict[str, TaskRecord] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: list[LiveRecord], repeat: int = 0) -> ResumeState:
        """The state of one repeat (the only one of a run without `--repeats`)."""
        st = cls()
        for r in records:
            if r.repeat == repeat:
                st.add(r)
        return st

    def add(self, r: LiveRecord) -> None:
        st = self
        st.attempts[r.task] = max(st.attempts.get(r.task, 0), r.attempt)
        if isinstance(r, StepRecord):
            steps = st.steps.setdefault(r.task, {}).setdefault(r.attempt, [])
            if steps and steps[-1].n == r.n:  # the answer first, then its effect
                steps[-1] = r
            else:
                steps.append(r)
            if r.ok:  # a paid answer: replay it instead of asking again
                st.answers.setdefault(r.task, {})[r.n] = r
        elif isinstance(r, FaultRecord):
            st.faults[r.task] = st.faults.get(r.task, 0) + 1
            streak = st.fault_streak.get(r.task, [])
            st.fault_streak[r.task] = [*streak, r] if streak and r.same_place(streak[-1]) else [r]
        else:
            st.last[r.task] = r
            st.given_up.pop(r.task, None)
            if r.outcome in FINAL_OUTCOMES:
                st.finished[r.task] = r
            else:
                st.finished.pop(r.task, None)
            if r.outcome in FINAL_OUTCOMES or r.fault_recurs:
                st.fault_streak.pop(r.task, None)
            if r.fault_recurs:
                st.given_up[r.task] = r

    def spent_usd(self) -> float:
        """The cost of the model calls journaled (replayed answers cost nothing again)."""
        return sum(
            s.cost_usd or 0.0
            for attempts in self.steps.values()
            for steps in attempts.values()
            for s in steps
            if not s.replayed
        )

    def trajectory(self, task: str) -> list[StepRecord]:
        """The steps of the attempt that produced the task's latest result."""
        rec = self.last.get(task)
        by_attempt = self.steps.get(task, {})
        if rec is not None:
            return list(by_attempt.get(rec.attempt, []))
        if not by_attempt:
            return []
        return list(by_attempt[max(by_attempt)])


@dataclass
class JournalState:
    """The journal read back per repeat: `repeats[k]` is repeat k's `ResumeState` (keyed by
    task), so that results, resume and replay are per (task, repeat)."""

    repeats: dict[int, ResumeState] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: list[LiveRecord]) -> JournalState:
        st = cls()
        for r in records:
            st.add(r)
        return st

    def of(self, repeat: int) -> ResumeState:
        return self.repeats.setdefault(repeat, ResumeState())

    def add(self, r: LiveRecord) -> None:
        self.of(r.repeat).add(r)

    def spent_usd(self) -> float:
        return sum(st.spent_usd() for st in self.repeats.values())

    def highest_repeat(self) -> int:
        """The highest repeat journaled (-1: none)."""
        return max(self.repeats, default=-1)
