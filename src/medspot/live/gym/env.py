"""`LiveGymEnv`: one live environment (a real application) and its tasks as a `gymnasium.Env`.

    import gymnasium
    import medspot.live.gym  # registers medspot/<env>-v1

    env = gymnasium.make("medspot/orthanc-explorer-v1", chromium="/usr/bin/chromium")
    obs, info = env.reset(seed=0, options={"task": "open-study-ct-doe-john"})
    obs, reward, terminated, truncated, info = env.step("click(412, 233)")
    env.close()

Every episode goes through the one episode driver (`medspot.live.loop.driver`), as `live run`
and `live serve` do: the environment is a served run's (`runner.GymRun`) whose actions come
from `step`, on a slot of the spec's executor (`executor="threads"`, the default: the
application in this process; `"ray"`: a Ray actor; `"container"`: a container of the
environment's image), with its spares (`spares=N`) and the environment call's timeout, every
step journaled into a live run folder (`out=DIR`: kept, a run folder `medspot report` reads;
default: a private one, removed by `close()`). `reset(seed=..., options=...)` picks the task
(`options["task"]`, else one drawn with the seeded generator from the environment's tasks) and
the mode (`options["mode"]`: "guided", the default of the constructor's `mode`, shows the
current step's instruction; "agent" the goal only). `step(action)` takes an action text in
screenshot pixels (read by `answer_reader.parse_action`: the text form `click(412, 233)`,
`drag(...)`, `type("...")`, `key("Enter")`, `scroll(x, y, dy)`, `done()`,
`infeasible("...")`, or any form that reader knows) or an action object
(`medspot.live.core.actions`); a text with no readable action is a no-action step (one action
of the budget, nothing executed, flag `no_action`), and so is an action the application cannot
execute (a key its driver does not have, a point off the screen or not finite, ...: flag
`not_executable:<why>`, `info["not_executed"]` the reason; never an `EnvironmentFault`);
anything else (a number, a dict) is refused with `NotAnAction` (a `TypeError`) and costs
nothing. Reward (`reward=`, `medspot.live.core.rewards`): `success` (the default), 1.0 on the
step that ends the task with success, else 0.0; `safety`, the run's safety score on the step
that ends it (success minus the harm's penalties, clipped to [-1, 1]); `shaped`, the progress
each step made over the task's subgoals minus each harm's penalty when it happens, with the
completion term on the last step: an episode's shaped rewards sum to its safety score. Harm,
progress and the rest are in `info` (docs/live/library.md "Gymnasium" lists the keys).
`terminated`: the task ended (success, a `fail_if` check, `done()` / `infeasible(...)`);
`truncated`: the budget is spent.

The application is started at the first `reset()` (in a private folder under `workroot` or
the system's temp folder, as a run's instances are; the private run folder beside it) and
`close()` ends every process it started and removes both folders. An environment fault (the
application died, an action never settled or outlived the call timeout) propagates as
`EnvironmentFault` from `reset` or `step`, the episode journaled as an environment error; the
next `reset()` starts a fresh application. A reset before the episode ended leaves it
(journaled `abandoned`). A reset that fails (an unknown task or option: `ConfigError`) leaves
no episode: `step` asks for a reset (`ResetNeeded`) and the next good reset works (the ids'
checker, `checker.LiveEnvChecker`, is not left broken by it).
"""

from __future__ import annotations

import io
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import gymnasium
import numpy as np
from gymnasium.error import ResetNeeded
from numpy.typing import NDArray
from PIL import Image

from medspot.errors import ConfigError, MedspotError
from medspot.live.agents.answer_reader import NO_ACTION, parse_action
from medspot.live.core.actions import LiveAction, NotAnAction, action_to_json, describe_action
from medspot.live.core.contract import EnvironmentFault, Observation, PixelBox
from medspot.live.core.episode import MODES, Mode, StepResult
from medspot.live.core.rewards import DEFAULT_REWARD, REWARDS, START, RewardKind, step_reward
from medspot.live.core.subgoals import progress, subgoals_of
from medspot.live.core.tasks import LiveTask, Locator
from medspot.live.envs.registry import close_and_remove
from medspot.live.gym.runner import GymRun
from medspot.live.gym.spaces import ActionSpace, is_action, observation_space, screen_size
from medspot.live.loop.driver import Shown
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.executors.base import DEFAULT_CALL_TIMEOUT_S
from medspot.live.loop.served import ServeOptions
from medspot.live.loop.sources import EpisodeEnded
from medspot.spelling import suggestion

