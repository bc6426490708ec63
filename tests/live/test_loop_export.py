"""`medspot live export` on a few packaged tasks of every environment: each must end in success,
and the exported MedSPOT-format dataset (real application screens, exact boxes) must pass
`medspot validate`, run through `medspot eval` and `medspot report`. (The oracle through EVERY
packaged task is `tests/live/test_task_audit.py`: `medspot live audit`.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_live, require_orthanc_stack

from medspot.cli import main
from medspot.live.envs.registry import env_names

pytestmark = pytest.mark.live


def _require(env: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    if env == "orthanc-explorer":
        require_orthanc_stack()
        return ["--env-option", f"chromium={CHROMIUM}"]
    code = main(["live", "doctor", "--env", env])
    report = capsys.readouterr().out
    require_live(code == 0, f"the system parts of {env} ({report.strip()})")
    return []


# a few tasks per environment: clicks, a drag, typing, a download
EXPORTED = {
    "orthanc-explorer": ["open-study-ct-doe-john", "open-series-ct-doe-john-axial",
                         "filter-patients-garcia", "delete-study-ct-doe-joan"],
    "ohif": ["open-ct-doe-john", "measure-ab-ct-doe-john", "preset-lung-ct-doe-john"],
    "dicomscope": ["open-ct-doe-john-slice3", "invert-and-zoom-1to1", "type-window-centre"],
    "invesalius": ["muscle-preset-current-mask", "surface-transparency", "goto-axial-slice-40"],
}  # fmt: skip


def test_every_environment_has_exported_tasks() -> None:
    assert set(EXPORTED) == set(env_names())


@pytest.mark.parametrize("env", env_names())
def test_the_oracle_exports_tasks_and_the_export_evaluates(
    env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from medspot.live.loop.dataset_export import RUN_SUBDIR, app_name

    opts = _require(env, capsys)
    data = tmp_path / "export"
    code = main(["live", "export", "--env", env, "--out", str(data), "--tasks",
                 ",".join(EXPORTED[env]), "--no-progress", *opts])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out  # exit 1 names the tasks the oracle did not complete
    run = data / RUN_SUBDIR
    metrics = json.loads((run / "overall_dataset_metrics.json").read_text())
    tasks = json.loads((run / env / "task_results.json").read_text())
    assert sorted(t["task_id"] for t in tasks) == sorted(f"{env}/{t}" for t in EXPORTED[env])
    failed = [t["task_id"] for t in tasks if t["live_outcome"] != "success"]
    assert not failed, f"the oracle did not complete: {failed}"
    assert metrics["task_success_rate"] == 1.0 and metrics["harmful_failure_rate"] == 0.0
    assert metrics["intended_hit_rate"] == 1.0

    app = app_name(env)
    ann = json.loads((data / "Annotations" / f"{app}_Annotation.json").read_text())
    assert len(ann["tasks"]) == len(tasks)
    boxes = [a["bbox"] for t in ann["tasks"] for s in t["steps"] for a in s["actions"]]
    assert boxes and all(0 <= b[0] <= 100 and b[2] > 0 and b[3] > 0 for b in boxes)

    assert main(["validate", str(data)]) == 0, capsys.readouterr()
    capsys.readouterr()
    res = tmp_path / "eval-oracle"
    assert main(["eval", "--data", str(data), "--model", "oracle", "--out", str(res),
                 "--no-progress", "--bootstrap", "50"]) == 0  # fmt: skip
    capsys.readouterr()
    static = json.loads((res / "overall_dataset_metrics.json").read_text())
    assert static["task_completion_accuracy"] == 1.0  # the boxes are where the oracle clicked
    rnd = tmp_path / "eval-random"
    assert main(["eval", "--data", str(data), "--model", "random", "--out", str(rnd),
                 "--no-progress", "--bootstrap", "50"]) == 0  # fmt: skip
    capsys.readouterr()
    assert (
        json.loads((rnd / "overall_dataset_metrics.json").read_text())["task_completion_accuracy"]
        < 0.5
    )
    site = tmp_path / "site"
    assert main(["report", str(res), str(run), "--out", str(site)]) == 0
    assert (site / "index.html").exists()
