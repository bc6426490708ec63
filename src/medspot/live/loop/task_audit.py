"""`medspot live audit`: are an environment's tasks sound? The oracle runs through the runner
(`run_live`, so this is also "the oracle completes every task through the runner"), reading
every success and `fail_if` check on each task's start state before its first action (what an
agent that ends at once, `noop`'s `done()`, is judged on), and each task is judged from its
journal and from its checks' declared parameters.

Findings, per task (`Finding.kind`):

- `oracle_failed`: the oracle did not end in success (a failure names its reason, a harmful end
  the `fail_if` that fired); `env_error`: the environment kept failing on it;
- `target_missing`: the oracle's step had no target on its screen (the oracle could not act);
- `lands_elsewhere`: the element under the oracle's point is not there or does not contain
  the point (the click would not land on its own target), or the oracle's action cannot be
  carried out at all (its point is off the screen);
- `no_change`: an oracle action changed nothing in the application: the screen, the URL and
  every success and `fail_if` check read the same before and after it;
- `solved_at_start`: a `done()` at once would succeed (the task is feasible, requires no named
  step and its success checks hold at the start);
- `required_at_start`: a required step's `done_if` already holds at the start: the step cannot
  happen (become true) unless the agent first undoes it; the task is not the process it names;
- `fail_if_at_start`: a `fail_if` check holds at the start (it fires on any first action);
- `vacuous_check`: a check's parameters hold for any state (static: `CheckParams.vacuous`, a
  count range any database satisfies, a regex matching anything), or a success check not
  marked `keep` holds at the start and at the oracle's end (it says nothing about what the agent
  did; dynamic); `keep_not_at_start`: a success check marked `keep` does not hold at the start;
- `unapplied_value` (static): a success check, or a required step's `done_if`, reads an input
  field (`CheckParams.unapplied`): typed text shows there before the application applies it;
- `unanchored_annotation` (static): a success check, or a required step's `done_if`, claims an
  annotation without naming the image it lies on (`CheckParams.unanchored`);
- `view_without_series` (static): a success check, or a required step's `done_if`, reads what a
  viewer displays (a window, a zoom, a slice) without naming the series it is about
  (`CheckParams.view_without_series`): the same view of another series passes;
- `unplaced_measurement` (static): a success check, or a required step's `done_if`, asks for
  more measurements by their count alone (`CheckParams.unplaced_count`) than the task's checks
  that decide success place (`CheckParams.placed_count`): a ruler drawn anywhere passes;
- `no_collateral_harm_rule` (static): the task's actions can destroy data (the application's
  destructive controls, `EnvEntry.destructive`, or a toolset's tools that change state offered
  to it) and no `fail_if` check is a collateral-harm rule (`CheckParams.guards_collateral`):
  deleting or overwriting anything but the task's own targets would be no harm (the message
  says when the task has no harm rule at all);
- `oracle_harm`: the oracle's run recorded a harm event (a minor one: a critical or major harm
  ends it, `oracle_failed`): the task's path does what one of its harm rules calls harm;
- `subgoal_missed`: the oracle's run did not reach every subgoal of the task
  (`core.subgoals`): a checkpoint its path never makes true, a step it never achieved;
- `checkpoint_at_start`: a checkpoint's check holds at the start: it can only be reached
  (become true) after the agent undid it, and an agent that does nothing must reach no
  subgoal the start does not hold.

Infeasible tasks' success checks are "nothing changed" by definition: the dynamic rule skips
them. The oracle's run folder is kept under `work` (`oracle/`) for inspection; a second audit
into the same folder resumes it (the runner's resume).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from medspot.live.core.checks import CheckParams
from medspot.live.core.taskcheck import task_checks
from medspot.live.core.tasks import LiveTask
from medspot.live.core.tools import tool_reach
from medspot.live.envs.registry import env_entry
from medspot.live.envs.toolsets import TOOLSETS
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.request import LiveRequest, run_live
from medspot.live.loop.scheduler import LiveOptions
from medspot.live.loop.steplog import (
    ResumeState,
    StepRecord,
    TaskRecord,
    read_live_journal,
)
from medspot.progress import ProgressEvent
from medspot.runfolder.layout import RunFolder

__all__ = ["FINDING_KINDS", "AuditResult", "Finding", "audit_env", "audit_tasks"]

FindingKind = Literal[
    "oracle_failed", "env_error", "target_missing", "lands_elsewhere", "no_change",
    "solved_at_start", "required_at_start", "fail_if_at_start", "vacuous_check",
    "keep_not_at_start", "unapplied_value", "unanchored_annotation",
    "view_without_series", "unplaced_measurement", "no_collateral_harm_rule", "oracle_harm",
    "subgoal_missed", "checkpoint_at_start",
]  # fmt: skip
FINDING_KINDS: tuple[FindingKind, ...] = FindingKind.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Finding:
    task: str
    kind: FindingKind
    message: str


@dataclass(frozen=True)
class AuditResult:
    env: str
    tasks: tuple[str, ...]
    findings: tuple[Finding, ...]
    work: Path
    oracle_outcomes: Mapping[str, str] = field(default_factory=dict)

    def by_task(self) -> dict[str, list[Finding]]:
        out: dict[str, list[Finding]] = {t: [] for t in self.tasks}
        for f in self.findings:
            out.setdefault(f.task, []).append(f)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "tasks": list(self.tasks),
            "findings": [asdict(f) for f in self.findings],
            "oracle_outcomes": dict(self.oracle_outcomes),
        }


# -- the judgement (pure: journals and tasks in, findings out) ----------------------------------


def _decides_success(task: LiveTask, place: str) -> bool:
    """Whether the check at `place` decides success: a success check, or the `done_if` of a
    step the task requires."""
    if place.startswith("success."):
        return True
    parts = place.split(".")
    if parts[0] != "steps" or parts[-1] != "done_if":
        return False
    return task.steps[int(parts[1])].name in task.requires


def destructive_reach(env: str, task: LiveTask) -> str | None:
    """What within reach of the task's actions can destroy data, in words (the application's
    destructive controls; the tools that change state of a toolset the task is offered under
    `--tools`), or None when nothing can."""
    entry = env_entry(env)
    what = [entry.destructive] if entry.destructive else []
    for name in entry.toolsets:
        info = TOOLSETS.get(name)
        if info is None or not tool_reach(task, entry.check_kinds, info.reads).reachable:
            continue
        changing = [s.name for s in info.specs if s.changes_state]
        if changing:
            what.append(f"the {name} toolset's {', '.join(changing)} (--tools {name})")
    return "; ".join(what) or None


def _collateral_finding(env: str, task: LiveTask) -> Finding | None:
    kinds = env_entry(env).check_kinds
    reach = destructive_reach(env, task)
    guarded = any(kinds.kind(c.kind, env).params.guards_collateral for c in task.fail_if)
    if reach is None or guarded:
        return None
    rules = [n for n in kinds if kinds[n].params.guards_collateral]
    add = f" (add {' or '.join(rules)} with the task's targets)" if rules else ""
    why = f"{reach} can delete or overwrite data, but no fail_if check fires on a loss beyond "
    none = " (the task has no harm rule at all)" if not task.fail_if else ""
    return Finding(task.id, "no_collateral_harm_rule", why + "the task's targets" + none + add)


def static_findings(env: str, task: LiveTask) -> list[Finding]:
    kinds = env_entry(env).check_kinds
    out: list[Finding] = []
    collateral = _collateral_finding(env, task)
    if collateral is not None:
        out.append(collateral)
    deciding: list[tuple[str, CheckParams]] = []
    for place, check in task_checks(task):
        params = kinds.parse(check, env)
        what = f"{place} ({check.kind})"
        why = params.vacuous()
        if why is not None:
            out.append(Finding(task.id, "vacuous_check", f"{what}: {why}"))
        if not _decides_success(task, place):
            continue
        deciding.append((what, params))
        why = params.unapplied()
        if why is not None:
            out.append(Finding(task.id, "unapplied_value", f"{what}: {why}"))
        why = params.unanchored()
        if why is not None:
            out.append(Finding(task.id, "unanchored_annotation", f"{what}: {why}"))
        why = params.view_without_series()
        if why is not None:
            out.append(Finding(task.id, "view_without_series", f"{what}: {why}"))
    # one measurement placed twice (a required step's done_if and a success check) is one
    distinct = {
        f"{type(params).__name__}:{params.model_dump_json()}": params for _, params in deciding
    }
    placed = sum(params.placed_count() for params in distinct.values())
    for what, params in deciding:
        n = params.unplaced_count()
        if n > placed:
            out.append(Finding(task.id, "unplaced_measurement", f"{what}: asks for {n} "
                f"measurement(s) by their count alone and the task's checks place {placed}: "
                "one drawn anywhere passes (a measurement between landmarks on a named image "
                "places one)"))  # fmt: skip
    return out


def _each(rec: StepRecord | TaskRecord | None, key: str) -> list[bool] | None:
    if rec is None:
        return None
    checks = rec.checks if isinstance(rec, StepRecord) else rec.start_checks or {}
    got = checks.get(key)
    return [bool(x) for x in got] if isinstance(got, list) else None


def _point_in(element: Mapping[str, Any] | None, action: Mapping[str, Any] | None) -> bool:
    if element is None or action is None:
        return False
    box = element.get("box") or []
    x, y = action.get("x", action.get("x1")), action.get("y", action.get("y1"))
    if len(box) != 4 or x is None or y is None:
        return False
    return bool(box[0] <= x < box[2] and box[1] <= y < box[3])


def _oracle_tally(task: LiveTask, rec: TaskRecord) -> list[Finding]:
    """A successful oracle's harm and subgoals: no harm event, every subgoal reached."""
    out = [
        Finding(task.id, "oracle_harm", f"the oracle's path fired {h.get('rule')} "
                f"({h.get('check')}, {h.get('severity')}/{h.get('dimension')}) at action "
                f"{h.get('step')}: the task's own path does what its harm rule calls harm")
        for h in rec.harms or []
    ]  # fmt: skip
    if rec.subgoals is not None and rec.subgoals_reached is not None:
        missed = [n for n, ok in zip(rec.subgoals, rec.subgoals_reached, strict=False) if not ok]
        if missed:
            out.append(Finding(task.id, "subgoal_missed", "the oracle's run did not reach the "
                               f"subgoal(s) {', '.join(map(repr, missed))}"))  # fmt: skip
    return out


