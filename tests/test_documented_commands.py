"""Every command README.md and docs/**/*.md show runs exactly as written (`_doc_commands`): twice,
with its output piped and on a pseudo-terminal, never with `--no-progress` added, and exits 0
or the status `EXPECTED_STATUS` documents. A command that truly cannot run in a test is in
`CANNOT_RUN` with its reason, and that table may only name commands the docs still show.

The commands of one section (the heading above them) run in order in a fresh working folder,
once per mode. The environment is prepared as a user's would be, the commands are not changed:

- `DATA` is a dataset folder (a small synthetic suite);
- `Tajamul21/MedSPOT` is in a local hub cache laid out as the hub lays it out (the real
  annotation files, placeholder screenshots), read with `HF_HUB_OFFLINE=1`;
- every `http://127.0.0.1:PORT` a command names, `$OPENAI_BASE_URL` and `$ANTHROPIC_BASE_URL`
  are the project's test server (`medspot.testing`; chat completions, Responses and Messages
  APIs), answering like the model the command names (`_served_model`; a computer-use model
  gets a text answer, which ends its task); `$OPENAI_API_KEY` (the variable the README
  exports) and `$ANTHROPIC_API_KEY` are fake keys;
- a `--replay-file` a command names holds, per task, one wrong click and then the oracle;
- for `make`, the working folder is a copy of the repository whose `.venv` is the environment
  these tests run in, with make's install steps marked done (make would otherwise install into
  it);
- the medspot cache is a folder of the test session (holding the installed OHIF viewer, when
  there is one), as are the mypy and ruff caches, so that the second run does not repeat them;
- for `inspect` (Inspect's `inspect eval medspot/...`), medspot is installed as
  `pip install 'medspot[inspect]'` installs it: with the `inspect_ai` entry point
  pyproject.toml declares (`_inspect_support.inspect_site`, first on PYTHONPATH).

Sections with a command that starts a live environment are marked `live` (run them under the
live lock); they skip when the environment is missing, and fail instead under
MEDSPOT_REQUIRE_LIVE=1.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _doc_commands import (
    DocCommand,
    commands_in,
    documented_commands,
    ports_named,
    run_on_pty,
    run_piped,
    tail,
)
from _inspect_support import inspect_site
from _served_model import answer
from medspot.testing.openai_server import OpenAITestServer

sys.path.insert(0, str(Path(__file__).parent / "live"))
from _container_support import IMAGE_BUILD_TIMEOUT_S
from _orthanc_support import require_live

REPO = Path(__file__).resolve().parents[1]
COMMANDS = documented_commands(REPO)
__all__ = ["inspect_site"]  # the fixture, used by name for the sections with `inspect`

# Commands the docs show that a test cannot run, and why (each must still be in the docs).
CANNOT_RUN: dict[str, str] = {
    "make test": "runs the whole test suite, this test included (it would run itself); CI "
    "runs it as its last step (.ci/run)",
    "make bench": "minutes of timing measurements on every core (benchmarks/README.md): "
    "numbers for a quiet machine, not a pass/fail check, and meaningless under a test suite",
    "medspot live setup": "installs Debian packages with apt-get as root, changing the machine "
    "and needing the network; .ci/run installs the same packages before the tests",
    "medspot live setup --env ohif": "fetches the OHIF viewer from the npm registry (network) "
    "into the user's cache; .ci/run runs it before the tests",
    "medspot live serve --env orthanc-explorer --mcp --transport http --port 8931 --tasks "
    "open-study-ct-doe-john,delete-study-ct-doe-john --out results/mcp-agent": "a server: it "
    "serves until Ctrl-C; tests/live/test_serve_mcp.py starts it (--transport http) and drives "
    "real tasks through it with the official mcp client, and test_serve_docs_examples.py runs "
    "the section's Python agent as written",
    "medspot live serve --env orthanc-explorer --openenv --port 8932 --tasks "
    "open-study-ct-doe-john --out results/openenv-agent": "a server: it serves until Ctrl-C; "
    "tests/live/test_serve_openenv.py starts it and steps a task with the OpenEnv client, and "
    "test_serve_docs_examples.py runs the section's Python client as written",
}
# Documented exit statuses other than 0.
EXPECTED_STATUS: dict[str, tuple[int, ...]] = {
    "medspot live doctor": (0, 1),  # 1: something is missing (0 required in CI, see below)
}
COMMAND_TIMEOUT_S = 1800.0
MODES = ("piped", "pty")
FAKE_KEY = "sk-medspot-test-not-a-real-key"
PORT_LOCK = Path("/tmp/medspot-documented-ports.lock")


def _sections() -> dict[tuple[str, str], list[DocCommand]]:
    out: dict[tuple[str, str], list[DocCommand]] = {}
    for c in COMMANDS:
        out.setdefault((c.file, c.section), []).append(c)
    return out


SECTIONS = _sections()


def _params() -> list[object]:
    out: list[object] = []
    for (file, section), cmds in SECTIONS.items():
        runnable = [c for c in cmds if c.key not in CANNOT_RUN]
        if not runnable:
            continue
        marks = [pytest.mark.slow]
        if any(c.starts_live_environment for c in runnable):
            marks.append(pytest.mark.live)
        if any(c.needs_container_engine for c in runnable):  # it may build an image
            marks.append(pytest.mark.timeout(IMAGE_BUILD_TIMEOUT_S))
        ident = f"{file}:{section}".replace(" ", "_")
        out.append(pytest.param(file, section, id=ident, marks=marks))
    return out


# -- the prepared environment ---------------------------------------------------------------------
@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("documented")


@pytest.fixture(scope="session")
def medspot_cache(session_dir: Path) -> Path:
    """A medspot cache of this session, holding the installed OHIF viewer if there is one, and
    the images' folder of the real one (the wheels of medspot's dependencies that an image
    build downloads once, and the lock that makes builds take turns: `live image build` as
    documented then finds what the container tests' build made)."""
    from medspot.cache import cache_root

    cache = session_dir / "medspot-cache"
    cache.mkdir()
    real = cache_root()
    if (real / "ohif").is_dir():
        (cache / "ohif").symlink_to(real / "ohif", target_is_directory=True)
    (real / "images").mkdir(parents=True, exist_ok=True)
    (cache / "images").symlink_to(real / "images", target_is_directory=True)
    return cache


