"""`medspot live`: closed-loop evaluation in running clinical software (docs/live.md).

live run     run a model (any card, as `eval` takes it) through an environment's tasks
live tasks   list an environment's tasks, or validate a task file
live export  the oracle through every feasible task, written as a MedSPOT dataset
live audit   are the tasks sound? the oracle and a do-nothing agent through every task
live setup   install the environments' system packages (apt-get as root; else print)
live doctor  say what an environment is missing (exit 1 when something is)
live image   build and list the environments' container images (--executor container)
live serve   serve episodes to an agent that brings its own loop (MCP, OpenEnv)
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from medspot.adapters.retry import MAX_RETRIES
from medspot.commands._common import (
    adapter_options,
    add_executor_args,
    add_model_args,
    add_spare_args,
    bootstrap_number,
    concurrency_number,
    env_spec,
    non_negative_float,
    progress_bar,
    retries_number,
    seed_number,
    whole_number,
)
from medspot.commands._runlog import run_log
from medspot.errors import BudgetExceeded, ConfigError
from medspot.interrupts import exit_status
from medspot.limits import MAX_REPEATS, MAX_SEED

__all__ = ["GIVEN_UP_EXIT_STATUS", "register"]

# The run finished, but tasks ended as environment errors whose fault recurs on every fresh
# environment: running the command again does not retry them (--retry-env-errors does).
GIVEN_UP_EXIT_STATUS = 4


def _task_ids(args: argparse.Namespace) -> tuple[str, ...]:
    if args.tasks is None:
        return ()
    ids = [t.strip() for t in args.tasks.split(",") if t.strip()]
    if not ids:
        raise ConfigError(
            f"--tasks {args.tasks!r} names no task id (ids separated by commas; leave --tasks "
            "out to run every task)"
        )
    return tuple(ids)


@contextlib.contextmanager
def _logged(args: argparse.Namespace, run_folder: Path) -> Iterator[None]:
    """The command's log in full into `<run_folder>/live.log`, one line per record on stderr;
    a bug's traceback goes into the run folder too (`medspot.cli`)."""
    from medspot.runfolder.layout import LIVE_LOG

    args.run_folder = run_folder
    with run_log(run_folder, run_folder / LIVE_LOG, verbose=getattr(args, "verbose", 0)):
        yield


