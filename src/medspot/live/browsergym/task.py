"""`MedspotBrowserTask`: one MedSPOT-Live task of a web environment as a BrowserGym task.

BrowserGym owns the browser: it launches chromium, makes a context and a page, hands the page to
`setup(page)`, executes the agent's actions on it (its own action set: `click(bid)`,
`mouse_click(x, y)`, `send_msg_to_user(...)`, `report_infeasible(...)`, ...) and calls
`validate(page, chat_messages)` after each. The task drives medspot's own environment on that
page (`PageDriven`: `attach_page`, `settle_page`), so starting the services, the start state,
the checks and the oracle are medspot's code, not a copy:

- `setup(page)`: a private folder, the environment made with `env_options` (seed, seed cache,
  Orthanc binary, the viewer's files, ...), its services started (a private Orthanc seeded with
  the studies; for `ohif` the viewer's server too), the page attached and brought to the task's
  start (route, `start.prepare`, measurements drawn) by the environment's reset through the
  `Episode`; returns the task's goal (medspot's agent mode: the goal only) and an info dict.
- `validate(page, chat_messages)`: the application settled after the turn (`settle_page`), then
  judged by `Episode.step_outside`: harm (a `fail_if` check fires) ends the episode with reward
  -1.0, success (every success check holds, every required step happened) with 1.0; an agent
  message of the turn ends it too (`report_infeasible(...)`: the agent reports the task
  infeasible, the right ending of an infeasible task; `send_msg_to_user(...)`: it says it is
  done), judged as medspot judges those endings; the task's step budget spent ends it with 0.0.
  One call is one action of the budget. `info["medspot"]` holds medspot's view of the episode.
- `cheat(page, chat_messages)`: the task's oracle path, each step's target located on the page
  and acted on through the `Episode` (infeasible tasks: the oracle's report is also added to
  the chat, as `report_infeasible` would); the next `validate` reports the outcome.
- `teardown()`: every process the environment started stopped, its folder removed (also when
  the task object is collected, or at exit).

An application that fails (Orthanc died, the page never settled) raises `EnvironmentFault` from
`setup` or `validate`: an error of the episode, never a miss.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from browsergym.core.task import AbstractBrowserTask

from medspot.errors import ConfigError, MedspotError
from medspot.live.browsergym.chromium import use_system_chromium
from medspot.live.core.actions import Done, Infeasible
from medspot.live.core.contract import ActResult, Environment
from medspot.live.core.episode import Episode, EpisodeError, StepResult
from medspot.live.core.tasks import LiveTask
from medspot.live.envs.envoptions import check_env_options
from medspot.live.envs.registry import create_environment

__all__ = [
    "HARM_REWARD",
    "SUCCESS_REWARD",
    "MedspotBrowserTask",
    "PageDriven",
    "ending_of",
]

log = logging.getLogger(__name__)
SUCCESS_REWARD = 1.0
HARM_REWARD = -1.0
AGENT_ROLES = ("assistant", "infeasible")  # the chat roles of the agent's own messages
# the web environments' options of the browser they launch themselves: BrowserGym's here
BROWSER_OPTIONS = ("headless", "chromium", "extra_args")


@runtime_checkable
class PageDriven(Protocol):
    """An environment that can drive a page someone else opened (the web environments)."""

    def attach_page(self, page: Any) -> None: ...

    def settle_page(self, page: Any) -> ActResult: ...


def ending_of(messages: Sequence[Mapping[str, Any]]) -> Done | Infeasible | None:
    """The ending the agent's new chat `messages` give: an infeasible report
    (`report_infeasible(reason)`, role "infeasible") before a message to the user (role
    "assistant", `send_msg_to_user(text)`: it says it is done); None without either."""
    ending: Done | Infeasible | None = None
    for m in messages:
        role, text = m.get("role"), str(m.get("message") or "")
        if role == "infeasible":
            return Infeasible(text or "reported infeasible")
        if role == "assistant":
            ending = Done()
    return ending


def _env_options(env: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The environment's options, typed as `--env-option` types them (a JSON-friendly text or
    number is read as the option's type); the browser's are BrowserGym's to set."""
    browser = sorted(set(options) & set(BROWSER_OPTIONS))
    if browser:
        raise ConfigError(
            f"{env}: {', '.join(browser)}: BrowserGym launches the browser (gym.make(..., "
            "headless=..., pw_chromium_kwargs={'executable_path': ...}))"
        )
    return check_env_options(env, options)


def _close_quietly(env: Environment, workdir: Path) -> None:
    try:
        env.close()
    except Exception as e:  # closing a broken environment may fail too
        log.warning("closing a live environment: %s", e)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


