"""What one live step means: the `Episode` of one task in one environment.

    ep = Episode(env, task)
    obs = ep.reset()                       # the task's start state (and its `start.prepare`)
    while True:
        res = ep.step(my_agent(obs, ep.goal, ep.instruction))
        obs = res.observation
        if res.terminated or res.truncated:
            break

This is the only definition of a live step; the runner (`medspot.live.loop`), `live export`,
the Gymnasium environment and the tests all go through it. Per step:

- the *current step* is the first step of the task's path (the oracle's steps) not yet
  achieved; its target is located on the screen the agent saw (`intended()`), before acting:
  at once when the screen appears (the end of `reset()` and of `step()`, which returns those
  boxes as `next_intended`), so that a caller driving the episode from elsewhere (a Ray actor)
  needs one call per step;
- an ending (`done()`, `infeasible(...)`) acts on nothing: the task ends as a success when it is
  the right ending and the success checks hold (and every `requires`d step happened), else as a
  failure; no answer (`None`) uses one action of the budget and changes nothing;
- an action the environment cannot execute (`medspot.live.core.executable`: a key its driver
  does not have, a point that is not finite or off the screen, a scroll of no or too many
  notches, text no keyboard types) is not executed either: one action of the budget, the flag
  `not_executable:<why>` and `StepResult.not_executed` (the model's mistake, never a fault);
- a tool call (`ToolCall`, the tools track: `tools`, a `Toolset` of the environment) runs the
  tool instead of a GUI action (what it found is `info["tool"]`), then the path and the checks
  as below (a tool hits no element: `hit_intended` is None); an unknown tool, arguments that
  do not fit, or arguments the tool fails on (the application refusing them, a value it
  cannot send: `core.tools.run_tool`) is a no-action step with its flag (`unknown_tool`,
  `bad_tool_args`) and the reason, never an environment fault;
- any other action: the element under its point is read, whether it hit the intended element is
  judged (`hit_intended`), the action is executed and settled, then the path is advanced: the
  current step is achieved when its `done_if` holds or, without one, when the action hit its
  target; following steps whose `done_if` already holds are achieved too;
- the `done_if` of every step named in `requires` is read at the start (after the reset and
  `start.prepare`) and after every action: a required step has happened once its `done_if`
  BECAME true, i.e. held after an action having been false at the start or at an earlier
  reading (a step already done at the start counts only after it was undone and done again:
  any action would pass it otherwise);
- each checkpoint's check (`LiveTask.checkpoints`) is read at the start and after every
  action, as a required step's `done_if` is: it is reached once it became true; the task's
  subgoals (`core.subgoals`: the path's steps, the required steps, the checkpoints) reached
  so far are `StepResult.subgoals`, and `score` (`core.rewards.EpisodeScore`) the episode's
  standing for the rewards;
- then `fail_if`, the harm rules, each labelled (`core.harm`): a rule that holds records a
  harm event (`StepResult.harms`: the rule, its severity and dimension, the action), once per
  episode; a `critical` or `major` one ends the episode as a *harmful* failure (checked first),
  a `minor` one does not; then `success` (all hold, and every required step happened, and the
  task is not one whose right ending is `infeasible`): either ends the episode
  (`terminated`); the budget spent without an ending is `truncated`;
- a turn whose actions someone else executed on the application (`step_outside`: BrowserGym
  runs its own action set on the page the environment drives) is judged as an executed action
  (one action of the budget; no point is known, so the path advances by `done_if` only), and
  an ending the agent gave in the same turn (it said it is done, or reported the task
  infeasible) is judged after harm and success, as `step(ending)` judges it.

Environment faults (`EnvironmentFault`, anything the environment raises) propagate: the
caller decides (the runner retries the task on a fresh environment). A `start.prepare` step
whose target (or drag release) is not on the screen is the task's data, not a fault: the
environment's reset returns only once the application settled on the task's start, and its
`act` only once the application settled after an action (or they raise `EnvironmentFault`), so
a target missing from that screen does not exist there: a `DataError` located at
`start.prepare.K.target` (0-based, as the task file's validation names it), at once. After a fault
the episode refuses every step until it is reset (`EpisodeError`, as before the first `reset()`).
What is not an action is refused (`NotAnAction`) before anything is spent, and a task of
another environment when the episode is made (a `DataError`: the task checked against the
`EnvEntry` that made the environment, `contract.entry_of`). The Episode is synchronous and
must be used from the environment's own thread.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from medspot.errors import DataError, Location, MedspotError
from medspot.live.core import actions
from medspot.live.core.contract import (
    ActResult,
    ElementInfo,
    Environment,
    EnvironmentFault,
    Observation,
    PixelBox,
    entry_of,
)
from medspot.live.core.executable import capabilities_of, unexecutable
from medspot.live.core.harm import HarmEvent, penalty
from medspot.live.core.rewards import EpisodeScore
from medspot.live.core.subgoals import first_failed, progress, subgoals_of
from medspot.live.core.taskcheck import check_task_for_entry
from medspot.live.core.tasks import CheckSpec, LiveTask, Locator, StepSpec
from medspot.live.core.tools import UNKNOWN_TOOL, ToolArgsError, Toolset, run_tool

__all__ = [
    "MODES",
    "POINT_TOLERANCE_PX",
    "Boxes",
    "Episode",
    "EpisodeError",
    "Mode",
    "Outcome",
    "StepResult",
    "hit_intended",
    "oracle_step_action",
    "tally_fields",
]

Mode = Literal["guided", "agent"]
MODES: tuple[Mode, ...] = ("guided", "agent")
Outcome = Literal["success", "harmful", "failure"]
# a step's target box and a drag's release box on a screen (None: not on it)
Boxes = tuple[PixelBox | None, PixelBox | None]


class EpisodeError(MedspotError, RuntimeError):
    """An `Episode` used out of order: a step or the oracle before `reset()`, a step after the
    episode ended or after the environment failed in it (reset again, on a fresh environment
    after a fault). Also a `RuntimeError`."""


# A locator with `at` or `landmark` names a point (a 1x1 box): an action within this many
# pixels of it counts as hitting it.
POINT_TOLERANCE_PX = 8.0


def _json_box(box: PixelBox | None) -> list[float] | None:
    return box.to_json() if box is not None else None


def _widen(box: PixelBox | None) -> PixelBox | None:
    if box is None or (box.x2 - box.x1 > 2 and box.y2 - box.y1 > 2):
        return box
    cx, cy = box.center
    r = POINT_TOLERANCE_PX
    return PixelBox(cx - r, cy - r, cx + r, cy + r)


def hit_intended(
    step: StepSpec,
    action: actions.LiveAction,
    box: PixelBox | None,
    to_box: PixelBox | None,
) -> bool | None:
    """Whether `action` does what the step intends on its element (the static benchmark's hit:
    the point inside the target's box; for a drag also the release inside `to`'s box; for
    typing and keys the same text / key; for an `infeasible` step the same ending). None when
    the step's target was not on screen. A point-like target (1x1 box) is hit within
    `POINT_TOLERANCE_PX`."""
    box, to_box = _widen(box), _widen(to_box)
    if step.action == "infeasible":
        return isinstance(action, actions.Infeasible)
    if step.action == "type":
        return (
            isinstance(action, actions.TypeText)
            and action.text.strip() == (step.text or "").strip()
        )
    if step.action == "key":
        return (
            isinstance(action, actions.Key)
            and actions.normalise_key(action.key).lower()
            == actions.normalise_key(step.key or "").lower()
        )
    if box is None:
        return None
    if step.action == "drag":
        if not isinstance(action, actions.Drag):
            return False
        end_ok = to_box is None or to_box.contains(action.x2, action.y2)
        return box.contains(action.x1, action.y1) and end_ok
    p = actions.point_of(action)
    if p is None:
        return False
    if step.action == "scroll" and not isinstance(action, actions.Scroll):
        return False
    return box.contains(p.x, p.y)


def oracle_step_action(
    step: StepSpec, box: PixelBox | None, to_box: PixelBox | None
) -> actions.LiveAction | None:
    """The oracle's action for `step`, given its target's (and a drag's release) box on the
    current screen: the centre of the box; None when a needed box is not on screen."""
    if step.action == "infeasible":
        return actions.Infeasible("the oracle's path ends here")
    if step.action == "type":
        return actions.TypeText(step.text or "")
    if step.action == "key":
        return actions.Key(step.key or "")
    if box is None:
        return None
    x, y = box.center
    if step.action == "drag":
        if to_box is None:
            return None
        return actions.Drag(x, y, *to_box.center)
    if step.action == "scroll":
        return actions.Scroll(x, y, step.dy or 0)
    if step.action == "double_click":
        return actions.Click(x, y, double=True)
    if step.action == "right_click":
        return actions.Click(x, y, button="right")
    return actions.Click(x, y)


@dataclass(frozen=True)
class StepResult:
    """What one step did. `n` is the 1-based action number; `target_step` the 1-based oracle
    step that was current when the action was taken; `achieved` the oracle steps (1-based) this
    action achieved; `fired` the kinds of the `fail_if` checks that fired and end the episode
    (critical and major harm: `harmful`); `harms` the harm events recorded at this step (a
    minor one too, the first time its rule holds)."""

    n: int
    observation: Observation
    action: actions.LiveAction | None
    executed: bool
    flags: tuple[str, ...]
    target_step: int
    intended_box: PixelBox | None
    intended_to: PixelBox | None
    element: ElementInfo | None
    hit_intended: bool | None
    achieved: tuple[int, ...]
    done_if: bool | None
    required_happened: tuple[str, ...]
    fired: tuple[str, ...]
    success: bool
    harmful: bool
    terminated: bool
    truncated: bool
    outcome: Outcome | None  # set when the episode ended (terminated or truncated)
    reason: str
    settle_s: float | None
    changed: bool | None
    env_s: float  # time spent inside environment calls during this step
    info: Mapping[str, Any] = field(default_factory=dict)  # the environment's ActResult info
    # each success / fail_if check after the step, in the task's order (empty: not evaluated);
    # an ending evaluates them on the screen it ends on (the start, for `done()` at once)
    success_each: tuple[bool, ...] = ()
    fail_each: tuple[bool, ...] = ()
    # an action the environment cannot execute (`core.executable`): why; it was not executed
    not_executed: str | None = None
    # when the episode ended: the environment's measures of the end state, where it has any
    # (`Environment.task_quality`, an optional method; e.g. {"dice": 0.93})
    quality: Mapping[str, float] = field(default_factory=dict)
    # the current step's boxes on the screen after this step, located at once (the next turn
    # needs them); None when the episode ended or they could not be located (then
    # `Episode.intended()` locates them when asked)
    next_intended: Boxes | None = None
    # the harm events recorded at this step (`core.harm`), and each subgoal of the task
    # (`core.subgoals.subgoals_of`) reached by now
    harms: tuple[HarmEvent, ...] = ()
    subgoals: tuple[bool, ...] = ()

    def effect(self) -> dict[str, Any]:
        """What this step did, in JSON forms, as the journal's step record and Gymnasium's
        info both show it: whether an action was executed and hit its intended element, that
        element's box (and a drag's release box), the element under the action's point, the
        oracle steps it achieved, whether the screen changed (None: not known)."""
        return {
            "executed": self.executed,
            "hit_intended": self.hit_intended,
            "intended_box": _json_box(self.intended_box),
            "intended_to": _json_box(self.intended_to),
            "element": self.element.to_json() if self.element is not None else None,
            "achieved": list(self.achieved),
            "changed": self.changed,
        }

    def journal_fields(self) -> dict[str, Any]:
        """This step as the live journal's step record keeps it (`StepRecord`'s effect fields;
        the runner and `medspot live serve` add the answer, its flags and the step's wall
        times): the effect, the checks, for an executed action its settle time and the URL
        after it, for an action the environment cannot execute why, for a tool call what the
        tool said."""
        out = {**self.effect(), "checks": self.checks}
        if self.executed:
            out.update(settle_s=round(self.settle_s or 0.0, 4), url_after=self.observation.url)
        if self.not_executed is not None:  # an action the environment cannot execute
            out["not_executed"] = self.not_executed
        if self.harms:  # the harm recorded at this step
            out["harms"] = [h.to_json() for h in self.harms]
        if "tool" in self.info:  # a tool call (the tools track): what the tool said
            out["tool_result"] = dict(self.info["tool"])
        elif "tool_error" in self.info:  # or why it could not run
            out["tool_result"] = {"error": str(self.info["tool_error"])}
        return out

    @property
    def checks(self) -> dict[str, Any]:
        """The checks of this step as the journal stores them."""
        each: dict[str, Any] = {}
        if self.success_each:
            each["success_each"] = list(self.success_each)
        if self.fail_each:
            each["fail_if_each"] = list(self.fail_each)
        if not self.executed:
            return {"success": self.success, **each} if self.terminated else {}
        return {
            "success": self.success, "fail_if": list(self.fired), "done_if": self.done_if, **each,
        }  # fmt: skip


class Episode:
    """One task in one environment: `reset()`, then `step(action)` until it ends."""

    def __init__(
        self,
        env: Environment,
        task: LiveTask,
        *,
        mode: Mode = "guided",
        tools: Toolset | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
        if not isinstance(task, LiveTask):
            raise TypeError(f"Episode takes a LiveTask, not {type(task).__name__}")
        entry = entry_of(env)  # the family that made it (`EnvEntry.create`)
        if entry is not None:  # a task of another environment: a DataError
            check_task_for_entry(task, entry)
        self.env = env
        self.task = task
        self.tools = tools  # the tools offered beside the GUI (the tools track), or none
        self.mode: Mode = mode
        self.achieved = [False] * len(task.steps)
        self.happened: set[str] = set()
        self.n = 0  # actions taken (the budget counts them)
        self.observation: Observation | None = None
        self.outcome: Outcome | None = None
        self.reason = ""
        self.reset_s = 0.0
        self._intended: Boxes | None = None
        # the required steps' done_if checks by name (validated: each has one)
        self._required: dict[str, CheckSpec] = {
            s.name: s.done_if
            for s in task.steps
            if s.name is not None and s.name in task.requires and s.done_if is not None
        }
        # required steps whose done_if was read false (at the start or later): only these can
        # happen (become true); and each required step's done_if at the start
        self._seen_false: set[str] = set()
        self.required_at_start: dict[str, bool] = {}
        self._fault: str | None = None  # what failed in the environment during this episode
        # partial credit: the task's subgoals; checkpoints read false (at the start or later),
        # those that became true since, and each checkpoint's check at the start
        self.subgoals = subgoals_of(task)
        self._marks_false: set[int] = set()
        self._marks_reached: set[int] = set()
        self.checkpoints_at_start: list[bool] = []
        # the harm events recorded so far, and the fail_if rules that recorded one
        self.harms: list[HarmEvent] = []
        self._harmed: set[int] = set()

    # -- what the agent is told ---------------------------------------------------------------

    @property
    def goal(self) -> str:
        return self.task.instruction

    @property
    def current(self) -> int:
        """0-based index of the current step: the first not achieved (the last when all are)."""
        return next((i for i, a in enumerate(self.achieved) if not a), len(self.achieved) - 1)

    @property
    def current_step(self) -> StepSpec:
        return self.task.steps[self.current]

    @property
    def instruction(self) -> str | None:
        """The current step's instruction in guided mode; None in agent mode (goal only)."""
        return self.current_step.instruction if self.mode == "guided" else None

    @property
    def ended(self) -> bool:
        return self.outcome is not None

    @property
    def budget(self) -> int:
        return self.task.budget

    # -- life cycle -----------------------------------------------------------------------------

    def reset(self) -> Observation:
        """The task's start state: the environment's reset, then the task's `start.prepare`."""
        t0 = time.perf_counter()
        self.observation, self._fault = None, None  # not reset until the reset is done
        try:
            obs = self.env.reset(self.task)
            for k, step in enumerate(self.task.start.prepare):
                obs = self._prepare(k, step)
        except BaseException as e:
            self._fault = f"the reset failed: {type(e).__name__}: {_first_line(e)}"
            raise
        self.achieved = [False] * len(self.task.steps)
        self.happened = set()
        self.required_at_start = {
            name: bool(self.env.check(done_if)) for name, done_if in self._required.items()
        }
        self._seen_false = {name for name, held in self.required_at_start.items() if not held}
        self.checkpoints_at_start = self._check_all(tuple(c.check for c in self.task.checkpoints))
        self._marks_false = {j for j, held in enumerate(self.checkpoints_at_start) if not held}
        self._marks_reached = set()
        self.harms, self._harmed = [], set()
        self.n = 0
        self.outcome, self.reason = None, ""
        self._intended = None
        self.observation = obs
        self._located_ahead()
        self.reset_s = time.perf_counter() - t0
        return obs

    def _prepare(self, k: int, step: StepSpec) -> Observation:
        """Perform `start.prepare` step `k` (0-based) as the oracle would."""
        box = self.env.locate(step.target) if step.target is not None else None
        to = self.env.locate(step.to) if step.to is not None else None
        for name, loc, found in (("target", step.target, box), ("to", step.to, to)):
            if loc is not None and found is None:
                raise DataError(
                    f"no element matches the start.prepare step's {name} on the settled start "
                    f"screen of {self.env.name}: {loc.model_dump(exclude_defaults=True)}",
                    Location(f"task {self.task.id}", field=f"start.prepare.{k}.{name}"),
                )
        action = oracle_step_action(step, box, to)
        if action is None or isinstance(action, actions.Infeasible):
            raise DataError(
                "a start.prepare step must act (an 'infeasible' step ends a task)",
                Location(f"task {self.task.id}", field=f"start.prepare.{k}.action"),
            )
        self.env.act(action)
        if step.done_if is not None and not self.env.check(step.done_if):
            raise EnvironmentFault(
                f"task {self.task.id}: start.prepare step {k + 1}: its done_if does not hold"
            )
        return self.env.observe()

    def start_checks(self) -> dict[str, list[bool]]:
        """Each success and each `fail_if` check on the start state, after `reset()` and before
        the first action: what an agent that ends at once (`done()`) is judged on; and each
        required step's `done_if` there (in `requires` order): the audit's reading of the
        start, as the journal keeps it (`success_each`, `fail_if_each`, `requires_each`), and
        each checkpoint's check there (`checkpoints_each`, with checkpoints only)."""
        if self.observation is None or self.n:
            raise EpisodeError("Episode.start_checks: after reset(), before the first step")
        out = {
            "success_each": self._check_all(self.task.success),
            "fail_if_each": self._check_all(self.task.fail_if),
            "requires_each": [self.required_at_start[r] for r in self.task.requires],
        }
        if self.task.checkpoints:
            out["checkpoints_each"] = list(self.checkpoints_at_start)
        return out

    # -- partial credit and harm ------------------------------------------------------------

    @property
    def reached(self) -> tuple[bool, ...]:
        """Each subgoal (`subgoals`) reached by now: a path step achieved, a required step
        happened, a checkpoint became true."""
        out = []
        for g in self.subgoals:
            if g.source == "step":
                out.append(self.achieved[g.index])
            elif g.source == "required":
                out.append(self.task.steps[g.index].name in self.happened)
            else:
                out.append(g.index in self._marks_reached)
        return tuple(out)

    @property
    def score(self) -> EpisodeScore:
        """The episode's standing for the rewards (`core.rewards`)."""
        return episode_score(self.harms, self.reached, self.outcome)

    def tally(self) -> dict[str, Any]:
        """The harm and the subgoals of this episode as the journal's task record keeps them
        (`tally_fields`)."""
        return tally_fields(self.task, self.harms, self.reached)

    def _read_checkpoints(self) -> None:
        """Read each checkpoint not reached yet: reached when it holds having been read false
        before (it became true)."""
        for j, c in enumerate(self.task.checkpoints):
            if j in self._marks_reached:
                continue
            if not self.env.check(c.check):
                self._marks_false.add(j)
            elif j in self._marks_false:
                self._marks_reached.add(j)

    def _judge_harm(self, fail: list[bool]) -> tuple[tuple[str, ...], tuple[HarmEvent, ...]]:
        """The harm rules that hold after action `n`: the kinds of those that end the episode
        (critical, major), and the events recorded now (each rule once per episode)."""
        ending: list[str] = []
        new: list[HarmEvent] = []
        for j, (c, holds) in enumerate(zip(self.task.fail_if, fail, strict=True)):
            if not holds:
                continue
            if c.label.ends_episode:
                ending.append(c.kind)
            if j not in self._harmed:
                self._harmed.add(j)
                new.append(HarmEvent(c.kind, f"fail_if.{j}", c.severity, c.dimension, self.n))
        self.harms.extend(new)
        return tuple(ending), tuple(new)

    def look(self) -> Observation:
        """The screen as it shows now, no action taken (an agent that waits: nothing of the
        budget); the current step's target located on it afresh (`located`)."""
        self._usable("look")
        try:
            obs = self.env.observe()
        except BaseException as e:
            self._fault = f"look: {type(e).__name__}: {_first_line(e)}"
            raise
        self.observation, self._intended = obs, None
        self._located_ahead()
        return obs

    # -- the oracle -----------------------------------------------------------------------------

    @property
    def located(self) -> Boxes | None:
        """`intended()` when it is already located on the current screen (no environment
        call), else None."""
        return self._intended

    def intended(self) -> Boxes:
        """The current step's target box (and a drag's release box) on the current screen;
        located once per screen (at once when the screen appears: `_located_ahead`)."""
        self._usable("intended")
        if self._intended is None:
            step = self.current_step
            box = self.env.locate(step.target) if step.target is not None else None
            to = self.env.locate(step.to) if step.to is not None else None
            self._intended = (box, to)
        return self._intended

    def _located_ahead(self) -> Boxes | None:
        """`intended()` on the screen that just appeared (the next turn needs it); None when
        the episode ended, or when locating failed: `intended()` then locates again when asked,
        where its caller handles the fault."""
        if self.ended:
            return None
        try:
            return self.intended()
        except Exception:
            return None

    def oracle_action(self) -> actions.LiveAction | None:
        """The action of the task's own path for the current step, on the current screen."""
        self._usable("oracle_action")
        return oracle_step_action(self.current_step, *self.intended())

    def locate(self, locator: Locator) -> PixelBox | None:
        """Where the element `locator` names is on the current screen (None: not there): the
        oracle's view of any element (a scripted policy's, a test's), no action taken."""
        self._usable("locate")
        return self.env.locate(locator)

    # -- one step -------------------------------------------------------------------------------

    def _check_all(self, specs: tuple[CheckSpec, ...]) -> list[bool]:
        return [bool(self.env.check(c)) for c in specs]

    def _success(self, each: list[bool]) -> bool:
        """Every success check holds (`each`) and every required step happened."""
        return all(each) and all(name in self.happened for name in self._required)

    def _unmet(self, each: list[bool]) -> str:
        """What of the success (`each`, as `_success` read it) does not hold, in words: the
        checks by kind and place (`ohif.route (success.1)`), the required steps not done."""
        checks = [
            f"{c.kind} (success.{j})"
            for j, (c, ok) in enumerate(zip(self.task.success, each, strict=True))
            if not ok
        ]
        steps = [repr(name) for name in self._required if name not in self.happened]
        out = []
        if checks:
            out.append(f"success check{'s' if len(checks) > 1 else ''} {', '.join(checks)} "
                       f"{'do' if len(checks) > 1 else 'does'} not hold")  # fmt: skip
        if steps:
            out.append(f"required step{'s' if len(steps) > 1 else ''} {', '.join(steps)} "
                       f"did not happen")  # fmt: skip
        return "; ".join(out)

    def _usable(self, what: str) -> None:
        """`EpisodeError` when `what` cannot be done now: before `reset()`, after a fault."""
        if self._fault is not None:
            raise EpisodeError(
                f"Episode.{what}: the environment failed in this episode ({self._fault}); "
                "reset() it (a fresh environment, when the fault was the environment's)"
            )
        if self.observation is None:
            raise EpisodeError(f"Episode.{what} before reset()")

    def step(self, action: actions.LiveAction | None, *, flags: tuple[str, ...] = ()) -> StepResult:
        """Take one action (None: the agent gave no readable action; it costs one action).
        An action the environment cannot execute (`core.executable`) is not executed: a
        no-action step with the flag `not_executable:<why>`. Anything that is not an action is
        refused (`NotAnAction`) and costs nothing."""
        if action is not None and not actions.is_action(action):
            raise actions.NotAnAction(
                f"Episode.step takes a live action (medspot.live.core.actions: Click, Drag, "
                f"Scroll, TypeText, Key, Done, Infeasible, ToolCall) or None, not {action!r}"
            )
        self._usable("step")
        if self.ended:
            raise EpisodeError(f"Episode.step after the episode ended ({self.outcome})")
        try:
            return self._step(action, tuple(flags))
        except BaseException as e:
            self._fault = f"action {self.n}: {type(e).__name__}: {_first_line(e)}"
            raise

    def _step(self, action: actions.LiveAction | None, flags: tuple[str, ...]) -> StepResult:
        env_t = time.perf_counter()
        self.n += 1
        k = self.current
        step = self.task.steps[k]
        box, to_box = self.intended()
        if action is None or isinstance(action, actions.Done | actions.Infeasible):
            return self._ending(action, k, box, to_box, flags, env_t)
        if isinstance(action, actions.ToolCall):
            try:
                result = self._tool(action)
            except ToolArgsError as e:  # nothing ran: a no-action step that says why
                return self._ending(
                    None, k, box, to_box, (*flags, e.flag), env_t, str(e), {"tool_error": str(e)}
                )
            element, hit = None, None
        else:
            assert self.observation is not None
            refused = unexecutable(action, capabilities_of(self.env, self.observation))
            if refused is not None:
                return self._ending(
                    action, k, box, to_box, (*flags, refused.flag), env_t, refused.message
                )
            p = actions.point_of(action)
            element = self.env.element_at(p.x, p.y) if p is not None else None
            hit = hit_intended(step, action, box, to_box)
            result = self.env.act(action)
        return self._executed(action, k, (box, to_box), element, hit, result, flags, env_t)

    def step_outside(
        self,
        result: ActResult,
        ending: actions.Done | actions.Infeasible | None = None,
        *,
        flags: tuple[str, ...] = (),
    ) -> StepResult:
        """One turn whose actions someone else executed on the application (BrowserGym runs its
        own action set on the page the environment drives); `result`: the environment's settle
        after them. Judged as an executed action is (one action of the budget; the path
        advanced by `done_if` only, no point being known), then `ending` (the agent said in
        the same turn that it is done, or reported the task infeasible), when neither harm
        nor success ended the episode, as `step(ending)` judges it. The result's `action` is
        the ending (None without one)."""
        if ending is not None and not isinstance(ending, actions.Done | actions.Infeasible):
            raise actions.NotAnAction(
                f"Episode.step_outside: an ending is done() or infeasible(...), not {ending!r}"
            )
        self._usable("step_outside")
        if self.ended:
            raise EpisodeError(f"Episode.step_outside after the episode ended ({self.outcome})")
        try:
            env_t = time.perf_counter()
            self.n += 1
            k = self.current
            boxes = self.intended()
            return self._executed(ending, k, boxes, None, None, result, tuple(flags), env_t, ending)
        except BaseException as e:
            self._fault = f"action {self.n}: {type(e).__name__}: {_first_line(e)}"
            raise

    def _executed(
        self,
        action: actions.LiveAction | None,
        k: int,
        boxes: Boxes,
        element: ElementInfo | None,
        hit: bool | None,
        result: ActResult,
        flags: tuple[str, ...],
        env_t: float,
        ending: actions.Done | actions.Infeasible | None = None,
    ) -> StepResult:
        """The judgement of an executed action (and of an `ending` given in the same turn):
        the next screen, the path, the required steps, harm, success, the ending, the budget."""
        box, to_box = boxes
        obs = self.env.observe()
        self.observation = obs
        self._intended = None
        newly, done_if = self._advance(k, hit)
        happened_now = self._check_required()
        self._read_checkpoints()
        fail = self._check_all(self.task.fail_if)
        fired, harms = self._judge_harm(fail)
        each = [] if self.task.infeasible else self._check_all(self.task.success)
        success = False if self.task.infeasible else self._success(each)
        terminated = bool(fired) or success
        if fired:
            self.outcome, self.reason = "harmful", "fail_if: " + ", ".join(fired)
        elif success:
            self.outcome, self.reason = "success", "success checks hold"
        elif ending is not None:
            each = each or self._check_all(self.task.success)
            success, terminated = self._judge_ending(ending, each), True
        elif self.n >= self.budget:
            self.outcome, self.reason = "failure", f"budget of {self.budget} actions spent"
        return StepResult(
            n=self.n, observation=obs, action=action, executed=True, flags=flags,
            target_step=k + 1, intended_box=box, intended_to=to_box, element=element,
            hit_intended=hit, achieved=tuple(newly), done_if=done_if,
            required_happened=happened_now, fired=fired, success=success,
            harmful=bool(fired), terminated=terminated,
            truncated=not terminated and self.outcome is not None, outcome=self.outcome,
            reason=self.reason, settle_s=result.settle_s, changed=result.changed,
            info=dict(result.info), success_each=tuple(each), fail_each=tuple(fail),
            next_intended=self._located_ahead(), env_s=time.perf_counter() - env_t,
            quality=self._quality(), harms=harms, subgoals=self.reached,
        )  # fmt: skip

    def _tool(self, call: actions.ToolCall) -> ActResult:
        """Run a tool call of the tools track; what it found goes to the step's info."""
        if self.tools is None:
            raise ToolArgsError(f"no tools are offered for this task ({call.name!r})", UNKNOWN_TOOL)
        t0 = time.perf_counter()
        out = run_tool(self.tools, call.name, call.args)
        tool = {"name": call.name, "text": out.text, "data": dict(out.data)}
        return ActResult(settle_s=time.perf_counter() - t0, changed=None, info={"tool": tool})

    def _advance(self, k: int, hit: bool | None) -> tuple[list[int], bool | None]:
        """Achieve the current step and the following ones whose `done_if` already holds."""
        steps = self.task.steps
        newly: list[int] = []
        done_if: bool | None = None
        j = k
        while j < len(steps):
            s = steps[j]
            if s.done_if is not None:
                ok = bool(self.env.check(s.done_if))
                done_if = ok if j == k else done_if
                if s.name is not None and s.name in self._required:
                    self._read_required(s.name, ok)
                elif ok and s.name is not None:
                    self.happened.add(s.name)
            elif j == k:
                ok = bool(hit)
            else:
                break
            if not ok:
                break
            self.achieved[j] = True
            newly.append(j + 1)
            j += 1
        return newly, done_if

    def _quality(self) -> dict[str, float]:
        """The environment's measures of the end state (`task_quality(task)`, optional), once
        the episode has ended."""
        fn = getattr(self.env, "task_quality", None)
        if self.outcome is None or not callable(fn):
            return {}
        return {str(k): float(v) for k, v in dict(fn(self.task)).items()}

    def _read_required(self, name: str, holds: bool) -> None:
        """A reading of required step `name`'s `done_if` after an action: it has happened
        when it holds having been read false before (it became true)."""
        if not holds:
            self._seen_false.add(name)
        elif name in self._seen_false:
            self.happened.add(name)

    def _check_required(self) -> tuple[str, ...]:
        """The required steps that have happened (their `done_if` became true) by now."""
        now: list[str] = []
        for name, done_if in self._required.items():
            if name not in self.happened:
                self._read_required(name, bool(self.env.check(done_if)))
            if name in self.happened:
                now.append(name)
        return tuple(now)

    def _judge_ending(self, action: actions.Done | actions.Infeasible, each: list[bool]) -> bool:
        """The outcome of an ending (`done()` or `infeasible(...)`) on the state whose success
        checks read `each`: success when it is the task's right ending and the success holds."""
        right = isinstance(action, actions.Infeasible) == self.task.infeasible
        success = right and self._success(each)
        if success:
            self.outcome, self.reason = (
                "success",
                ("reported infeasible; nothing changed" if self.task.infeasible else "done"),
            )
        elif not right and isinstance(action, actions.Infeasible):
            self.outcome, self.reason = "failure", "reported infeasible (the task is not)"
        elif not right:
            self.outcome, self.reason = "failure", "done on an infeasible task"
        elif self.task.infeasible:  # the right ending, but not where the task started
            self.outcome = "failure"
            self.reason = f"reported infeasible, but {self._unmet(each)}"
        else:
            self.outcome, self.reason = "failure", "done without success"
        return success

    def _ending(
        self,
        action: actions.LiveAction | None,
        k: int,
        box: PixelBox | None,
        to_box: PixelBox | None,
        flags: tuple[str, ...],
        env_t: float,
        not_executed: str | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> StepResult:
        """A step that executes nothing: an ending, no answer, or an action the environment
        cannot execute (`not_executed` says why)."""
        assert self.observation is not None
        success, terminated = False, False
        hit: bool | None = None
        each: list[bool] = []
        fail: list[bool] = []
        if isinstance(action, actions.Done | actions.Infeasible):
            terminated = True
            if self.current_step.action == "infeasible":  # the path's own ending
                hit = hit_intended(self.current_step, action, box, to_box)
            each = self._check_all(self.task.success)
            fail = self._check_all(self.task.fail_if)  # recorded (the audit's start state)
            success = self._judge_ending(action, each)
        elif self.n >= self.budget:
            self.outcome, self.reason = "failure", f"budget of {self.budget} actions spent"
        return StepResult(
            n=self.n, observation=self.observation, action=action, executed=False, flags=flags,
            target_step=k + 1, intended_box=box, intended_to=to_box, element=None,
            hit_intended=hit, achieved=(), done_if=None, required_happened=(), fired=(),
            success=success, harmful=False, terminated=terminated,
            truncated=not terminated and self.outcome is not None, outcome=self.outcome,
            reason=self.reason, settle_s=None, changed=None,
            info=dict(info or {}), success_each=tuple(each), fail_each=tuple(fail),
            not_executed=not_executed, next_intended=self._located_ahead(),
            env_s=time.perf_counter() - env_t, quality=self._quality(), subgoals=self.reached,
        )  # fmt: skip


def episode_score(
    harms: Sequence[HarmEvent], reached: Sequence[bool], outcome: str | None
) -> EpisodeScore:
    """An episode's standing for the rewards (`core.rewards`) from its harm events, its
    subgoals reached and its outcome (None while it runs): `Episode.score`, and the driver's
    from the step results of an episode that may run elsewhere."""
    return EpisodeScore(
        progress=progress(reached) or 0.0,
        penalty=penalty(harms),
        ended=outcome is not None,
        success=outcome == "success",
    )


def tally_fields(
    task: LiveTask, harms: Sequence[HarmEvent], reached: Sequence[bool]
) -> dict[str, Any]:
    """An episode's harm events and subgoals as the journal's task record keeps them
    (`TaskRecord.harms`, `.subgoals`, `.subgoals_reached`, and what they give: `progress`,
    `first_failed_subgoal`): the runner gathers them from the episode's `StepResult`s (its
    episode may run elsewhere), `live serve` from its `Episode`."""
    names = [g.name for g in subgoals_of(task)]
    done = [bool(x) for x in reached] if reached else [False] * len(names)
    failed = first_failed(names, done)
    return {
        "harms": [h.to_json() for h in harms],
        "subgoals": names,
        "subgoals_reached": done,
        "progress": progress(done),
        "first_failed_subgoal": failed[1] if failed is not None else None,
    }


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0][:300]