def _env_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument("--env", required=required, metavar="ENV", help="a live environment")


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", default=None, metavar="IDS", help="only these task ids (a,b,c)")
    p.add_argument(
        "--tasks-file", default=None, metavar="FILE", help="a task file instead of the packaged"
    )
    p.add_argument(
        "--concurrency", type=concurrency_number, default=1, metavar="N",
        help="environments side by side (default 1)",
    )  # fmt: skip
    add_spare_args(p, "default: the environment's own, 1 or 2; each adds its memory, docs/live.md")
    p.add_argument(
        "--env-option", action="append", metavar="KEY=VALUE",
        help="an option of the environment (e.g. headless=false); repeatable",
    )  # fmt: skip
    p.add_argument(
        "--retry-env-errors", action="store_true",
        help="run again the tasks given up on because their environment fault recurred",
    )  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _bar(args: argparse.Namespace, desc: str) -> tuple[Any, Callable[[Any], None] | None]:
    bar = progress_bar(args.no_progress, desc=desc)
    return bar, (bar.update if bar else None)


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

    env_entry(args.env)
    out = Path(args.out)
    model = _model_name(args)
    loop = LiveOptions(
        concurrency=args.concurrency, env_retries=args.env_retries, history=args.history,
        mode=args.mode, seed=args.seed, max_cost=args.max_cost,
        retry_env_errors=args.retry_env_errors, repeats=args.repeats,
    )  # fmt: skip
    req = LiveRequest(
        spec=env_spec(args, _task_ids(args)), model=model, out=out, loop=loop,
        prompt_style=args.prompt, n_boot=args.bootstrap, max_retries=args.max_retries,
        options=adapter_options(args), planner=args.planner, grounder=args.grounder,
        grounder_options=_grounder_overrides(args),
    )  # fmt: skip
    bar, update = _bar(args, "live")
    stopped: int | None = None
    # the exception is let go inside the log's block: what its frames held (environments, a
    # browser driver's futures) is collected, and reported, while the log still takes it
    with _logged(args, out):
        try:
            outcome = run_live(req, on_progress=update)
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM
            stopped = exit_status(e)
        finally:
            if bar:
                bar.close()
    if stopped is not None:
        print(
            f"\nmedspot: interrupted. Every step so far is in {out}/live_journal.jsonl; run "
            "the same command again to resume.",
            file=sys.stderr,
        )
        return stopped
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
    if status == "complete":
        return 0
    if given_up:
        print(
            f"medspot: {len(given_up)} task(s) ended as environment errors whose fault recurs "
            f"on every fresh environment ({', '.join(given_up[:5])}"
            f"{' ...' if len(given_up) > 5 else ''}; the cause is in "
            f"{out}/live_journal.jsonl and the report); running the command again does not "
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


def _tasks(args: argparse.Namespace) -> int:
    from medspot.live.envs.taskfiles import env_task_file

    if args.validate and args.tasks_file:
        raise ConfigError("give --validate FILE or --tasks-file FILE, not both")
    path = Path(args.validate or args.tasks_file) if args.validate or args.tasks_file else None
    tf, fp = env_task_file(args.env, path)
    if args.validate:
        print(f"{path}: {len(tf.tasks)} tasks for {tf.env}, valid (fingerprint {fp})")
        return 0
    for t in tf.tasks:
        tags = f" [{', '.join(t.tags)}]" if t.tags else ""
        print(f"{t.id}\t{len(t.steps)} steps, budget {t.budget}{tags}\t{t.instruction}")
    print(f"{len(tf.tasks)} tasks", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    from medspot.live.loop.dataset_export import (
        EXPORT_INFO,
        INFEASIBLE_LEFT_OUT,
        RUN_SUBDIR,
        export_env,
    )

    out = Path(args.out)
    spec = env_spec(args, _task_ids(args))
    bar, update = _bar(args, "export")
    stopped: int | None = None
    with _logged(args, out / RUN_SUBDIR):  # as in `_run`
        try:
            res = export_env(
                spec, out, concurrency=args.concurrency, on_progress=update,
                retry_env_errors=args.retry_env_errors,
            )  # fmt: skip
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM
            stopped = exit_status(e)
        finally:
            if bar:
                bar.close()
    if stopped is not None:
        print(
            f"\nmedspot: interrupted. The oracle's steps so far are in {out / RUN_SUBDIR}; run "
            "the same command again to resume.",
            file=sys.stderr,
        )
        return stopped
    print(
        f"{res.root}: {res.tasks} tasks, {res.steps} steps of {res.app} "
        f"(Annotations/{res.app}_Annotation.json, Images/{res.app}/, {EXPORT_INFO})"
    )
    if res.left_out:
        print(f"left out, {len(res.left_out)} task(s) ({INFEASIBLE_LEFT_OUT}): "
              f"{', '.join(res.left_out)}")  # fmt: skip
    if res.skipped:
        print(f"not exported (the oracle did not complete them): {', '.join(res.skipped)}")
        return 1
    return 0


def _audit(args: argparse.Namespace) -> int:
    import json
    import shutil
    import tempfile

    from medspot.live.loop.task_audit import audit_env

    spec = env_spec(args, _task_ids(args))  # bad input: exit 2, before anything is made
    work = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="medspot-audit-"))
    bar, update = _bar(args, "audit")
    try:
        res = audit_env(spec, work, concurrency=args.concurrency, on_progress=update)
    finally:
        if bar:
            bar.close()
        if not args.out:
            shutil.rmtree(work, ignore_errors=True)
    if args.out:
        (work / "audit.json").write_text(json.dumps(res.to_json(), indent=1), encoding="utf-8")
    for task, found in res.by_task().items():
        for f in found:
            print(f"{task}: {f.kind}: {f.message}")
    n = len({f.task for f in res.findings})
    print(
        f"{args.env}: {len(res.tasks)} tasks audited, {n} with findings"
        + (f" ({len(res.findings)} findings)" if res.findings else "")
        + (f"; the runs are in {work}/" if args.out else ""),
        file=sys.stderr,
    )
    return 1 if res.findings else 0


def _envs(name: str | None) -> list[str]:
    from medspot.live.envs.registry import env_entry, env_names

    if name:
        env_entry(name)
        return [name]
    return env_names()