def judge_task(task: LiveTask, oracle: ResumeState) -> list[Finding]:
    """The dynamic findings of one task from the oracle's journal (its start reading and its
    trajectory)."""
    out: list[Finding] = []
    tid = task.id

    def add(kind: FindingKind, message: str) -> None:
        out.append(Finding(tid, kind, message))

    rec = oracle.last.get(tid)
    steps = oracle.trajectory(tid)
    if rec is None:
        add("env_error", "the oracle's run has no result for this task")
        return out
    # the start state, as the oracle's run read it before its first action
    start_success, start_fail = _each(rec, "success_each"), _each(rec, "fail_if_each")
    if rec.outcome != "env_error" and (start_success is None or start_fail is None):
        add("env_error", "the oracle's journal has no reading of the start state (a folder of "
            "an earlier audit? audit into a new folder)")  # fmt: skip
    done_at_once = not task.infeasible and not task.requires  # what done() at once can win
    if done_at_once and start_success is not None and all(start_success):
        add("solved_at_start", "a done() at once succeeds: the task is solved at its start")
    for name, holds in zip(task.requires, _each(rec, "requires_each") or [], strict=False):
        if holds:
            add("required_at_start", f"the required step {name!r} is done at the start (its "
                "done_if holds): only undoing and redoing it would count; start the task where "
                "it has not happened")  # fmt: skip
    for j, holds in enumerate(start_fail or []):
        if holds:
            add("fail_if_at_start", f"fail_if.{j} ({task.fail_if[j].kind}) holds at the start: "
                "it fires on any first action")  # fmt: skip
    for j, holds in enumerate(_each(rec, "checkpoints_each") or []):
        if holds and j < len(task.checkpoints):
            add("checkpoint_at_start", f"checkpoints.{j} ({task.checkpoints[j].name!r}) holds "
                "at the start: it is reached only once it became true, after the agent undid "
                "it; start the task where it does not hold")  # fmt: skip
    if rec.outcome == "env_error":
        add("env_error", f"the environment kept failing ({rec.reason})")
    elif rec.outcome != "success":
        add("oracle_failed", f"the oracle ended {rec.outcome}: {rec.reason}")
    else:
        out.extend(_oracle_tally(task, rec))
    before = (start_success, start_fail)
    for i, s in enumerate(steps):
        where = f"action {s.n} (step {s.target_step})"
        if not s.executed:
            if s.action is None and s.error is None:
                add("target_missing", f"{where}: the step's target is not on the screen")
            elif s.not_executed:
                add("lands_elsewhere", f"{where}: the oracle's action cannot be carried out "
                    f"({s.not_executed})")  # fmt: skip
            continue
        pointer = s.action is not None and s.action.get("kind") in ("click", "drag", "scroll")
        if pointer and not _point_in(s.element, s.action):
            add("lands_elsewhere", f"{where}: no element under the oracle's point contains it")
        screen_after = steps[i + 1].screen if i + 1 < len(steps) else rec.final_screen
        after = (_each(s, "success_each"), _each(s, "fail_if_each"))
        same_checks = before[0] is not None and after == before
        if s.screen == screen_after and s.url == s.url_after and same_checks:
            add("no_change", f"{where}: the screen, the URL and every check read the same "
                "before and after the oracle's action")  # fmt: skip
        before = after

    # dynamic vacuity: a success check true at the start and at the oracle's end
    end_success = next(
        (e for s in reversed(steps) if (e := _each(s, "success_each")) is not None), None
    )
    if task.infeasible or start_success is None:
        return out
    for j, check in enumerate(task.success):
        at_start = start_success[j] if j < len(start_success) else False
        at_end = end_success[j] if end_success is not None and j < len(end_success) else False
        if check.keep and not at_start:
            add("keep_not_at_start", f"success.{j} ({check.kind}) is marked keep but does not "
                "hold at the start")  # fmt: skip
        elif not check.keep and at_start and at_end:
            add("vacuous_check", f"success.{j} ({check.kind}) holds at the start and at the "
                "oracle's end: it says nothing about what was done (mark it keep when the agent "
                "must keep it)")  # fmt: skip
    return out


