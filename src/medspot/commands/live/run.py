"""`medspot live run`: a model (any card, as `eval` takes it; a planner and a grounder; a
computer-use API) through an environment's tasks, journaled into a live run folder."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from medspot.adapters.retry import MAX_RETRIES
from medspot.commands._common import (
    adapter_options,
    add_executor_args,
    add_model_args,
    bootstrap_number,
    env_spec,
    non_negative_float,
    retries_number,
    seed_number,
    whole_number,
)
from medspot.commands.live._common import (
    env_args,
    run_logged,
    selection_args,
    task_ids,
)
from medspot.errors import BudgetExceeded, ConfigError
from medspot.limits import MAX_REPEATS, MAX_SEED

__all__ = ["GIVEN_UP_EXIT_STATUS", "register"]

# The run finished, but tasks ended as environment errors whose fault recurs on every fresh
# environment: running the command again does not retry them (--retry-env-errors does).
GIVEN_UP_EXIT_STATUS = 4


def _model_name(args: argparse.Namespace) -> str:
    """--model, or the planner + grounder pair's name (exactly one of the two)."""
    pair = args.planner or args.grounder
    if pair and args.model:
        raise ConfigError("give --model, or --planner and --grounder, not both")
    if pair:
        if not (args.planner and args.grounder):
            raise ConfigError("--planner and --grounder go together")
        return f"{args.planner}+{args.grounder}"
    if not args.model:
        raise ConfigError("live run needs --model NAME (or --planner MODEL --grounder CARD)")
    return str(args.model)