def _setup(args: argparse.Namespace) -> int:
    from medspot.live.envs.registry import env_entry
    from medspot.live.services.host import (
        apt_commands,
        can_install,
        install_packages,
        run_setup_hooks,
    )

    entries = [env_entry(n) for n in _envs(args.env)]
    cmds = apt_commands(entries)
    if cmds and (args.print_only or not can_install()):
        print("Run as root:\n" + "\n".join("  " + " ".join(c) for c in cmds))
    elif cmds:
        install_packages(cmds, echo=lambda line: print(line, flush=True))
    if not args.print_only:  # an environment may fetch more (a pinned npm package, say)
        for name, what in run_setup_hooks(entries):
            print(f"{name}: {what}")
    return 0


def _ray_resources(names: list[str]) -> int:
    """The `ray start --resources` JSON of this node: the environments it has everything for
    (stdout, one line); what keeps the others out goes to stderr."""
    import json

    from medspot.live.envs.registry import env_entry
    from medspot.live.loop.executors.placement import node_resources
    from medspot.live.services.host import missing_for

    ready = []
    for n in names:
        problems = missing_for(env_entry(n))
        if problems:
            print(f"{n}: not declared (missing: {'; '.join(problems)})", file=sys.stderr)
        else:
            ready.append(n)
    print(json.dumps(node_resources(ready)))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    import os

    from medspot._version import __version__
    from medspot.live.envs.registry import env_entry
    from medspot.live.services.host import installed_versions, missing_for

    if args.ray_resources:
        return _ray_resources(_envs(args.env))
    if os.environ.get("MEDSPOT_IN_IMAGE") == "1":
        print(f"medspot {__version__} in an environment image", file=sys.stderr)
    missing_any = False
    for n in _envs(args.env):
        entry = env_entry(n)
        problems = missing_for(entry)
        found = installed_versions(entry)
        versions = ", ".join(f"{p} {v}" for p, v in found.items())
        if problems:
            missing_any = True
            print(f"{n}: MISSING\n" + "\n".join(f"  - {p}" for p in problems))
        else:
            print(f"{n}: ok")
        if versions:  # the application versions found (here, or inside an image)
            print(f"  versions: {versions}")
    if missing_any:
        print("`medspot live setup` installs the system packages (as root).", file=sys.stderr)
    return 1 if missing_any else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "live", help="closed-loop evaluation in running clinical software",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    lsub = p.add_subparsers(dest="live_command", metavar="SUBCOMMAND", required=True)

    r = lsub.add_parser("run", help="run a model through an environment's tasks")
    _env_args(r)
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
    _selection_args(r)
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

    t = lsub.add_parser("tasks", help="list an environment's tasks or validate a task file")
    _env_args(t)
    t.add_argument("--validate", default=None, metavar="FILE", help="validate this task file")
    t.add_argument(
        "--tasks-file", default=None, metavar="FILE",
        help="list this task file's tasks instead of the packaged ones",
    )  # fmt: skip
    t.set_defaults(func=_tasks)

    x = lsub.add_parser("export", help="write the oracle's screens as a MedSPOT dataset")
    _env_args(x)
    x.add_argument("--out", required=True, metavar="DIR", help="dataset root to write")
    _selection_args(x)
    add_executor_args(x)
    x.set_defaults(func=_export)

    a = lsub.add_parser(
        "audit", help="the oracle through the tasks, checks read at each start: what is unsound",
        description="Runs the oracle through the runner, reading every check at each task's "
        "start (what done() at once is judged on), and reports per task: "
        "oracle failures, tasks solved at their start, oracle actions that change nothing, "
        "vacuous checks. Exit 0: nothing found; 1: findings; 2: bad input.",
    )  # fmt: skip
    _env_args(a)
    a.add_argument(
        "--out", default=None, metavar="DIR",
        help="keep the oracle's run and audit.json here (default: a temporary folder)",
    )  # fmt: skip
    _selection_args(a)
    add_executor_args(a)
    a.set_defaults(func=_audit)

    s = lsub.add_parser("setup", help="install the environments' system packages")
    _env_args(s, required=False)
    s.add_argument("--print", dest="print_only", action="store_true",
                   help="only print the commands")  # fmt: skip
    s.set_defaults(func=_setup)

    d = lsub.add_parser("doctor", help="what an environment is missing (exit 1 if anything)")
    _env_args(d, required=False)
    d.add_argument(
        "--ray-resources", action="store_true",
        help="print this node's `ray start --resources` JSON: one resource per environment "
        "it has everything for",
    )  # fmt: skip
    d.set_defaults(func=_doctor)

    from medspot.commands.live_image import register_image
    from medspot.commands.live_serve import register_serve

    register_serve(lsub)
    register_image(lsub)
