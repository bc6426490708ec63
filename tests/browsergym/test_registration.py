"""`import medspot.live.browsergym` registers every packaged task of the web environments as
BrowserGym's benchmark packages register theirs; a task file's tasks through
`register_task_file` (under another namespace where ids would clash; a desktop environment's
file refused); the environment's options typed as `--env-option` types them, the browser's
refused (BrowserGym launches it); Playwright's own chromium lookup pointed at Debian's
chromium when Playwright has none; the agent's chat messages read as medspot's endings. No
browser is started here."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import medspot.live.browsergym as mbg
from medspot.errors import ConfigError
from medspot.live.browsergym import chromium
from medspot.live.browsergym.task import MedspotBrowserTask, ending_of
from medspot.live.core.actions import Done, Infeasible
from medspot.live.envs.taskfiles import env_task_file


def _task_of(gid: str, **task_kwargs: object) -> MedspotBrowserTask:
    """The task object `gym.make(gid)` builds at its reset (no browser is launched)."""
    env = gym.make(gid, task_kwargs=task_kwargs)
    browser_env: Any = env.unwrapped  # BrowserGym's BrowserEnv
    try:
        task = browser_env.task_entrypoint(seed=0, **browser_env.task_kwargs)
    finally:
        env.close()
    assert isinstance(task, MedspotBrowserTask)
    return task


@pytest.mark.parametrize("env", ["orthanc-explorer", "ohif"])
def test_every_packaged_task_is_registered(env: str) -> None:
    tasks = env_task_file(env)[0].tasks
    registered = sorted(k for k in gym.registry if k.startswith(f"browsergym/medspot.{env}."))
    assert registered == sorted(f"browsergym/medspot.{env}.{t.id}" for t in tasks)
    assert len(registered) > 40
    for t in tasks[:: len(tasks) // 5]:
        task = _task_of(mbg.gym_id(env, t.id))
        assert task.live_task == t and task.env_name == env
        assert task.viewport == {"width": t.start.viewport[0], "height": t.start.viewport[1]}


def test_the_ids_launch_debians_chromium_where_it_is_installed() -> None:
    spec = gym.spec("browsergym/medspot.ohif.measure-ab-ct-doe-john")
    expected = (
        {"executable_path": "/usr/bin/chromium"} if os.access("/usr/bin/chromium", os.X_OK) else {}
    )
    assert spec.kwargs["pw_chromium_kwargs"] == expected


def _task_file(path: Path, env: str, task_ids: list[str]) -> Path:
    tasks = [t for t in env_task_file(env)[0].tasks if t.id in task_ids]
    data = {
        "format_version": 1,
        "env": env,
        "tasks": [t.model_dump(mode="json", exclude_defaults=True) for t in tasks],
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_task_files_tasks_are_registered_through_a_function(tmp_path: Path) -> None:
    same = _task_file(tmp_path / "same.json", "orthanc-explorer", ["open-study-ct-doe-john"])
    # the same task as the packaged one: its id is already the same registration
    assert mbg.register_task_file(same) == [
        "browsergym/medspot.orthanc-explorer.open-study-ct-doe-john"
    ]
    data = json.loads(same.read_text(encoding="utf-8"))
    data["tasks"][0]["instruction"] = "Open the CT CHEST study of DOE^JOHN (my wording)"
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match="already registered with another task"):
        mbg.register_task_file(mine)
    ids = mbg.register_task_file(mine, namespace="mine")
    assert ids == ["browsergym/mine.orthanc-explorer.open-study-ct-doe-john"]
    task = _task_of(ids[0])
    assert task.live_task.instruction.endswith("(my wording)")
    assert mbg.register_task_file(mine, namespace="mine") == ids  # again: the same


def test_a_desktop_environments_task_file_is_refused(tmp_path: Path) -> None:
    tf = env_task_file("dicomscope")[0]
    path = _task_file(tmp_path / "desk.json", "dicomscope", [tf.tasks[0].id])
    with pytest.raises(ConfigError, match="not a web application; BrowserGym drives pages"):
        mbg.register_task_file(path)
    with pytest.raises(ConfigError, match="namespace"):
        mbg.register_task_file(path, namespace="a/b")


def test_environment_options_are_typed_and_the_browsers_are_refused(tmp_path: Path) -> None:
    gid = mbg.gym_id("ohif", "open-ct-doe-john")
    task = _task_of(gid, env_options={"seed_cache": str(tmp_path), "settle_timeout_s": "20"})
    assert task.env_options == {"seed_cache": tmp_path, "settle_timeout_s": 20.0}
    with pytest.raises(ConfigError, match=r"has no option 'seed_cach'.*seed_cache"):
        _task_of(gid, env_options={"seed_cach": str(tmp_path)})
    with pytest.raises(ConfigError, match="chromium, headless: BrowserGym launches the browser"):
        _task_of(gid, env_options={"headless": False, "chromium": "/usr/bin/chromium"})


def test_playwrights_chromium_lookup_is_pointed_at_debians_when_it_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.delenv("PLAYWRIGHT_BROWSERS_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # no Playwright browsers there
    monkeypatch.setenv("MEDSPOT_CACHE", str(tmp_path / "cache"))
    revision = chromium.playwright_chromium_revision()
    assert revision is not None and revision.isdigit()
    folder = chromium.use_system_chromium(str(fake))
    assert folder == tmp_path / "cache" / chromium.BROWSERS_FOLDER
    assert os.environ["PLAYWRIGHT_BROWSERS_PATH"] == str(folder)
    link = folder / f"chromium-{revision}" / "chrome-linux" / "chrome"
    assert link.is_symlink() and os.readlink(link) == str(fake)
    # set already (by the user, or by the call above): nothing changes
    assert chromium.use_system_chromium(str(fake)) is None
    monkeypatch.delenv("PLAYWRIGHT_BROWSERS_PATH")
    # Playwright's own chromium installed: left alone
    own = tmp_path / "xdg" / "ms-playwright" / f"chromium-{revision}" / "chrome-linux" / "chrome"
    own.parent.mkdir(parents=True)
    own.write_text("", encoding="utf-8")
    assert chromium.use_system_chromium(str(fake)) is None
    assert "PLAYWRIGHT_BROWSERS_PATH" not in os.environ


def test_the_agents_chat_messages_are_read_as_endings() -> None:
    def msg(role: str, text: str = "") -> dict[str, object]:
        return {"role": role, "message": text, "timestamp": 0.0}

    assert ending_of([]) is None
    assert ending_of([msg("user", "more please")]) is None
    assert ending_of([msg("assistant", "I opened it")]) == Done()
    got = ending_of([msg("assistant", "hm"), msg("infeasible", "no such patient")])
    assert got == Infeasible("no such patient")