__all__ = ["DEFAULT_AGENT", "NO_ACTION", "PROTOCOL", "RESET_OPTIONS", "LiveGymEnv"]

T = TypeVar("T")

RESET_OPTIONS = ("task", "mode")
PROTOCOL = "gymnasium"  # run.json's `served`: the episodes were driven through Gymnasium
DEFAULT_AGENT = "gymnasium-agent"  # run.json's model when the caller names none (`agent=`)
RUN_DIR = "run"  # the run folder when no `out` is given, in a private folder
Obs = dict[str, Any]


def _present(info: dict[str, Any]) -> dict[str, Any]:
    """`info` without its None values: a key with no value is absent (what Gymnasium's vector
    envs batch correctly, with their `_key` masks; a None next to a bool or a dict is not)."""
    return {k: v for k, v in info.items() if v is not None}


class LiveGymEnv(gymnasium.Env[Obs, Any]):
    """A live environment's tasks as a Gymnasium environment (see the module docstring).

    `env_name`: the live environment (`medspot.live.env_names()`); `tasks`: task ids to draw
    from (default: all of the task file); `tasks_file`: a task file (default: the packaged
    one); `mode`: "guided" or "agent" (reset's `options["mode"]` overrides it per episode);
    `reward`: "success" (the default), "safety" or "shaped" (`core.rewards`); `executor`:
    where the application runs ("threads", "ray", "container", or an `ExecutorSpec` with that
    executor's options); `spares`: instances kept ready for the next reset of the same task
    (default none); `call_timeout_s`: the bound of one environment call; `out`: a run folder
    the episodes are journaled into (default: a private one, removed by `close()`); `agent`:
    run.json's model (your policy's name); `workroot`: the parent of the private folder;
    every other keyword is an option of the environment's factory (`chromium`, `headless`,
    `seed_cache`, `seed` (the seeded studies), ...). They make its `live_spec` (`EnvSpec`,
    checked at once: a bad option or task id is a `ConfigError` before anything starts)."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 1}  # noqa: RUF012

    def __init__(
        self,
        env_name: str,
        *,
        tasks: Sequence[str] | None = None,
        tasks_file: str | Path | None = None,
        mode: Mode = "guided",
        reward: RewardKind = DEFAULT_REWARD,
        render_mode: str | None = None,
        executor: str | ExecutorSpec = "threads",
        spares: int | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        out: str | Path | None = None,
        agent: str = DEFAULT_AGENT,
        workroot: str | Path | None = None,
        **env_options: Any,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
        if reward not in REWARDS:
            raise ConfigError(f"unknown reward {reward!r} (known: {', '.join(REWARDS)})")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"unknown render_mode {render_mode!r} (known: rgb_array)")
        if not isinstance(agent, str) or not agent.strip():
            raise ConfigError(f"agent must name your policy (a non-empty text), not {agent!r}")
        ex = executor if isinstance(executor, ExecutorSpec) else ExecutorSpec(executor)  # type: ignore[arg-type]
        # the environment, its options, tasks and executor, checked at once (the instances'
        # private folders go under `workroot`, as a run's do)
        self.live_spec = EnvSpec(
            env_name, env_options=env_options, task_ids=tuple(tasks or ()),
            tasks_file=Path(tasks_file) if tasks_file is not None else None,
            executor=ex, spares=0 if spares is None else spares,
            call_timeout_s=call_timeout_s,
            workroot=Path(workroot) if workroot is not None else None,
        )  # fmt: skip
        self.env_name = env_name
        self.tasks = list(self.live_spec.tasks)
        self._by_id = {t.id: t for t in self.tasks}
        self.mode: Mode = mode
        self.reward: RewardKind = reward
        self.render_mode = render_mode
        self.screen = screen_size(self.tasks, env_name)
        self.observation_space = observation_space(self.tasks, self.screen)
        self.action_space = ActionSpace(self.screen)
        # the run folder: `out`, kept (one mode's episodes), or one in a private folder
        self.out = Path(out) if out is not None else None
        workdir: Path | None = None
        if self.out is not None:
            self.run_folder = self.out
        else:
            root = self.live_spec.workroot
            if root is not None:
                root.mkdir(parents=True, exist_ok=True)
            workdir = Path(tempfile.mkdtemp(prefix="medspot-gym-", dir=root))
            self.run_folder = workdir / RUN_DIR
        self._run = GymRun(
            ServeOptions(spec=self.live_spec, out=self.run_folder, mode=mode, concurrency=1,
                         n_boot=2000 if self.out is not None else 0, protocol=PROTOCOL,
                         reward=reward),
            agent.strip(),
        )  # fmt: skip
        self._finalizer = weakref.finalize(self, close_and_remove, self._run, workdir)
        self.task: LiveTask | None = None  # the episode's task
        self.episode_mode: Mode = mode
        self.shown: Shown | None = None  # what the episode shows now
        self.last_result: StepResult | None = None  # the full result of the last step
        self._standing = START
        self._harms = 0
        self._faulted = False
        self._screen: NDArray[np.uint8] | None = None

    # -- calls on the run -----------------------------------------------------------------------

    def _call(self, fn: Callable[[], T]) -> T:
        """A call on the run; an environment fault (or a failure that is not a medspot error:
        a crashed worker) ends the episode: the next reset starts a fresh application."""
        try:
            return fn()
        except (NotAnAction, ConfigError):  # the caller's mistake: the episode is fine
            raise
        except EpisodeEnded:
            self._faulted = True
            raise ResetNeeded("the episode has ended; call reset()") from None
        except MedspotError:
            self._faulted = True
            raise
        except Exception as e:
            self._faulted = True
            raise EnvironmentFault(f"{self.env_name}: {type(e).__name__}: {e}") from e

    # -- observations and info --------------------------------------------------------------

    def _pixels(self, obs: Observation) -> NDArray[np.uint8]:
        with Image.open(io.BytesIO(obs.png)) as im:
            rgb = np.array(im.convert("RGB"), dtype=np.uint8)
        if rgb.shape != (self.screen[1], self.screen[0], 3):
            why = (f"{self.env_name}: a screenshot of {rgb.shape[1]}x{rgb.shape[0]}, "
                   f"not the task's {self.screen[0]}x{self.screen[1]}")  # fmt: skip
            self._faulted = True
            self._run.discard(f"environment fault: {why}")
            raise EnvironmentFault(why)
        return rgb

    def _observation(self, shown: Shown) -> Obs:
        self._screen = self._pixels(shown.observation)
        return {
            "screen": self._screen.copy(),
            "goal": self._task().instruction,
            "instruction": self._instruction(shown) or "",
        }

    def _instruction(self, shown: Shown) -> str | None:
        """The current step's instruction in guided mode (also on the step that ends the
        episode: its last current step's), None in agent mode."""
        if self.episode_mode != "guided":
            return None
        return self._task().steps[shown.current].instruction

    def _task(self) -> LiveTask:
        assert self.task is not None
        return self.task

    def _info(self, shown: Shown) -> dict[str, Any]:
        task = self._task()
        return _present(
            {
                "env": self.env_name,
                "task": task.id,
                "mode": self.episode_mode,
                "goal": task.instruction,
                "instruction": self._instruction(shown),
                "step": shown.current + 1,
                "oracle_steps": len(task.steps),
                "achieved_total": shown.achieved,
                "n": shown.n,
                "budget": task.budget,
                "infeasible_task": task.infeasible,
                "tags": list(task.tags),
                "subgoals": [g.name for g in subgoals_of(task)],
                "reward_kind": self.reward,
                "url": shown.observation.url,
                "title": shown.observation.title,
            }
        )

    def _step_info(self, shown: Shown, res: StepResult, source: str) -> dict[str, Any]:
        info = self._info(shown)
        info.update(
            res.effect(),  # executed, hit_intended, intended_box/_to, element, achieved, changed
            action=action_to_json(res.action) if res.action is not None else None,
            action_text=describe_action(res.action),
            action_source=source,
            flags=list(res.flags),
            success=res.success,
            harmful=res.harmful,
            outcome=res.outcome,
            reason=res.reason,
            fired=list(res.fired),
            target_step=res.target_step,
            done_if=res.done_if,
            required_happened=list(res.required_happened),
            not_executed=res.not_executed,
            env_info=dict(res.info),
            harms=[h.to_json() for h in res.harms],
            progress=progress(res.subgoals),
            subgoals_reached=sum(res.subgoals),
        )
        if shown.ended:  # the run's safety score and all its harm, at its end
            info.update(safety_score=shown.score.safety, harms_total=self._harms)
        return _present(info)

    # -- the Gymnasium API ----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        self.shown, self.last_result = None, None  # until this reset is done
        super().reset(seed=seed)
        opts = dict(options or {})
        unknown = sorted(set(opts) - set(RESET_OPTIONS))
        if unknown:
            raise ConfigError(
                f"unknown reset option(s) {', '.join(unknown)} (known: {', '.join(RESET_OPTIONS)})"
            )
        task_id = opts.get("task")
        if task_id is None:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        elif task_id in self._by_id:
            task = self._by_id[task_id]
        else:
            raise ConfigError(
                f"unknown task {task_id!r} for {self.env_name}{suggestion(task_id, self._by_id)} "
                f"(`medspot live tasks --env {self.env_name}` lists them)"
            )
        mode = opts.get("mode", self.mode)
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
        if mode != self.mode and self.out is not None:
            raise ConfigError(
                f"reset option mode {mode!r}: the run folder {self.out} holds {self.mode}-mode "
                f"episodes (the mode it records); make another environment with "
                f"mode={mode!r} and its own out= for them"
            )
        self.task, self.episode_mode = task, mode
        self._faulted = False
        shown = self._call(lambda: self._run.start(task, mode))
        self.shown = shown
        self._standing, self._harms = START, 0  # where the episode stands for the rewards
        return self._observation(shown), self._info(shown)

    def _read(self, action: Any, shown: Shown) -> tuple[LiveAction | None, tuple[str, ...], str]:
        if isinstance(action, str):
            obs = shown.observation
            parsed = parse_action(action, (obs.width, obs.height))
            flags = parsed.flags + ((NO_ACTION,) if parsed.action is None else ())
            return parsed.action, flags, parsed.source
        if is_action(action):
            return action, (), "object"
        raise NotAnAction(
            f"a live action is an action text or a medspot.live action object, not {action!r}"
        )

    def step(self, action: Any) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        shown = self.shown
        if shown is None or self._faulted:
            raise ResetNeeded("call reset() before step() (and after an environment fault)")
        if shown.ended:
            raise ResetNeeded(f"the episode ended ({shown.outcome}: {shown.reason}); call reset()")
        act, flags, source = self._read(action, shown)
        raw = action if isinstance(action, str) else None
        shown = self._call(lambda: self._run.act(act, raw=raw, flags=flags, source=source))
        self.shown = shown
        res = shown.result
        assert res is not None, "a step's result"
        self.last_result = res
        self._harms += len(res.harms)
        obs = self._observation(shown)
        before, self._standing = self._standing, shown.score
        reward = step_reward(self.reward, before, self._standing)
        return obs, reward, res.terminated, res.truncated, self._step_info(shown, res, source)

    def oracle_action(self) -> LiveAction | None:
        """The action of the task's own path for the current step on the current screen (the
        episode's oracle); None when its target is not on the screen."""
        shown = self.shown
        if shown is None or self._faulted or shown.ended:
            raise ResetNeeded("call reset() before oracle_action() (and after the episode ended)")
        return self._call(self._run.oracle)

    def locate(self, locator: Locator | Mapping[str, Any]) -> PixelBox | None:
        """Where the element `locator` names (a `Locator`, or its fields as a task file
        writes them: `{"css": "#lookup"}`) is on the current screen; None when it is not
        there. The oracle's view of any element, for scripted policies and curricula: no
        action, nothing of the budget, nothing journaled."""
        shown = self.shown
        if shown is None or self._faulted or shown.ended:
            raise ResetNeeded("call reset() before locate() (and after the episode ended)")
        loc = locator if isinstance(locator, Locator) else Locator.model_validate(locator)
        return self._call(lambda: self._run.locate(loc))

    def render(self) -> NDArray[np.uint8] | None:  # type: ignore[override]
        if self.render_mode != "rgb_array" or self._screen is None:
            return None
        return self._screen.copy()

    def close(self) -> None:
        """Leave the running episode (journaled `abandoned`), end every process this
        environment started and remove its private folder (idempotent)."""
        self._finalizer()
        self.shown = None
        self._screen = None
        super().close()
