"""The face of `medspot.live`: one `__all__`, every name resolves to its one home, and importing
the package (or resolving every name) loads nothing heavy."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import medspot.live as live

REPO = Path(__file__).resolve().parents[2]
HEAVY = (
    "playwright", "gymnasium", "pydicom", "pyatspi", "torch", "transformers", "openai",
    "anthropic", "ray", "matplotlib", "rapidocr", "onnxruntime",
)  # fmt: skip


def test_every_public_name_resolves_to_its_home() -> None:
    assert len(set(live.__all__)) == len(live.__all__)
    assert set(live.__all__) == set(live._HOMES)  # one __all__, one home per name
    for name in live.__all__:
        obj = getattr(live, name)
        assert obj is not None
        module = getattr(obj, "__module__", None)
        if module is not None and isinstance(obj, type):
            assert module.startswith("medspot."), (name, module)
    with pytest.raises(AttributeError):
        _ = live.no_such_name  # type: ignore[attr-defined]
    assert live.Episode.__module__ == "medspot.live.core.episode"
    assert live.run_live.__module__ == "medspot.live.loop.request"
    assert issubclass(live.EnvironmentFault, live.MedspotError)
    assert set(dir(live)) >= set(live.__all__)


def test_the_face_is_enough_to_read_tasks_and_actions() -> None:
    assert "orthanc-explorer" in live.env_names()
    tf, fingerprint = live.env_task_file("orthanc-explorer")
    task = live.select_tasks(tf, [tf.tasks[0].id])[0]
    assert isinstance(task, live.LiveTask) and len(fingerprint) == 16
    parsed = live.parse_action('type("DOE^JOHN")', (1280, 800))
    assert parsed.action == live.TypeText("DOE^JOHN")
    assert live.describe_action(live.Click(412, 233)) == "click(412, 233)"


def test_importing_loads_nothing_heavy() -> None:
    """Every name but those of a home that needs an extra (`EXTRA_HOMES`: resolving them is
    asking for the extra) resolves without loading anything heavy."""
    assert set(live.EXTRA_HOMES) <= set(live._PARTS)
    code = (
        "import json, sys\n"
        "import medspot.live as live\n"
        "first = sorted(m for m in sys.modules if m.startswith('medspot.'))\n"
        "for name in live.__all__:\n"
        "    if live._HOMES[name] not in live.EXTRA_HOMES:\n"
        "        getattr(live, name)\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(json.dumps({'first': first, 'heavy': heavy}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env={"PYTHONPATH": str(REPO / "src")},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["first"] == ["medspot._version", "medspot.live"]  # nothing of its parts
    assert out["heavy"] == []  # even with every name resolved that needs no extra