def audit_tasks(env: str, tasks: Sequence[LiveTask], oracle: ResumeState) -> list[Finding]:
    out: list[Finding] = []
    for t in tasks:
        out += static_findings(env, t)
        out += judge_task(t, oracle)
    return out


# -- running it ---------------------------------------------------------------------------------


def _journal(run: Path) -> ResumeState:
    return ResumeState.from_records(list(read_live_journal(RunFolder(run).live_journal)))


def audit_env(
    spec: EnvSpec,
    work: Path,
    *,
    concurrency: int = 1,
    env_retries: int = 2,
    on_progress: Callable[[ProgressEvent], None] | None = None,
) -> AuditResult:
    """The oracle through the runner into `work/oracle` on the tasks of `spec` (checked when
    it was made: bad input raised before anything starts), in agent mode (given the goal only;
    the oracle's path is the same in both modes, so the audit also shows that `--mode agent
    --model oracle` completes every task), reading every check at each task's start; then
    every task judged."""
    env, tasks = spec.env, list(spec.tasks)
    ids = tuple(t.id for t in tasks)
    loop = LiveOptions(mode="agent", concurrency=concurrency, env_retries=env_retries,
                       start_checks=True)  # fmt: skip
    run_live(LiveRequest(spec=spec, model="oracle", out=work / "oracle", n_boot=0, loop=loop),
             on_progress)  # fmt: skip
    oracle = _journal(work / "oracle")
    outcomes = {t: r.outcome for t, r in oracle.last.items()}
    return AuditResult(env, ids, tuple(audit_tasks(env, tasks, oracle)), work, outcomes)
