"""`EnvSpec`, the environment of a run, a server, the audit, the export and the Gymnasium
environment, is checked once, when it is made: options typed by the environment, tasks selected
from their file (with its fingerprint), toolset, executor options and spares; whatever is wrong
is a `ConfigError` naming it before anything starts. The slots take only their part of it."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path

import pytest

from medspot.errors import ConfigError, DataError
from medspot.live.envs.taskfiles import env_task_file
from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
from medspot.live.loop.executors.base import SlotConfig
from medspot.live.loop.request import LiveRequest
from medspot.live.loop.served import ServeOptions

ENV = "orthanc-explorer"
TASK = "open-study-ct-doe-john"


def test_a_spec_holds_what_it_checked() -> None:
    spec = EnvSpec(ENV, env_options={"quiet-s": "0.5", "headless": "true"}, task_ids=[TASK])  # type: ignore[arg-type]
    assert spec.env_options == {"quiet_s": 0.5, "headless": True}  # typed by the environment
    assert [t.id for t in spec.tasks] == [TASK] and spec.task_ids == (TASK,)
    tf, fingerprint = env_task_file(ENV)
    assert spec.fingerprint == fingerprint and spec.task_file == tf and spec.tasks_file is None
    every = EnvSpec(ENV)
    assert len(every.tasks) == len(tf.tasks)
    assert [t.id for t in every.with_tasks((TASK,)).tasks] == [TASK]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.env = "ohif"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"env": "orthanc-explorr"}, "orthanc-explorer"),
        ({"env_options": {"quiet_s": "abc"}}, "quiet_s='abc': expected a number"),
        ({"env_options": {"no_such": "1"}}, "has no option 'no_such'"),
        ({"task_ids": ("open-study-ct-doe-jon",)}, "did you mean 'open-study-ct-doe-john'"),
        ({"tools": "nope"}, "nope"),
        ({"spares": 9}, "--spares 9: must be from 0 to 8"),
        ({"call_timeout_s": 0}, "must be more than 0"),
        ({"executor": ExecutorSpec("threads", ray_address="auto")}, "needs --executor ray"),
        ({"executor": ExecutorSpec("ray", ray_cpus_per_env=-1)}, "must be 0 or more"),
    ],
)
def test_what_is_wrong_is_refused_when_the_spec_is_made(kw: dict[str, object], says: str) -> None:
    args: dict[str, object] = {"env": ENV, **kw}
    with pytest.raises(ConfigError, match=says):
        EnvSpec(**args)  # type: ignore[arg-type]


def test_a_task_file_of_another_environment_is_a_data_error(tmp_path: Path) -> None:
    ohif, _ = env_task_file("ohif")
    other = tmp_path / "tasks.json"
    other.write_text(ohif.model_dump_json(exclude_defaults=True))
    with pytest.raises(DataError, match="not 'orthanc-explorer'"):
        EnvSpec(ENV, tasks_file=other)


def test_requests_hold_one_spec_and_the_slots_take_their_part(tmp_path: Path) -> None:
    spec = EnvSpec(ENV, task_ids=(TASK,), tools="orthanc", spares=1, workroot=tmp_path)
    run = LiveRequest(spec=spec, model="oracle", out=tmp_path / "run")
    served = ServeOptions(spec=spec, out=tmp_path / "served")
    assert run.spec is served.spec is spec
    cfg = spec.slot_config()
    assert cfg == SlotConfig(ENV, {}, spec.call_timeout_s, tmp_path, "orthanc", spares=1)
    assert spec.slot_config(spares=0).spares == 0
    assert pickle.loads(pickle.dumps(cfg)) == cfg  # what a Ray actor receives
    assert pickle.loads(pickle.dumps(spec)).tasks == spec.tasks