def _grounder_overrides(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if args.grounder_base_url:
        out["base_urls"] = args.grounder_base_url
    if args.grounder_backend:
        out["backend"] = args.grounder_backend
    if args.grounder_api_model:
        out["api_model"] = args.grounder_api_model
    return out


def _run(args: argparse.Namespace) -> int:
    from medspot.live.envs.registry import env_entry
    from medspot.live.loop.request import LiveRequest, run_live
    from medspot.live.loop.scheduler import LiveOptions
    from medspot.runfolder.layout import LIVE_JOURNAL

    env_entry(args.env)
    out = Path(args.out)
    model = _model_name(args)
    loop = LiveOptions(
        concurrency=args.concurrency, env_retries=args.env_retries, history=args.history,
        mode=args.mode, seed=args.seed, max_cost=args.max_cost,
        retry_env_errors=args.retry_env_errors, repeats=args.repeats,
    )  # fmt: skip
    req = LiveRequest(
        spec=env_spec(args, task_ids(args.tasks)), model=model, out=out, loop=loop,
        prompt_style=args.prompt, n_boot=args.bootstrap, max_retries=args.max_retries,
        options=adapter_options(args), planner=args.planner, grounder=args.grounder,
        grounder_options=_grounder_overrides(args),
    )  # fmt: skip
    outcome, stopped = run_logged(
        args, out, "live", lambda update: run_live(req, on_progress=update),
        f"Every step so far is in {out}/{LIVE_JOURNAL}",
    )  # fmt: skip
    if stopped is not None:  # Ctrl-C or SIGTERM, said so
        return stopped
    assert outcome is not None
    m, st = outcome.metrics, outcome.stats

    def pct(key: str) -> str:
        v = m.get(key)
        return "-" if v is None else f"{100 * v:.1f}%"

    print(
        f"{model} on {args.env}: {m.get('num_tasks', 0)} "
        f"{'runs (task x repeat)' if args.repeats > 1 else 'tasks'} scored; "
        f"success {pct('task_success_rate')}, harmful {pct('harmful_failure_rate')}, "
        f"recovery {pct('recovery_rate')}, intended-element hits {pct('intended_hit_rate')}"
    )
    if args.repeats > 1:
        print(
            f"{args.repeats} repeats per task: pass@{args.repeats} {pct('pass_at_k')} (some "
            f"repeat succeeded), pass^{args.repeats} {pct('pass_hat_k')} (all succeeded)"
        )
    if m.get("num_infeasible_tasks"):
        print(f"infeasible tasks: {pct('infeasible_accuracy')} reported infeasible, unchanged")
    spares = ""
    if st.spares_started or st.spare_faults:
        spares = (
            f"; {st.spares_started} spares started, {st.swaps} tasks began on one swapped in, "
            f"{st.spare_faults} spare faults"
        )
    print(
        f"{st.calls} model calls, {st.replayed} replayed from the journal, {st.faults} "
        f"environment faults ({st.envs_started} environments started{spares}). Results in "
        f"{out}/"
    )
    if model == "oracle":
        print("note: `oracle` reads the target element from the application; not a model.")
    if outcome.info.cost_usd:
        print(f"cost so far: ${outcome.info.cost_usd:.4f}")
    if st.budget_reached:
        raise BudgetExceeded(
            f"--max-cost {args.max_cost} reached; the run stopped before its next model call. "
            "Raise --max-cost and run the same command again to continue."
        )
    return _incomplete_status(outcome.info.status, outcome.info.errors, outcome.given_up, out)


def _incomplete_status(status: str, errors: int, given_up: tuple[str, ...], out: Path) -> int:
    """0 for a complete run; else say what is left and return 1 (running the command again
    retries it) or `GIVEN_UP_EXIT_STATUS` (only tasks whose environment fault recurs are left)."""
    from medspot.runfolder.layout import LIVE_JOURNAL

    if status == "complete":
        return 0
    if given_up:
        print(
            f"medspot: {len(given_up)} task(s) ended as environment errors whose fault recurs "
            f"on every fresh environment ({', '.join(given_up[:5])}"
            f"{' ...' if len(given_up) > 5 else ''}; the cause is in "
            f"{out}/{LIVE_JOURNAL} and the report); running the command again does not "
            "retry them, --retry-env-errors does.",
            file=sys.stderr,
        )
    retryable = errors - len(given_up)
    if retryable > 0:
        print(
            f"medspot: the run is incomplete ({retryable} tasks errored); run the same command "
            "again to retry them.",
            file=sys.stderr,
        )
        return 1
    return GIVEN_UP_EXIT_STATUS if given_up else 1


def register(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    r = lsub.add_parser("run", help="run a model through an environment's tasks")
    env_args(r)
    add_model_args(r, model_required=False)
    pg = r.add_argument_group("planner + grounder (agent mode, instead of --model)")
    pg.add_argument(
        "--planner", default=None, metavar="MODEL",
        help="a model that plans and names the element to act on in words",
    )  # fmt: skip
    pg.add_argument(
        "--grounder", default=None, metavar="CARD",
        help="a grounding model that finds the named element with its own prompt (--prompt)",
    )  # fmt: skip
    pg.add_argument(
        "--grounder-base-url", action="append", metavar="URL",
        help="the grounder's OpenAI-compatible server (default: --base-url)",
    )  # fmt: skip
    pg.add_argument(
        "--grounder-backend", choices=["openai", "hf"], default=None,
        help="the grounder's backend (default: --backend)",
    )  # fmt: skip
    pg.add_argument(
        "--grounder-api-model", default=None, metavar="NAME",
        help="the grounder's model name on its server (default: its card's checkpoint)",
    )  # fmt: skip
    r.add_argument("--out", required=True, metavar="RUN_DIR", help="run folder")
    selection_args(r)
    r.add_argument(
        "--history", choices=["none", "text", "actions"], default="actions",
        help="what the model is told of the steps done (default: their actions)",
    )  # fmt: skip
    r.add_argument(
        "--mode", choices=["guided", "agent"], default="guided",
        help="guided: the model is told the current step's instruction (default); agent: "
        "only the task's goal, it plans and ends by itself",
    )  # fmt: skip
    r.add_argument(
        "--repeats", type=whole_number(1, MAX_REPEATS), default=1, metavar="K",
        help="run each task K times, each on a freshly reset environment (pass@k, pass^k; "
        f"1 to {MAX_REPEATS}, default 1)",
    )  # fmt: skip
    r.add_argument(
        "--env-retries", type=retries_number, default=2, metavar="N",
        help="fresh environments per task after an environment fault (default 2)",
    )  # fmt: skip
    r.add_argument("--max-retries", type=retries_number, default=MAX_RETRIES, metavar="N",
                   help="retries of a failed model call before it is an error")  # fmt: skip
    r.add_argument(
        "--max-cost", type=non_negative_float, default=None, metavar="USD",
        help="start no model call once the run has cost this much (resumable; exit 3)",
    )  # fmt: skip
    r.add_argument(
        "--computer-tool", default=None, metavar="TYPE",
        help="the computer-use API's tool type or version (default: by the API model)",
    )  # fmt: skip
    r.add_argument(
        "--acknowledge-safety-checks", action="store_true", default=None,
        help="openai-computer-use: acknowledge the API's pending safety checks and go on "
        "(default: such a turn is an error and nothing is executed)",
    )  # fmt: skip
    r.add_argument(
        "--tools", default=None, metavar="NAME",
        help="the tools track: offer typed tools over the application's API beside the GUI "
        "actions (orthanc: Orthanc's REST API); tasks the tools cannot reach stay GUI-only",
    )  # fmt: skip
    add_executor_args(r)
    r.add_argument(
        "--seed",
        type=seed_number,
        default=0,
        help=f"seed for baselines and bootstrap (0 to {MAX_SEED}; default 0)",
    )
    r.add_argument("--bootstrap", type=bootstrap_number, default=2000, metavar="N",
                   help="bootstrap resamples for the 95%% intervals")  # fmt: skip
    r.set_defaults(func=_run)
