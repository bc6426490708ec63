"""An environment's packaged tasks may span several files (`<stem>.json`, `<stem>-<part>.json`):
read as one task file, a task id given twice across files is a located error."""

from __future__ import annotations

import json

import pytest

from medspot.errors import DataError
from medspot.live.core.tasks import LiveTaskFile
from medspot.live.envs import taskfiles
from medspot.live.envs.registry import env_names


def _file(env: str, *ids: str) -> LiveTaskFile:
    return LiveTaskFile.model_validate({
        "env": env,
        "tasks": [{"id": i, "instruction": "x", "steps": [{"instruction": "y", "action": "key",
                   "key": "Enter"}], "success": [{"kind": "web.url_matches", "pattern": "z"}]}
                  for i in ids],
    })  # fmt: skip


@pytest.mark.parametrize("env", env_names())
def test_every_packaged_file_is_read(env: str) -> None:
    files = taskfiles.packaged_task_files(env)
    tf, fingerprint = taskfiles.env_task_file(env)
    ids = [t["id"] for _, text in files for t in json.loads(text)["tasks"]]
    assert [t.id for t in tf.tasks] == ids and len(set(ids)) == len(ids)
    assert len(fingerprint) == 16


def test_a_task_id_in_two_files_is_refused() -> None:
    a, b = _file("orthanc-explorer", "one", "two"), _file("orthanc-explorer", "three", "two")
    with pytest.raises(DataError, match="duplicate task id 'two'") as err:
        taskfiles._merge([("a.json", a), ("b.json", b)])
    assert "b.json" in str(err.value) and "a.json" in str(err.value)
    merged = taskfiles._merge([("a.json", a), ("c.json", _file("orthanc-explorer", "three"))])
    assert [t.id for t in merged.tasks] == ["one", "two", "three"]
    with pytest.raises(DataError, match="not 'orthanc-explorer'"):
        taskfiles._merge([("a.json", a), ("d.json", _file("ohif", "four"))])