class MedspotBrowserTask(AbstractBrowserTask):  # type: ignore[misc]
    """One task (`task`) of the web environment `env_name` (see the module docstring).

    `env_options`: options of the environment's factory (`seed_cache`, `seed`,
    `orthanc_binary`, `ohif_dist`, `settle_timeout_s`, ...; not the browser's: BrowserGym's);
    `workroot`: the parent of the private folder (default: the system's temp folder)."""

    def __init__(
        self,
        seed: int | None,
        env_name: str,
        task: LiveTask,
        env_options: Mapping[str, Any] | None = None,
        workroot: str | Path | None = None,
    ) -> None:
        super().__init__(seed)
        if not isinstance(task, LiveTask):
            raise TypeError(f"MedspotBrowserTask takes a LiveTask, not {type(task).__name__}")
        self.env_name = env_name
        self.live_task = task
        self.env_options = _env_options(env_name, env_options or {})
        self.workroot = Path(workroot) if workroot is not None else None
        # what BrowserGym reads to launch the browser: the task's screen; no slowed input (the
        # environment waits for the application to settle after each turn)
        width, height = task.start.viewport
        self.viewport = {"width": int(width), "height": int(height)}
        self.slow_mo = 0
        self.timeout = 10000
        self.env: Environment | None = None
        self.episode: Episode | None = None
        self.last_result: StepResult | None = None
        self._seen = 0  # chat messages already read
        self._reported = False  # the episode's end was reported by validate
        self._finalizer: weakref.finalize[Any, Any] | None = None
        use_system_chromium()  # BrowserGym's chat window launches Playwright's own chromium

    # -- BrowserGym's task API ------------------------------------------------------------------

    def setup(self, page: Any) -> tuple[str, dict[str, Any]]:
        self.teardown()
        root = self.workroot
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        workdir = Path(tempfile.mkdtemp(prefix="medspot-bgym-", dir=root))
        try:
            env = create_environment(self.env_name, workdir=workdir, **self.env_options)
        except TypeError as e:  # an option the factory does not take
            shutil.rmtree(workdir, ignore_errors=True)
            raise ConfigError(f"{self.env_name}: {e} (an environment option)") from None
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        self._finalizer = weakref.finalize(self, _close_quietly, env, workdir)
        if not isinstance(env, PageDriven):
            self.teardown()
            raise ConfigError(f"{self.env_name} is not a web environment: BrowserGym drives pages")
        self.env = env
        env.attach_page(page)
        env.start()
        self.episode = Episode(env, self.live_task, mode="agent")
        self.episode.reset()
        self.last_result, self._seen, self._reported = None, 0, False
        return self.live_task.instruction, {"medspot": self._info()}

    def validate(
        self, page: Any, chat_messages: list[dict[str, Any]]
    ) -> tuple[float, bool, str, dict[str, Any]]:
        ep, env = self._started()
        if not ep.ended:
            ending = ending_of(self._new_messages(chat_messages))
            result = env.settle_page(page)
            self.last_result = ep.step_outside(result, ending)
        return self._report(ep)

    def cheat(self, page: Any, chat_messages: list[dict[str, Any]]) -> None:
        ep, env = self._started()
        if ep.ended:
            return
        env.settle_page(page)
        while not ep.ended:
            action = ep.oracle_action()
            if action is None:
                raise MedspotError(
                    f"{self.live_task.id}: the oracle's step {ep.current + 1} has no target on "
                    "the page (cheat() plays the task's path from where it stands)"
                )
            if isinstance(action, Infeasible):  # said in the chat, as report_infeasible does
                chat_messages.append(
                    {"role": "infeasible", "timestamp": time.time(), "message": action.reason}
                )
                self._seen = len(chat_messages)
            self.last_result = ep.step(action)

    def teardown(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # closes the environment and removes its folder, once
        self._finalizer, self.env, self.episode = None, None, None

    # -- medspot's view -------------------------------------------------------------------------

    def _started(self) -> tuple[Episode, PageDriven]:
        ep, env = self.episode, self.env
        if ep is None or env is None:
            raise EpisodeError(f"{self.live_task.id}: validate() or cheat() before setup()")
        assert isinstance(env, PageDriven)
        return ep, env

    def _new_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The chat messages since the last turn; BrowserGym's greeting and anything before the
        goal (the first user message) is not the agent's."""
        first_user = next(
            (i for i, m in enumerate(messages) if m.get("role") not in AGENT_ROLES), len(messages)
        )
        new = messages[max(self._seen, first_user) :]
        self._seen = len(messages)
        return new

    def _report(self, ep: Episode) -> tuple[float, bool, str, dict[str, Any]]:
        """(reward, done, message, info) for BrowserGym: the reward of the end once, when the
        episode ended (success 1.0, harm -1.0, any other failure 0.0)."""
        reward = 0.0
        if ep.ended and not self._reported:
            self._reported = True
            if ep.outcome == "success":
                reward = SUCCESS_REWARD
            elif ep.outcome == "harmful":
                reward = HARM_REWARD
        return reward, ep.ended, "", {"medspot": self._info()}

    def _info(self) -> dict[str, Any]:
        task, ep, res = self.live_task, self.episode, self.last_result
        info: dict[str, Any] = {
            "env": self.env_name,
            "task": task.id,
            "tags": list(task.tags),
            "infeasible_task": task.infeasible,
            "oracle_steps": len(task.steps),
            "budget": task.budget,
        }
        if ep is not None:
            info.update(n=ep.n, achieved_total=sum(ep.achieved), outcome=ep.outcome,
                        reason=ep.reason, harms=[h.to_json() for h in ep.harms])  # fmt: skip
        if res is not None:
            info.update(success=res.success, harmful=res.harmful, fired=list(res.fired),
                        url=res.observation.url)  # fmt: skip
        return info
