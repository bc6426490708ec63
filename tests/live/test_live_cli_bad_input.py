"""Bad input to `medspot live ...` is exit status 2 with a located message, never a traceback or
an environment fault, and leaves no run.json behind; environment options are typed by the
environment (the real environments' declarations); a bug is exit 70 with one line naming the
file its traceback went to, and run.json records the failure."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from _lamp_panel import ENTRY, NAME, lamp_command, process_env, switch_task, task_file
from _runner_support import ENV, live_request, processes_mentioning, subset_file

from medspot.cli import main
from medspot.errors import BUG_EXIT_STATUS, ConfigError
from medspot.live.envs import registry
from medspot.live.envs.envoptions import check_env_options, env_options_of
from medspot.live.envs.registry import env_entry
from medspot.live.loop.envspec import EnvSpec
from medspot.live.loop.request import LiveRequest, run_live


def _nested(path: Path, env: str, depth: int) -> Path:
    """A task file whose check carries a list nested `depth` levels deep."""
    task = {
        "id": "t",
        "instruction": "x",
        "steps": [{"instruction": "click", "target": {"text": "OK"}}],
        "success": [{"kind": "web.url_matches", "pattern": "x", "extra": "@"}],
    }
    text = json.dumps({"format_version": 1, "env": env, "tasks": [task]})
    path.write_text(text.replace('"@"', "[" * depth + "]" * depth))
    return path


def _live_run(out: Path, *extra: str) -> list[str]:
    return ["live", "run", "--env", ENV, "--model", "oracle", "--out", str(out),
            "--no-progress", *extra]  # fmt: skip


def test_deeply_nested_task_json_is_a_located_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _nested(tmp_path / "deep.json", ENV, 100_000)
    assert main(["live", "tasks", "--env", ENV, "--validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "deep.json" in err and "nested too deeply" in err and "Traceback" not in err
    out = tmp_path / "run"
    assert main(_live_run(out, "--tasks-file", str(f))) == 2
    assert "nested too deeply" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--env-option", "quiet_s=abc"), "quiet_s='abc': expected a number (orthanc-explorer)"),
        (("--env-option", "viewport=800x600"), "orthanc-explorer has no option 'viewport'"),
        (("--env-option", "quiet=0.1"), "(did you mean 'quiet_s' or 'reset_quiet_s'?)"),
        (("--env-option", "spare=false"), "the run's `--spares N` or `--no-spare`, not an option"),
        (("--env-option", "headless=maybe"), "expected true or false"),
        (("--env-option", "settle_timeout_s=-1"), "must be 0 or more"),
        (("--env-option", "quiet_s=1", "--env-option", "quiet-s=2"), "given twice"),
        (("--env-option", "novalue"), "expected KEY=VALUE"),
        (("--tasks", ",,,"), "--tasks ',,,' names no task id"),
        (("--tasks", ""), "names no task id"),
    ],
)
def test_bad_options_are_exit_2_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], says: str
) -> None:
    out = tmp_path / "run"
    assert main(_live_run(out, *extra)) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not out.exists()  # nothing written, no run.json saying "running"


def test_a_viewport_other_than_the_tasks_is_refused_before_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    args = ["live", "run", "--env", "dicomscope", "--model", "oracle", "--out", str(out),
            "--no-progress", "--env-option", "viewport=800x600"]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "viewport=800x600" in err and "start at another size" in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--spares", "9"), "--spares: '9' must be 8 at most"),
        (("--spares", "-1"), "--spares: '-1' must be 0 or more"),
        (("--spares", "1", "--no-spare"), "--no-spare: not allowed with argument --spares"),
    ],
)
def test_spares_out_of_bounds_or_twice_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], says: str
) -> None:
    with pytest.raises(SystemExit) as e:
        main(_live_run(tmp_path / "run", *extra))
    assert e.value.code == 2
    assert says in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_library_request_for_negative_spares_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--spares -1: must be from 0 to 8"):
        run_live(LiveRequest(spec=EnvSpec(ENV, spares=-1), model="oracle", out=tmp_path / "run"))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("option", ["--env-retries", "--max-retries"])
def test_negative_retries_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    with pytest.raises(SystemExit) as e:
        main(_live_run(tmp_path / "run", option, "-1"))
    assert e.value.code == 2
    assert f"{option}: '-1' must be 0 or more" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("env", "option", "says"),
    [
        ("invesalius", "python=/nonexistent/python", "python='/nonexistent/python': no such file"),
        ("invesalius", "python=/bin/true", "it cannot import wx, vtkmodules, numpy, gdcm"),
        ("invesalius", "invesalius_dir=/tmp", "invesalius_dir='/tmp': no app.py in it"),
        ("orthanc-explorer", "chromium=/nonexistent", "chromium='/nonexistent': no such file"),
        ("ohif", "orthanc_binary=no-such-orthanc", "no program 'no-such-orthanc' on PATH"),
        ("ohif", "ohif_dist=/nonexistent", "ohif_dist='/nonexistent': no such folder"),
        ("dicomscope", "java={tmp}/plain.txt", "plain.txt': not an executable file"),
        ("dicomscope", "seed_cache={tmp}/plain.txt/x", "cannot be made: {tmp}/plain.txt is not a"),
    ],
)
def test_a_path_option_that_names_nothing_is_exit_2_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], env: str, option: str, says: str
) -> None:
    """A program or folder option is checked with the other option values (it used to start
    three environments, each failing, and end "run again")."""
    (tmp_path / "plain.txt").write_text("not a program, not a folder")
    (tmp_path / "plain.txt").chmod(0o644)
    out = tmp_path / "run"
    args = ["live", "run", "--env", env, "--model", "oracle", "--out", str(out),
            "--no-progress", "--env-option", option.format(tmp=tmp_path)]  # fmt: skip
    assert main(args) == 2
    err = capsys.readouterr().err
    assert says.format(tmp=tmp_path) in err, err
    assert f"({env})" in err and "Traceback" not in err
    assert not out.exists()


def test_path_options_that_name_something_pass(tmp_path: Path) -> None:
    cache = tmp_path / "new" / "cache"  # made when the environment writes it
    typed = check_env_options(
        "invesalius",
        {
            "python": "/usr/bin/python3",
            "phantom_cache": str(cache),
            "invesalius_dir": "/usr/share/invesalius",
        },
    )
    assert typed["phantom_cache"] == cache and typed["python"] == "/usr/bin/python3"
    assert check_env_options("dicomscope", {"java": "sh"}) == {"java": "sh"}  # a name on PATH
    listed = env_options_of(env_entry("invesalius"))
    assert listed is not None
    assert listed["python"].type_name == (
        "a program (a path, or a name on PATH) that imports wx, vtkmodules, numpy, gdcm"
    )
    assert listed["phantom_cache"].type_name == "a folder (made when missing) or none"


def test_each_environment_declares_typed_options(tmp_path: Path) -> None:
    for name in registry.env_names():
        declared = env_options_of(env_entry(name))
        assert declared, f"{name} declares no options"
        assert "workdir" not in declared
    viewport = check_env_options("dicomscope", {"viewport": "800x600"})["viewport"]
    assert viewport == (800, 600)
    with pytest.raises(ConfigError, match=r"expected 2 numbers, e\.g\. 1280x800"):
        check_env_options("dicomscope", {"viewport": "800"})
    typed = check_env_options(
        "ohif", {"headless": "false", "extra_args": "--a '--b=c d'", "seed_cache": "none"}
    )
    assert typed == {"headless": False, "extra_args": ("--a", "--b=c d"), "seed_cache": None}
    seed_cache = check_env_options(ENV, {"seed_cache": tmp_path / "x", "seed": 3})
    assert seed_cache == {"seed_cache": tmp_path / "x", "seed": 3}  # values from Python: checked
    with pytest.raises(ConfigError, match="expected a whole number"):
        check_env_options(ENV, {"seed": "1.5"})


@pytest.mark.live
def test_an_error_found_during_the_run_is_recorded_in_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bad task data that only the running environment can see (a lamp the panel does not
    have) stops the run with exit 2; run.json then says "failed" and why, not "running"."""
    monkeypatch.setitem(registry._ENVS, NAME, ENTRY)
    task = switch_task("purple", "red")
    task["success"] = [{"kind": "lamp.on", "lamp": "purple"}]
    tasks = task_file(tmp_path / "tasks.json", [task])
    out = tmp_path / "run"
    code = main(["live", "run", "--env", NAME, "--model", "oracle", "--tasks-file", str(tasks),
                 "--out", str(out), "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert "no lamp 'purple'" in err and "Traceback" not in err
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "failed" and "no lamp 'purple'" in info["error"]
    assert info["finished"]
    # the report of the failed folder says what to do with a live run (not `medspot score`)
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert "the live run failed before it wrote its results" in err and "no lamp" in err
    assert f"medspot live run --env {NAME} --model oracle --out {out} ..." in err
    assert "medspot score" not in err


@pytest.mark.live
def test_a_bug_is_exit_70_with_its_traceback_in_the_run_folder(tmp_path: Path) -> None:
    tasks = task_file(tmp_path / "tasks.json", [switch_task("red", "red")])
    out, work = tmp_path / "run", tmp_path / "w"
    work.mkdir()
    args = lamp_command(
        "live", "run", "--env", NAME, "--model", "oracle", "--tasks-file", str(tasks),
        "--out", str(out), "--no-progress", "--env-option", "broken_observation=true",
    )  # fmt: skip
    done = subprocess.run(args, env=process_env(work), capture_output=True, text=True, timeout=120)
    assert done.returncode == BUG_EXIT_STATUS, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "a bug in medspot" in lines[0] and "AttributeError" in lines[0]
    written = sorted(out.glob("medspot-bug-*.txt"))
    assert len(written) == 1 and str(written[0]) in lines[0]
    assert "Traceback (most recent call last)" in written[0].read_text()
    info = json.loads((out / "run.json").read_text())
    assert info["status"] == "failed" and info["error"].startswith("bug: AttributeError")
    assert not processes_mentioning(str(work))  # the environment was closed all the same


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--seed", "-1"), "--seed: '-1' must be 0 or more"),
        (("--repeats", "1000000"), "--repeats: '1000000' must be 100 at most"),
        (("--timeout", "0"), "--timeout: '0' must be more than 0"),
        (("--concurrency", "100000"), "--concurrency: '100000' must be 1024 at most"),
        (("--bootstrap", "0"), "--bootstrap: '0' must be 1 or more"),
        (("--env-retries", "1000"), "--env-retries: '1000' must be 100 at most"),
        (("--ray-cpus-per-env", "inf"), "'inf' is not a finite number"),
    ],
)
def test_an_option_out_of_bounds_is_refused_before_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], says: str
) -> None:
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as e:
        main(_live_run(out, *extra))
    assert e.value.code == 2 and says in capsys.readouterr().err
    assert not out.exists()


