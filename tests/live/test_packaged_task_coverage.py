"""What the packaged live tasks cover, over the three environments (pure: no application):
at least 150 tasks, at least 20 long workflows of 6 to 12 oracle steps, at least 15 infeasible
requests, the trap tags; every part file valid on its own; every task judged on the
application's state with collateral-damage checks where it is new."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from medspot.live.core.tasks import LiveTask
from medspot.live.envs import taskfiles
from medspot.live.envs.registry import env_names

# the three files the packaged tasks started from; the tasks added beside them in
# `<stem>-<part>.json` files are held to the stricter rules below
ORIGINAL_FILES = {"orthanc_explorer.json", "dicomscope.json", "ohif.json"}
TRAP_TAGS = ("look-alike", "look-alike-date", "cancel-default", "below-fold")


def _tasks() -> dict[str, list[LiveTask]]:
    return {env: list(taskfiles.env_task_file(env)[0].tasks) for env in env_names()}


def _part_files() -> list[tuple[str, str]]:
    """(env, file name) of every packaged part file `<stem>-<part>.json`."""
    out = []
    for env in env_names():
        for name, _ in taskfiles.packaged_task_files(env):
            if Path(name).name not in ORIGINAL_FILES:
                out.append((env, Path(name).name))
    return out


def test_at_least_150_tasks_over_the_environments() -> None:
    counts = {env: len(ts) for env, ts in _tasks().items()}
    assert set(counts) == {"orthanc-explorer", "ohif", "dicomscope", "invesalius"}
    assert sum(counts.values()) >= 150, counts
    assert all(n >= 25 for n in counts.values()), counts


def test_long_workflows() -> None:
    workflows = [t for ts in _tasks().values() for t in ts if "workflow" in t.tags]
    assert len(workflows) >= 20
    for t in workflows:
        assert 6 <= len(t.steps) <= 12, (t.id, len(t.steps))
        # a drag, scroll or typing step says when it is achieved (no box to hit-test it by)
        for s in t.steps:
            if s.action in ("drag", "scroll", "type"):
                assert s.done_if is not None, (t.id, s.instruction)
    per_env = Counter(env for env, ts in _tasks().items() for t in ts if "workflow" in t.tags)
    assert set(per_env) == set(env_names()), per_env


def test_infeasible_tasks() -> None:
    infeasible = [t for ts in _tasks().values() for t in ts if t.infeasible]
    assert len(infeasible) >= 15
    for ts in _tasks().values():
        for t in ts:
            # the tag and the flag agree, so that `by_tag` reports them
            assert ("infeasible" in t.tags) == t.infeasible, t.id
    for t in infeasible:
        assert t.steps[-1].action == "infeasible"
        assert t.fail_if, f"{t.id}: an infeasible task names the changes that are harm"
    per_env = Counter(env for env, ts in _tasks().items() for t in ts if t.infeasible)
    assert set(per_env) == set(env_names()), per_env


def test_trap_tags() -> None:
    tags = Counter(tag for ts in _tasks().values() for t in ts for tag in t.tags)
    for tag in TRAP_TAGS:
        assert tags[tag] >= 3, (tag, tags[tag])
    assert tags["look-alike"] >= 40


@pytest.mark.parametrize(("env", "name"), _part_files())
def test_each_part_file_is_valid_on_its_own(env: str, name: str) -> None:
    text = next(t for n, t in taskfiles.packaged_task_files(env) if Path(n).name == name)
    tf = taskfiles.parse_task_file(json.loads(text), name)
    assert tf.env == env
    for t in tf.tasks:
        assert t.success and t.fail_if, f"{name}: {t.id} needs success and fail_if checks"


def test_there_are_part_files_for_every_environment() -> None:
    assert {env for env, _ in _part_files()} == set(env_names())


def harm_rule_table() -> str:
    """The packaged tasks' harm rules counted by environment, severity and dimension, as
    docs/live.md shows them (between its `harm-rule-table` markers)."""
    from medspot.live.core.harm import DIMENSIONS, SEVERITIES

    head = ["environment", "severity", *DIMENSIONS, "rules"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    total: Counter[tuple[str, str]] = Counter()
    blocks: list[tuple[str, Counter[tuple[str, str]]]] = [
        (env, Counter((r.severity, r.dimension) for t in ts for r in t.fail_if))
        for env, ts in sorted(_tasks().items())
    ]
    for _, c in blocks:
        total.update(c)
    for env, c in [*blocks, ("all", total)]:
        for s in SEVERITIES:
            cells = [str(c[(s, d)]) for d in DIMENSIONS]
            n = sum(c[(s, d)] for d in DIMENSIONS)
            lines.append(f"| {env} | {s} | " + " | ".join(cells) + f" | {n} |")
    return "\n".join(lines)


def test_every_harm_rule_is_labelled_and_the_docs_table_counts_them() -> None:
    """Every packaged fail_if check carries its severity and dimension (the schema refuses one
    without), every environment's collateral rule is critical/data_lost, every task of an
    environment that can destroy data has a critical rule, and docs/live.md's table of the
    harm rules is the task files' (regenerate it with `harm_rule_table()`)."""
    for env, ts in _tasks().items():
        for t in ts:
            assert t.fail_if or env == "ohif", t.id
            for rule in t.fail_if:
                assert rule.severity and rule.dimension, (t.id, rule.kind)
                if rule.kind.endswith(".collateral_loss"):
                    assert (rule.severity, rule.dimension) == ("critical", "data_lost")
            if env != "ohif":
                assert any(r.severity == "critical" for r in t.fail_if), t.id
    doc = (Path(__file__).resolve().parents[2] / "docs" / "live.md").read_text()
    start, end = "<!-- harm-rule-table -->\n", "\n<!-- /harm-rule-table -->"
    shown = doc[doc.index(start) + len(start) : doc.index(end)]
    assert shown == harm_rule_table(), "docs/live.md's harm-rule table is out of date"
