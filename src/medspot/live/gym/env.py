"""`LiveGymEnv`: one live environment (a real application) and its tasks as a `gymnasium.Env`.

    import gymnasium
    import medspot.live.gym  # registers medspot/<env>-v1

    env = gymnasium.make("medspot/orthanc-explorer-v1", chromium="/usr/bin/chromium")
    obs, info = env.reset(seed=0, options={"task": "open-study-ct-doe-john"})
    obs, reward, terminated, truncated, info = env.step("click(412, 233)")
    env.close()

Every step goes through the `Episode` (`medspot.live.core.episode`): the same step as the
runner's. `reset(seed=..., options=...)` picks the task (`options["task"]`, else one drawn with
the seeded generator from the environment's tasks) and the mode (`options["mode"]`: "guided",
the default of the constructor's `mode`, shows the current step's instruction; "agent" the goal
only). `step(action)` takes an action text in screenshot pixels (read by
`answer_reader.parse_action`: the text form `click(412, 233)`, `drag(...)`, `type("...")`,
`key("Enter")`, `scroll(x, y, dy)`, `done()`, `infeasible("...")`, or any form that reader
knows) or an action object (`medspot.live.core.actions`); a text with no readable action is a
no-action step (one action of the budget, nothing executed, flag `no_action`), and so is an
action the application cannot execute (a key its driver does not have, a point off the screen
or not finite, ...: flag `not_executable:<why>`, `info["not_executed"]` the reason; never an
`EnvironmentFault`); anything else (a number, a dict) is refused with `NotAnAction` (a
`TypeError`) and costs nothing. Reward (`reward=`, `medspot.live.core.rewards`): `success`
(the default), 1.0 on the step that ends the task with success, else 0.0; `safety`, the run's
safety score on the step that ends it (success minus the harm's penalties, clipped to
[-1, 1]); `shaped`, the progress each step made over the task's subgoals minus each harm's
penalty when it happens, with the completion term on the last step: an episode's shaped
rewards sum to its safety score. Harm, progress and the rest are in `info` (docs/live.md
"Gymnasium" lists the keys). `terminated`: the task ended (success, a `fail_if`
check, `done()` / `infeasible(...)`); `truncated`: the budget is spent.

The application is started at the first `reset()` in a private temporary folder (`workroot`, or
the system's temp folder) and `close()` ends every process it started and removes the folder.
An environment fault (the application died, an action never settled) propagates as
`EnvironmentFault` from `reset` or `step`; the next `reset()` starts a fresh application. A
reset that fails (an unknown task or option: `ConfigError`) leaves no episode: `step` asks for
a reset (`ResetNeeded`) and the next good reset works (the ids' checker, `checker.LiveEnvChecker`,
is not left broken by it).
"""

from __future__ import annotations

import io
import logging
import shutil
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
from medspot.live.core.contract import (
    Environment,
    EnvironmentFault,
    Observation,
)
from medspot.live.core.episode import MODES, Episode, EpisodeError, Mode, StepResult
from medspot.live.core.rewards import DEFAULT_REWARD, REWARDS, START, RewardKind, step_reward
from medspot.live.core.subgoals import progress
from medspot.live.envs.registry import create_environment
from medspot.live.gym.spaces import ActionSpace, is_action, observation_space, screen_size
from medspot.live.loop.envspec import EnvSpec
from medspot.spelling import suggestion

__all__ = ["NO_ACTION", "RESET_OPTIONS", "LiveGymEnv"]

log = logging.getLogger(__name__)
T = TypeVar("T")

RESET_OPTIONS = ("task", "mode")
Obs = dict[str, Any]


def _present(info: dict[str, Any]) -> dict[str, Any]:
    """`info` without its None values: a key with no value is absent (what Gymnasium's vector
    envs batch correctly, with their `_key` masks; a None next to a bool or a dict is not)."""
    return {k: v for k, v in info.items() if v is not None}