def test_a_library_caller_meets_the_same_bounds(tmp_path: Path) -> None:
    from medspot.live.loop.request import run_live

    out = tmp_path / "run"
    for bad, says in (
        ({"seed": -1}, "--seed -1: must be from 0 to 4294967295"),
        ({"repeats": 101}, "--repeats 101: must be from 1 to 100"),
        ({"max_cost": float("inf")}, "--max-cost inf: must be a finite number"),
        ({"options": {"timeout": 0}}, "timeout 0: must be more than 0"),
    ):
        with pytest.raises(ConfigError, match=says):
            run_live(live_request(env=ENV, model="oracle", out=out, **bad))
        assert not out.exists()


def _price_file(path: Path) -> Path:
    path.write_text('{"models": {"gpt-5.4": {"input": "cheap", "output": -1}}}')
    return path


@pytest.mark.parametrize("existing", [False, True], ids=["new folder", "empty folder"])
@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--mode", "agent", "--model", "uground-v1-7b"), "has no agent prompt of its own"),
        (("--model", "openai-computer-use"), "plans by itself: run it with --mode agent"),
        (("--model", "anthropic-computer-use"), "plans by itself: run it with --mode agent"),
        (
            (
                "--mode",
                "agent",
                "--model",
                "openai-computer-use",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--price-file",
                "PRICES",
            ),
            "models.gpt-5.4.input: Input should be a valid number",
        ),
    ],
    ids=["grounder in agent mode", "openai guided", "anthropic guided", "bad price file"],
)
def test_a_refused_agent_leaves_no_folder_and_no_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], says: str,
    existing: bool,
) -> None:  # fmt: skip
    out = tmp_path / "run"
    if existing:
        out.mkdir()
    prices = str(_price_file(tmp_path / "prices.json"))
    argv = ["live", "run", "--env", ENV, "--out", str(out), "--no-progress",
            *(prices if a == "PRICES" else a for a in extra)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and "validation error" not in err
    assert "errors.pydantic.dev" not in err
    assert (list(out.iterdir()) == []) if existing else not out.exists()


def test_an_unknown_task_of_a_task_file_points_to_that_files_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = subset_file(tmp_path / "two.json", ["open-study-ct-doe-john", "lookup-doe-joan"])
    out = tmp_path / "run"
    code = main(_live_run(out, "--tasks-file", str(tasks), "--tasks", "nope,lookup-doe-jaon"))
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    listing = f"medspot live tasks --env {ENV} --tasks-file {tasks}"
    assert f"unknown task id(s) in {tasks}: nope, lookup-doe-jaon" in err
    assert "did you mean 'lookup-doe-joan'?" in err and f"`{listing}` lists them" in err
    assert main(listing.split()[1:]) == 0
    listed = [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["open-study-ct-doe-john", "lookup-doe-joan"]  # the file's, not packaged


def test_a_replay_line_for_a_task_that_exists_nowhere_is_refused_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    replay = tmp_path / "answers.jsonl"
    replay.write_text(
        '{"task": "open-study-ct-doe-john", "n": 1, "oracle": true}\n\n'
        '{"task": "open-study-ct-doe-jhon", "n": 1, "raw_text": "click(1, 2)"}\n'
    )
    out = tmp_path / "run"
    argv = ["live", "run", "--env", ENV, "--model", "replay", "--replay-file", str(replay),
            "--tasks", "open-study-ct-doe-john", "--out", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{replay}, line 3: task 'open-study-ct-doe-jhon' is none of the packaged {ENV}" in err
    assert "did you mean 'open-study-ct-doe-john'?" in err
    assert not out.exists()