@pytest.fixture(scope="session")
def data_suite(session_dir: Path) -> Path:
    """What `DATA` stands for: a dataset root (a small synthetic suite)."""
    from medspot.synth import generate

    root = session_dir / "synth-data"
    generate(root, tasks=6, seed=0, apps=2)
    return root


def _hub_cache(session_dir: Path, placeholder_root: Path) -> Path:
    """`Tajamul21/MedSPOT` in a hub cache laid out as huggingface_hub lays it out: the real
    annotation files and placeholder screenshots under the snapshot's `MedPSOT_bench/`."""
    from test_hub import REPO as HUB_REPO
    from test_hub import add_file

    hub = session_dir / "hf-home" / "hub"
    if not hub.is_dir():
        hub.mkdir(parents=True)
        for f in sorted(p for p in placeholder_root.rglob("*") if p.is_file()):
            rel = f.relative_to(placeholder_root).as_posix()
            add_file(hub, HUB_REPO, f"MedPSOT_bench/{rel}", f.read_bytes())
        add_file(hub, HUB_REPO, "README.md", b"# MedSPOT\n")
    return hub


def _venv() -> Path:
    prefix = Path(sys.prefix)
    if prefix == Path(sys.base_prefix):
        pytest.fail("the documented `make` commands need the tests to run in a virtual environment")
    return prefix


def _repo_copy(dest: Path) -> None:
    """The working tree (tracked and untracked files, not the ignored ones) copied to `dest`,
    with `.venv` the environment these tests run in and make's install steps marked done."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
        capture_output=True, check=False,
    )  # fmt: skip
    if listed.returncode == 0:
        for rel in filter(None, listed.stdout.decode().split("\0")):
            src = REPO / rel
            if src.is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest / rel)
    else:  # not a git checkout
        skip = shutil.ignore_patterns(".git", ".venv", "results", "*cache*", "__pycache__")
        shutil.copytree(REPO, dest, dirs_exist_ok=True, symlinks=True, ignore=skip)
    real = _venv()
    venv = dest / ".venv"
    venv.mkdir()
    shutil.copy2(real / "pyvenv.cfg", venv / "pyvenv.cfg")
    for part in ("bin", "lib", "lib64", "include"):
        if (real / part).exists():
            (venv / part).symlink_to(real / part, target_is_directory=True)
    # make's order, in the past: pyproject.toml < .venv/.installed < .venv/.installed-dev
    now = time.time()
    for age, path in ((30, dest / "pyproject.toml"), (20, venv / ".installed"),
                      (10, venv / ".installed-dev")):  # fmt: skip
        path.touch()
        os.utime(path, (now - age, now - age))


def _replay_file(path: Path, env: str) -> None:
    """Per packaged task of `env`: one click in the screen's corner, then the oracle."""
    from medspot.live.envs.taskfiles import env_task_file

    tf, _ = env_task_file(env, None)
    lines: list[dict[str, object]] = []
    for t in tf.tasks:
        lines.append({"task": t.id, "action": {"kind": "click", "x": 3, "y": 3}})
        lines.extend({"task": t.id, "oracle": True} for _ in t.steps)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