def _close_quietly(live: Environment | None, workdir: Path | None) -> None:
    """End the application's processes and remove its private folder (also at exit)."""
    try:
        if live is not None:
            live.close()
    except Exception as e:  # closing a broken environment may fail too
        log.warning("closing a live environment: %s", e)
    finally:
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)


class LiveGymEnv(gymnasium.Env[Obs, Any]):
    """A live environment's tasks as a Gymnasium environment (see the module docstring).

    `env_name`: the live environment (`medspot.live.env_names()`); `tasks`: task ids to draw
    from (default: all of the task file); `tasks_file`: a task file (default: the packaged
    one); `mode`: "guided" or "agent" (reset's `options["mode"]` overrides it per episode);
    `reward`: "success" (the default), "safety" or "shaped" (`core.rewards`); `workroot`: the
    parent of the private folder; every other keyword is an option of the
    environment's factory (`chromium`, `headless`, `seed_cache`, `seed` (the seeded studies),
    ...). They make its `live_spec` (`EnvSpec`, checked at once: a bad option or task id is a
    `ConfigError` before anything starts)."""

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
        workroot: str | Path | None = None,
        **env_options: Any,
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r} (known: {', '.join(MODES)})")
        if reward not in REWARDS:
            raise ConfigError(f"unknown reward {reward!r} (known: {', '.join(REWARDS)})")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"unknown render_mode {render_mode!r} (known: rgb_array)")
        # the environment, its options and tasks, checked at once (one in-process instance:
        # no executor, no spare)
        self.live_spec = EnvSpec(
            env_name, env_options=env_options, task_ids=tuple(tasks or ()),
            tasks_file=Path(tasks_file) if tasks_file is not None else None,
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
        self._workroot = self.live_spec.workroot
        self._env_options = dict(self.live_spec.env_options)
        self.live: Environment | None = None  # the medspot environment (the application)
        self.episode: Episode | None = None
        self.last_result: StepResult | None = None  # the full result of the last step
        self._standing = START
        self._workdir: Path | None = None
        self._started = False
        self._faulted = False
        self._screen: NDArray[np.uint8] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._build()

    # -- the application ------------------------------------------------------------------------

    def _build(self) -> None:
        """A fresh environment object in a fresh private folder (no process started yet)."""
        root = self._workroot
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="medspot-gym-", dir=root))
        try:
            live = create_environment(self.env_name, workdir=workdir, **self._env_options)
        except TypeError as e:  # an option the factory does not take
            shutil.rmtree(workdir, ignore_errors=True)
            raise ConfigError(f"{self.env_name}: {e} (an environment option)") from None
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        self.live, self._workdir, self._started, self._faulted = live, workdir, False, False
        self._finalizer = weakref.finalize(self, _close_quietly, live, workdir)

    def _discard(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closes the environment and removes its folder, once
        self.live, self._workdir, self._finalizer = None, None, None
        self.episode = None

    def _call(self, fn: Callable[[], T]) -> T:
        """An environment call; any failure marks the application as faulted (the next reset
        starts a fresh one); a failure that is not a medspot error is an EnvironmentFault."""
        try:
            return fn()
        except (NotAnAction, EpisodeError):  # the caller's mistake: the application is fine
            raise
        except MedspotError:
            self._faulted = True
            raise
        except Exception as e:  # a crashed browser / dead process surfaces as anything
            self._faulted = True
            raise EnvironmentFault(f"{self.env_name}: {type(e).__name__}: {e}") from e

    def _ensure(self) -> Environment:
        if self._faulted or self.live is None:
            self._discard()
            self._build()
        live = self.live
        assert live is not None
        if not self._started:
            self._call(live.start)
            self._started = True
        return live

    # -- observations and info --------------------------------------------------------------

    def _pixels(self, obs: Observation) -> NDArray[np.uint8]:
        with Image.open(io.BytesIO(obs.png)) as im:
            rgb = np.array(im.convert("RGB"), dtype=np.uint8)
        if rgb.shape != (self.screen[1], self.screen[0], 3):
            self._faulted = True
            raise EnvironmentFault(
                f"{self.env_name}: a screenshot of {rgb.shape[1]}x{rgb.shape[0]}, "
                f"not the task's {self.screen[0]}x{self.screen[1]}"
            )
        return rgb

    def _observation(self, obs: Observation) -> Obs:
        ep = self.episode
        assert ep is not None
        self._screen = self._pixels(obs)
        return {
            "screen": self._screen.copy(),
            "goal": ep.goal,
            "instruction": ep.instruction or "",
        }

    def _info(self, obs: Observation) -> dict[str, Any]:
        ep = self.episode
        assert ep is not None
        return _present(
            {
                "env": self.env_name,
                "task": ep.task.id,
                "mode": ep.mode,
                "goal": ep.goal,
                "instruction": ep.instruction,
                "step": ep.current + 1,
                "oracle_steps": len(ep.task.steps),
                "achieved_total": sum(ep.achieved),
                "n": ep.n,
                "budget": ep.budget,
                "infeasible_task": ep.task.infeasible,
                "tags": list(ep.task.tags),
                "subgoals": [g.name for g in ep.subgoals],
                "reward_kind": self.reward,
                "url": obs.url,
                "title": obs.title,
            }
        )

    def _step_info(self, res: StepResult, source: str) -> dict[str, Any]:
        info = self._info(res.observation)
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
        ep = self.episode
        if ep is not None and ep.ended:  # the run's safety score and all its harm, at its end
            info.update(safety_score=ep.score.safety, harms_total=len(ep.harms))
        return _present(info)

    # -- the Gymnasium API ----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[Obs, dict[str, Any]]:
        self.episode, self.last_result = None, None  # until this reset is done
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
        live = self._ensure()
        self.episode = Episode(live, task, mode=mode)
        self.last_result = None
        obs = self._call(self.episode.reset)
        self._standing = START  # where the episode stands for the rewards
        return self._observation(obs), self._info(obs)

    def _read(self, action: Any, ep: Episode) -> tuple[LiveAction | None, tuple[str, ...], str]:
        if isinstance(action, str):
            assert ep.observation is not None
            parsed = parse_action(action, (ep.observation.width, ep.observation.height))
            flags = parsed.flags + ((NO_ACTION,) if parsed.action is None else ())
            return parsed.action, flags, parsed.source
        if is_action(action):
            return action, (), "object"
        raise NotAnAction(
            f"a live action is an action text or a medspot.live action object, not {action!r}"
        )

    def step(self, action: Any) -> tuple[Obs, float, bool, bool, dict[str, Any]]:
        ep = self.episode
        if ep is None or self._faulted:
            raise ResetNeeded("call reset() before step() (and after an environment fault)")
        if ep.ended:
            raise ResetNeeded(f"the episode ended ({ep.outcome}: {ep.reason}); call reset()")
        act, flags, source = self._read(action, ep)
        res = self._call(lambda: ep.step(act, flags=flags))
        self.last_result = res
        obs = self._observation(res.observation)
        before, self._standing = self._standing, ep.score
        reward = step_reward(self.reward, before, self._standing)
        return obs, reward, res.terminated, res.truncated, self._step_info(res, source)

    def oracle_action(self) -> LiveAction | None:
        """The action of the task's own path for the current step on the current screen (the
        `Episode`'s oracle); None when its target is not on the screen."""
        ep = self.episode
        if ep is None or self._faulted:
            raise ResetNeeded("call reset() before oracle_action() (and after a fault)")
        return self._call(ep.oracle_action)

    def render(self) -> NDArray[np.uint8] | None:  # type: ignore[override]
        if self.render_mode != "rgb_array" or self._screen is None:
            return None
        return self._screen.copy()

    def close(self) -> None:
        """End every process this environment started and remove its private folder
        (idempotent)."""
        self._discard()
        self._screen = None
        super().close()
