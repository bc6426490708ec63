"""`leaderboard` and `compare` rank only what is comparable: runs over other annotations, apps,
--limit or task counts are refused unless --mixed (then every row names its data); compare
never pairs a task across two annotation versions; incomplete runs are left out of a
leaderboard unless --include-incomplete; the same run given twice is refused; live runs of other
modes or tools (a toolset beside GUI-only) are refused unless --mixed (then a column says
which)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from _report_runs import PLAN_A, PLAN_B, make_run, write_dataset
from medspot.cli import main
from medspot.errors import ConfigError
from medspot.report.compare import compare_runs
from medspot.report.leaderboard import build_leaderboard, render
from medspot.runfolder.reader import load_run, load_runs


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("mixed")
    v1 = write_dataset(d / "v1", images=False)
    v2 = write_dataset(d / "v2", images=False, instruction_override="Open the Edit menu")
    return {
        "v1": v1,
        "a": make_run(d / "a", v1, PLAN_A, model="model-a"),
        "b": make_run(d / "b", v1, PLAN_B, model="model-b"),
        "b2": make_run(d / "b2", v2, PLAN_B, model="model-b2"),
    }


def test_other_annotations_are_refused_unless_mixed_and_then_labelled(
    two_versions: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    runs = load_runs([two_versions["a"], two_versions["b2"]])
    with pytest.raises(ConfigError, match="dataset fingerprints differ"):
        build_leaderboard(runs)
    assert main(["leaderboard", str(two_versions["a"]), str(two_versions["b2"])]) == 2
    assert "--mixed" in capsys.readouterr().err
    text = render(build_leaderboard(runs, mixed=True), "md")
    assert "MIXED data" in text and "| data |" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| 1 ") or ln.startswith("| 2 ")]
    assert len({ln.split(" | ")[2] for ln in rows}) == 2  # each row names its own data
    # the same data: accepted as before, no data column
    same = render(build_leaderboard(load_runs([two_versions["a"], two_versions["b"]])), "md")
    assert "| data |" not in same and "MIXED" not in same


def test_compare_never_pairs_tasks_of_two_annotation_versions(
    two_versions: dict[str, Path],
) -> None:
    a, b2 = load_run(two_versions["a"]), load_run(two_versions["b2"])
    with pytest.raises(ConfigError, match="different data"):
        compare_runs(a, b2, n_boot=20)
    c = compare_runs(a, b2, n_boot=20, mixed=True)
    # the first instruction of each app's first task differs between the versions
    assert c.changed == ("Alpha/0", "Beta/0")
    assert "Alpha/0" not in c.common and len(c.common) == 3
    assert c.to_json()["changed_tasks_not_paired"] == ["Alpha/0", "Beta/0"]
    same = compare_runs(a, load_run(two_versions["b"]), n_boot=20)
    assert same.changed == () and len(same.common) == 5


def test_the_same_run_twice_is_refused(
    two_versions: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    a = str(two_versions["a"])
    assert main(["leaderboard", a, a]) == 2
    assert "twice" in capsys.readouterr().err


def test_incomplete_runs_are_left_out_unless_asked(
    two_versions: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = make_run(tmp_path / "c", two_versions["v1"], PLAN_B, model="model-c")
    info = json.loads((c / "run.json").read_text())
    info["status"] = "interrupted"
    (c / "run.json").write_text(json.dumps(info))
    assert main(["leaderboard", str(two_versions["a"]), str(c), "--format", "csv"]) == 0
    out = capsys.readouterr()
    assert "model-c" not in out.out and "model-c" in out.err
    argv = ["leaderboard", str(two_versions["a"]), str(c), "--include-incomplete"]
    assert main(argv) == 0
    assert "model-c *" in capsys.readouterr().out
    assert main(["leaderboard", str(c)]) == 2
    assert "--include-incomplete" in capsys.readouterr().err


def _dataset(root: Path) -> Path:
    return write_dataset(root, images=True)


@pytest.mark.parametrize(
    ("extra_a", "extra_b", "what"),
    [
        (("--limit", "1"), (), "--limit"),
        (("--apps", "Alpha"), (), "apps"),
    ],
)
def test_runs_over_other_apps_or_limits_are_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra_a: tuple[str, ...],
    extra_b: tuple[str, ...],
    what: str,
) -> None:
    root = _dataset(tmp_path / "data")
    outs = []
    for name, extra in (("x", extra_a), ("y", extra_b)):
        out = tmp_path / name
        argv = ["eval", "--data", str(root), "--model", "oracle", "--out", str(out),
                "--no-progress", "--bootstrap", "10", *extra]  # fmt: skip
        assert main(argv) == 0
        outs.append(str(out))
    capsys.readouterr()
    assert main(["leaderboard", *outs]) == 2
    assert f"{what} differ" in capsys.readouterr().err
    assert main(["compare", *outs, "--bootstrap", "10"]) == 2
    assert main(["leaderboard", *outs, "--mixed"]) == 0
    assert "MIXED data" in capsys.readouterr().out


def _as_live(run: Path, mode: str | None) -> Path:
    info = json.loads((run / "run.json").read_text())
    info["kind"], info["env"] = "live", "orthanc-explorer"
    if mode is not None:
        info["mode"] = mode
    (run / "run.json").write_text(json.dumps(info))
    return run


def test_live_runs_of_two_modes_are_refused_unless_mixed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_dataset(tmp_path / "data", images=False)
    guided = _as_live(make_run(tmp_path / "g", root, PLAN_A, model="m-guided"), "guided")
    agent = _as_live(make_run(tmp_path / "a", root, PLAN_B, model="m-agent"), "agent")
    older = _as_live(make_run(tmp_path / "o", root, PLAN_B, model="m-older"), None)
    runs = load_runs([guided, agent])
    with pytest.raises(ConfigError, match="different modes"):
        build_leaderboard(runs)
    with pytest.raises(ConfigError, match="different modes"):
        compare_runs(load_run(guided), load_run(agent), n_boot=20)
    assert main(["leaderboard", str(guided), str(agent)]) == 2
    assert "--mixed" in capsys.readouterr().err
    assert main(["compare", str(guided), str(agent)]) == 2
    assert "agent" in capsys.readouterr().err
    assert build_leaderboard(runs, mixed=True).rows
    compare_runs(load_run(guided), load_run(agent), n_boot=20, mixed=True)
    # a live run made before modes existed was guided: it ranks beside a guided run
    assert build_leaderboard(load_runs([guided, older])).rows


def test_live_runs_with_and_without_tools_are_refused_unless_mixed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = write_dataset(tmp_path / "data", images=False)
    gui = _as_live(make_run(tmp_path / "gui", root, PLAN_A, model="m-gui"), "guided")
    tools = _as_live(make_run(tmp_path / "tools", root, PLAN_B, model="m-tools"), "guided")
    info = json.loads((tools / "run.json").read_text())
    (tools / "run.json").write_text(json.dumps({**info, "tools": "orthanc"}))
    runs = load_runs([gui, tools])
    with pytest.raises(ConfigError, match="different tools"):
        build_leaderboard(runs)
    with pytest.raises(ConfigError, match="different tools"):
        compare_runs(load_run(gui), load_run(tools), n_boot=20)
    assert main(["leaderboard", str(gui), str(tools)]) == 2
    err = capsys.readouterr().err
    assert "m-gui: none" in err and "m-tools: orthanc" in err and "--mixed" in err
    assert main(["compare", str(gui), str(tools), "--bootstrap", "20"]) == 2
    assert "different tools" in capsys.readouterr().err
    # with --mixed: a tools column (and the caption says the rows are not comparable)
    assert main(["leaderboard", str(gui), str(tools), "--mixed"]) == 0
    table = capsys.readouterr().out
    head = next(line for line in table.splitlines() if line.startswith("| #"))
    assert "| tools |" in head and "MIXED tools" in table
    rows = {line.split("|")[2].strip(): line for line in table.splitlines() if "| m-" in line}
    assert "| orthanc |" in rows["m-tools"] and "| none |" in rows["m-gui"]
    lb = build_leaderboard(runs, mixed=True)
    assert "\\textbackslash" not in render(lb, "latex") and "Tools" in render(lb, "latex")
    assert main(["compare", str(gui), str(tools), "--bootstrap", "20", "--mixed"]) == 0
    assert "tools none" in (out := capsys.readouterr().out) and "tools orthanc" in out
    assert main(["compare", str(gui), str(tools), "--mixed", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["tools_a"], got["tools_b"]) == ("none", "orthanc")
    # two runs offered the same tools rank together; the CSV names each row's tools
    again = _as_live(make_run(tmp_path / "again", root, PLAN_A, model="m-again"), "guided")
    info = json.loads((again / "run.json").read_text())
    (again / "run.json").write_text(json.dumps({**info, "tools": "orthanc"}))
    same = build_leaderboard(load_runs([tools, again]))
    assert not same.mixed_tools
    table_rows = list(csv.DictReader(io.StringIO(render(same, "csv"))))
    assert [r["tools"] for r in table_rows] == ["orthanc", "orthanc"]