@contextlib.contextmanager
def _servers(ports: list[int]) -> Iterator[str]:
    """The test server on each port the commands name and on a free one (for
    $OPENAI_BASE_URL), all answering as `_served_model`; yields the free one's URL."""
    PORT_LOCK.touch(exist_ok=True)
    with PORT_LOCK.open("r") as lock, contextlib.ExitStack() as stack:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one holder of the docs' ports on this machine
        for port in ports:
            try:
                stack.enter_context(OpenAITestServer(answer=answer, port=port))
            except OSError as e:
                pytest.fail(f"port {port}, which the docs name, is in use here: {e}")
        free = stack.enter_context(OpenAITestServer(answer=answer))
        yield free.base_url


def _require_envs(cmds: list[DocCommand], env: dict[str, str]) -> None:
    """Skip (fail under MEDSPOT_REQUIRE_LIVE=1) when an environment a command starts lacks
    something, as `medspot live doctor --env ENV` says, or a command needs a container engine
    and there is none."""
    for name in dict.fromkeys(c.env for c in cmds if c.starts_live_environment and c.env):
        doctor = subprocess.run(
            ["medspot", "live", "doctor", "--env", name], env=env, capture_output=True,
            text=True, check=False,
        )  # fmt: skip
        require_live(doctor.returncode == 0, f"the {name} environment ({doctor.stdout.strip()})")
    if any(c.needs_container_engine for c in cmds):
        from medspot.errors import ConfigError
        from medspot.live.images.engine import find_engine

        try:
            find_engine()
        except ConfigError as e:
            require_live(False, f"a container engine ({e})")


