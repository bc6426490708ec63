"""Every numeric option is checked against its bound (`medspot.limits`) before anything starts
or is written: a seed numpy's bootstrap refuses (`--seed -1` used to run the whole evaluation,
then exit 70), `--timeout 0` (read as "the default", 120 s), non-finite numbers (exit 70 when
run.json was written), counts that hang or exhaust memory after the run (a billion calls in
flight, bootstrap resamples, retries, zoom passes). The same bounds hold for a library caller."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from medspot.cli import main
from medspot.errors import ConfigError
from medspot.limits import MAX_SEED, check_number, check_seed, check_whole
from medspot.testing.openai_server import OpenAITestServer


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from medspot.synth.generate import generate

    root = tmp_path_factory.mktemp("suite")
    generate(root, tasks=2, seed=0, apps=1)
    return root


BAD = [
    (("--seed", "-1"), "--seed: '-1' must be 0 or more"),
    (("--seed", str(MAX_SEED + 1)), f"must be {MAX_SEED} at most"),
    (("--seed", "1.5"), "'1.5' is not a whole number"),
    (("--timeout", "0"), "--timeout: '0' must be more than 0"),
    (("--timeout", "inf"), "--timeout: 'inf' is not a finite number"),
    (("--timeout", "nan"), "--timeout: 'nan' is not a finite number"),
    (("--tolerance", "inf"), "--tolerance: 'inf' is not a finite number"),
    (("--max-cost", "inf"), "--max-cost: 'inf' is not a finite number"),
    (("--concurrency", "1000000000"), "--concurrency: '1000000000' must be 1024 at most"),
    (("--bootstrap", "1000000000"), "--bootstrap: '1000000000' must be 100000 at most"),
    (("--max-retries", "1000000000"), "--max-retries: '1000000000' must be 100 at most"),
    (("--zoom", "1000000"), "--zoom: '1000000' must be 10 at most"),
]


@pytest.mark.parametrize(("extra", "says"), BAD)
def test_eval_refuses_an_option_out_of_bounds_before_anything(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...],
    says: str,
) -> None:  # fmt: skip
    out = tmp_path / "run"
    with OpenAITestServer() as srv:
        t0 = time.monotonic()
        with pytest.raises(SystemExit) as e:
            main(["eval", "--data", str(suite), "--model", "openai:test", "--convention",
                  "rel1000", "--base-url", srv.base_url, "--out", str(out), *extra])  # fmt: skip
        assert srv.request_count == 0
    assert e.value.code == 2 and time.monotonic() - t0 < 10
    assert says in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["compare", "a", "b", "--seed", "-1"], "--seed: '-1' must be 0 or more"),
        (["synth", "--out", "x", "--seed", "-1"], "--seed: '-1' must be 0 or more"),
        (["demo", "--seed", "-1"], "--seed: '-1' must be 0 or more"),
        (["check-model", "openai:x", "--timeout", "0"], "--timeout: '0' must be more than 0"),
        (["report", "r", "--out", "x", "--bootstrap", "0"], "--bootstrap: '0' must be 1 or more"),
        (["serve-test", "--latency", "inf"], "--latency: 'inf' is not a finite number"),
    ],
)
def test_every_command_taking_such_an_option_refuses_it(
    argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2 and says in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_a_library_caller_meets_the_same_bounds_before_any_folder(
    suite: Path, tmp_path: Path
) -> None:
    from medspot.adapters.options import AdapterOptions
    from medspot.dataset.loading import load_dataset
    from medspot.pipeline import EvalRequest, evaluate
    from medspot.runner import RunOptions

    ds = load_dataset(suite)
    out = tmp_path / "run"
    for bad, says in (
        ({"seed": -1}, "--seed -1: must be from 0"),
        ({"seed": 2**40}, "--seed 1099511627776: must be from 0 to 4294967295"),
        ({"n_boot": 10**9}, "--bootstrap 1000000000: must be from 0 to 100000"),
        ({"concurrency": 0}, "--concurrency 0: must be from 1 to 1024"),
        ({"max_cost": float("nan")}, "--max-cost nan: must be a finite number"),
    ):
        run = {k: v for k, v in bad.items() if k != "n_boot"}  # the runner's options
        own = {k: v for k, v in bad.items() if k == "n_boot"}  # the request's
        req = EvalRequest(dataset=ds, model="random", out=out, run=RunOptions(**run), **own)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=says):
            evaluate(req)
        assert not out.exists()
    with pytest.raises(ConfigError, match="timeout 0: must be more than 0"):
        AdapterOptions(timeout=0)
    with pytest.raises(ConfigError, match="timeout inf: must be a finite number"):
        AdapterOptions.from_mapping({"timeout": float("inf")})


def test_the_bounds_in_one_place() -> None:
    assert check_seed(0) == 0 and check_seed(MAX_SEED) == MAX_SEED
    for bad in (-1, MAX_SEED + 1, True, 1.0, "3"):
        with pytest.raises(ConfigError):
            check_seed(bad)
    assert check_whole("--n", 5, 1, 5) == 5
    with pytest.raises(ConfigError, match="--n 6: must be from 1 to 5"):
        check_whole("--n", 6, 1, 5)
    assert check_number("--t", 0.5, above=True) == 0.5
    with pytest.raises(ConfigError, match="--t 0: must be more than 0"):
        check_number("--t", 0, above=True)