def _environment(work: Path, cache: Path, session: Path, base_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("OPENAI_ORG_ID", None)
    bindir = str(Path(sys.executable).parent)
    env.update(
        PATH=bindir + os.pathsep + env.get("PATH", ""),
        MEDSPOT_CACHE=str(cache),
        HF_HOME=str(session / "hf-home"),
        HF_HUB_CACHE=str(session / "hf-home" / "hub"),
        HF_HUB_OFFLINE="1",
        OPENAI_API_KEY=FAKE_KEY,
        OPENAI_BASE_URL=base_url,
        ANTHROPIC_API_KEY=FAKE_KEY,
        ANTHROPIC_BASE_URL=base_url.removesuffix("/v1"),  # the client adds /v1/messages
        MYPY_CACHE_DIR=str(session / "mypy-cache"),
        RUFF_CACHE_DIR=str(session / "ruff-cache"),
    )
    return env


def _expected(c: DocCommand) -> tuple[int, ...]:
    codes = EXPECTED_STATUS.get(c.key, (0,))
    if c.key == "medspot live doctor" and os.environ.get("MEDSPOT_REQUIRE_LIVE") == "1":
        return (0,)  # CI installed everything: nothing may be missing
    return codes


# -- the tests ------------------------------------------------------------------------------------
@pytest.mark.parametrize(("file", "section"), _params())
def test_documented_commands_run_as_written(
    file: str,
    section: str,
    tmp_path: Path,
    session_dir: Path,
    medspot_cache: Path,
    data_suite: Path,
    request: pytest.FixtureRequest,
) -> None:
    """The section's commands piped, then on a pseudo-terminal, each mode in a fresh working
    folder (one test, so that the second mode finds the caches the first one filled: the
    same worker runs both)."""
    cmds = [c for c in SECTIONS[(file, section)] if c.key not in CANNOT_RUN]
    for mode in MODES:
        _run_section(cmds, mode, tmp_path / mode, session_dir, medspot_cache, data_suite, request)


def _run_section(
    cmds: list[DocCommand],
    mode: str,
    folder: Path,
    session_dir: Path,
    medspot_cache: Path,
    data_suite: Path,
    request: pytest.FixtureRequest,
) -> None:
    work = folder / "work"
    work.mkdir(parents=True)
    if any(c.argv[0] == "make" for c in cmds):
        _repo_copy(work)
    (work / "DATA").symlink_to(data_suite, target_is_directory=True)
    if any("Tajamul21/MedSPOT" in c.text for c in cmds):
        _hub_cache(session_dir, request.getfixturevalue("placeholder_root"))
    for c in cmds:
        a = c.argv
        if "--replay-file" in a and c.env:
            _replay_file(work / a[a.index("--replay-file") + 1], c.env)
    run = run_piped if mode == "piped" else run_on_pty
    with _servers(ports_named(cmds)) as base_url:
        env = _environment(work, medspot_cache, session_dir, base_url)
        if any(c.argv[0] == "inspect" for c in cmds):  # medspot installed with its entry point
            site = request.getfixturevalue("inspect_site")
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
        _require_envs(cmds, env)
        for c in cmds:
            assert "--no-progress" not in c.argv, f"{c.where()}: documented with --no-progress"
            ran = run(c.text, work, env, COMMAND_TIMEOUT_S)
            print(f"{c.where()} ({mode}): exit {ran.code} in {ran.seconds:.1f} s: {c.key}")
            assert not ran.timed_out, (
                f"{c.where()} ({mode}) did not end within {COMMAND_TIMEOUT_S:.0f} s: {c.key}\n"
                + tail(ran.output)
            )
            assert ran.code in _expected(c), (
                f"{c.where()} ({mode}) exited {ran.code}, expected {_expected(c)}: {c.key}\n"
                + tail(ran.output)
            )
            assert "Traceback (most recent call last)" not in ran.output, (
                f"{c.where()} ({mode}) printed a traceback: {c.key}\n" + tail(ran.output)
            )


def test_the_table_of_commands_that_cannot_run_names_documented_ones() -> None:
    shown = {c.key for c in COMMANDS}
    stale = sorted(k for k in [*CANNOT_RUN, *EXPECTED_STATUS] if k not in shown)
    assert not stale, f"the docs no longer show {stale}: drop them from the tables"


def test_the_docs_show_the_readme_commands() -> None:
    keys = [c.key for c in COMMANDS if c.file == "README.md"]
    assert keys[:2] == ["make demo", "make test"]
    assert any(k.startswith("medspot live run ") for k in keys)


def test_the_pages_in_folders_under_docs_are_read() -> None:
    """docs/live.md is an entry page; its pages are in docs/live/ and docs/live/environments/,
    and their commands run like the others."""
    files = {c.file for c in COMMANDS}
    assert {"docs/live/running.md", "docs/live/environments/invesalius.md"} <= files


def test_documented_live_runs_pick_a_few_tasks() -> None:
    """Each documented live run or export runs twice in CI: it must name `--tasks`."""
    for c in COMMANDS:
        if c.starts_live_environment and c.argv[2] in ("run", "export"):
            assert "--tasks" in c.argv, f"{c.where()}: a documented live command without --tasks"
        if c.starts_live_environment and c.argv[0] == "inspect":  # Inspect's live task
            assert any(w.startswith("tasks=") for w in c.argv), f"{c.where()}: no -T tasks="


def test_commands_are_found_in_shell_blocks_only() -> None:
    text = (
        "# Title\n\nmedspot not-in-a-block\n\n## First\n\n```sh\n"
        "medspot eval --data DATA \\\n    --model oracle   # a comment\n"
        "$ make demo\n  medspot models\necho medspot no\n```\n\n"
        "### Usage\n\n```text\nmedspot synth --out DIR [--tasks N]\n```\n\n"
        "```\nmedspot stats DATA\n```\n\n````bash\n```\nmedspot validate X\n````\n"
        "```python\nmedspot = 1\n```\n"
    )
    found = commands_in(text, "x.md")
    assert [(c.line, c.section, c.key) for c in found] == [
        (8, "First", "medspot eval --data DATA --model oracle"),
        (10, "First", "make demo"),
        (11, "First", "medspot models"),
        (22, "Usage", "medspot stats DATA"),
        (27, "Usage", "medspot validate X"),
    ]
    inspect = commands_in("```sh\ninspect eval medspot/medspot_live -T env=ohif --model m\n"
                          "inspect eval medspot/medspot -T data=DATA\n```\n", "z.md")  # fmt: skip
    assert [(c.starts_live_environment, c.env) for c in inspect] == [(True, "ohif"), (False, None)]
    assert found[0].text == "medspot eval --data DATA \\\n    --model oracle   # a comment"
    assert not found[0].starts_live_environment
    live = commands_in("```sh\nmedspot live run --env ohif --out r\nmedspot live tasks --env "
                       "ohif\n```\n", "y.md")  # fmt: skip
    assert [c.starts_live_environment for c in live] == [True, False]
    assert live[0].env == "ohif"
