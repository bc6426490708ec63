"""`medspot live`: closed-loop evaluation in running clinical software (docs/live.md).

live run     run a model (any card, as `eval` takes it) through an environment's tasks
live tasks   list an environment's tasks, or validate a task file
live export  the oracle through every task, written as a MedSPOT-format dataset
live setup   install the environments' system packages (apt-get as root; else print)
live doctor  say what an environment is missing (exit 1 when something is)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from medspot.commands._common import adapter_options, positive_int, progress_bar
from medspot.commands.eval import add_model_args
from medspot.errors import ConfigError

__all__ = ["parse_env_options", "register"]


def parse_env_options(items: list[str] | None) -> dict[str, Any]:
    """`--env-option KEY=VALUE` pairs; true/false/numbers are converted."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--env-option {item!r}: expected KEY=VALUE")
        value: Any = raw
        if raw.lower() in ("true", "false"):
            value = raw.lower() == "true"
        else:
            try:
                value = int(raw)
            except ValueError:
                try:
                    value = float(raw)
                except ValueError:
                    value = raw
        out[key.strip().replace("-", "_")] = value
    return out


def _task_ids(args: argparse.Namespace) -> tuple[str, ...]:
    ids = [t.strip() for t in (args.tasks or "").split(",") if t.strip()]
    return tuple(ids)


def _env_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument("--env", required=required, metavar="ENV", help="a live environment")


def _selection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tasks", default=None, metavar="IDS", help="only these task ids (a,b,c)")
    p.add_argument(
        "--tasks-file", default=None, metavar="FILE", help="a task file instead of the packaged"
    )
    p.add_argument(
        "--concurrency", type=positive_int, default=1, metavar="N",
        help="environments side by side (default 1)",
    )  # fmt: skip
    p.add_argument(
        "--env-option", action="append", metavar="KEY=VALUE",
        help="an option of the environment (e.g. headless=false); repeatable",
    )  # fmt: skip
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _nonnegative_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text}")
    return v


def _executor_args(p: argparse.ArgumentParser) -> None:
    from medspot.live.loop.executors import DEFAULT_RAY_CPUS_PER_ENV, EXECUTORS

    p.add_argument(
        "--executor", choices=list(EXECUTORS), default="threads",
        help="where environments run: threads of this process (default) or Ray actors, "
        "on this machine or a cluster (pip install 'medspot[ray]')",
    )  # fmt: skip
    p.add_argument(
        "--ray-address", default=None, metavar="ADDRESS",
        help="ray: join this cluster (`auto`, or HOST:PORT of its head); default: start a "
        "local cluster for this run",
    )  # fmt: skip
    p.add_argument(
        "--ray-cpus-per-env", type=_nonnegative_float, default=None, metavar="CPUS",
        help=f"ray: CPUs each environment actor asks for (default {DEFAULT_RAY_CPUS_PER_ENV:g}; "
        "a fraction packs more per node)",
    )  # fmt: skip


def _bar(args: argparse.Namespace, desc: str) -> tuple[Any, Callable[[Any], None] | None]:
    bar = progress_bar(args.no_progress, desc=desc)
    return bar, (bar.update if bar else None)


def _run(args: argparse.Namespace) -> int:
    from medspot.live.core.registry import env_entry
    from medspot.live.loop.request import LiveRequest, run_live

    env_entry(args.env)
    out = Path(args.out)
    req = LiveRequest(
        env=args.env, model=args.model, out=out, task_ids=_task_ids(args),
        tasks_file=Path(args.tasks_file) if args.tasks_file else None,
        concurrency=args.concurrency, env_retries=args.env_retries, history=args.history,
        mode=args.mode,
        prompt_style=args.prompt or "native", seed=args.seed, n_boot=args.bootstrap,
        max_retries=args.max_retries, options=adapter_options(args),
        env_options=parse_env_options(args.env_option),
        executor=args.executor, ray_address=args.ray_address,
        ray_cpus_per_env=args.ray_cpus_per_env,
    )  # fmt: skip
    bar, update = _bar(args, "live")
    try:
        outcome = run_live(req, on_progress=update)
    except KeyboardInterrupt:
        if bar:
            bar.close()
        print(
            f"\nmedspot: interrupted. Every step so far is in {out}/live_journal.jsonl; run "
            "the same command again to resume.",
            file=sys.stderr,
        )
        return 130
    finally:
        if bar:
            bar.close()
    m, st = outcome.metrics, outcome.stats

    def pct(key: str) -> str:
        v = m.get(key)
        return "-" if v is None else f"{100 * v:.1f}%"

    print(
        f"{args.model} on {args.env}: {m.get('num_tasks', 0)} tasks scored; "
        f"success {pct('task_success_rate')}, harmful {pct('harmful_failure_rate')}, "
        f"recovery {pct('recovery_rate')}, intended-element hits {pct('intended_hit_rate')}"
    )
    print(
        f"{st.calls} model calls, {st.replayed} replayed from the journal, {st.faults} "
        f"environment faults ({st.envs_started} environments started). Results in {out}/"
    )
    if args.model == "oracle":
        print("note: `oracle` reads the target element from the application; not a model.")
    if outcome.info.status != "complete":
        print(
            f"medspot: the run is incomplete ({outcome.info.errors} tasks errored); run the "
            "same command again to retry them.",
            file=sys.stderr,
        )
        return 1
    return 0


def _tasks(args: argparse.Namespace) -> int:
    from medspot.live.core.taskfiles import env_task_file

    path = Path(args.validate) if args.validate else None
    tf, fp = env_task_file(args.env, path)
    if path is not None:
        print(f"{path}: {len(tf.tasks)} tasks for {tf.env}, valid (fingerprint {fp})")
        return 0
    for t in tf.tasks:
        tags = f" [{', '.join(t.tags)}]" if t.tags else ""
        print(f"{t.id}\t{len(t.steps)} steps, budget {t.budget}{tags}\t{t.instruction}")
    print(f"{len(tf.tasks)} tasks", file=sys.stderr)
    return 0


def _export(args: argparse.Namespace) -> int:
    from medspot.live.loop.dataset_export import export_env

    bar, update = _bar(args, "export")
    try:
        res = export_env(
            args.env, Path(args.out), task_ids=_task_ids(args),
            tasks_file=Path(args.tasks_file) if args.tasks_file else None,
            concurrency=args.concurrency, env_options=parse_env_options(args.env_option),
            on_progress=update,
        )  # fmt: skip
    finally:
        if bar:
            bar.close()
    print(
        f"{res.root}: {res.tasks} tasks, {res.steps} steps of {res.app} "
        f"(Annotations/{res.app}_Annotation.json, Images/{res.app}/)"
    )
    if res.skipped:
        print(f"not exported (the oracle did not complete them): {', '.join(res.skipped)}")
        return 1
    return 0


def _envs(name: str | None) -> list[str]:
    from medspot.live.core.registry import env_entry, env_names

    if name:
        env_entry(name)
        return [name]
    return env_names()


def _setup(args: argparse.Namespace) -> int:
    from medspot.live.core.registry import env_entry
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

    from medspot.live.core.registry import env_entry
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
    from medspot.live.core.registry import env_entry
    from medspot.live.services.host import missing_for

    if args.ray_resources:
        return _ray_resources(_envs(args.env))
    missing_any = False
    for n in _envs(args.env):
        problems = missing_for(env_entry(n))
        if problems:
            missing_any = True
            print(f"{n}: MISSING\n" + "\n".join(f"  - {p}" for p in problems))
        else:
            print(f"{n}: ok")
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
    add_model_args(r)
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
        "--env-retries", type=int, default=2, metavar="N",
        help="fresh environments per task after an environment fault (default 2)",
    )  # fmt: skip
    r.add_argument("--max-retries", type=int, default=4, metavar="N",
                   help="retries of a failed model call before it is an error")  # fmt: skip
    _executor_args(r)
    r.add_argument("--seed", type=int, default=0, help="seed for baselines and bootstrap")
    r.add_argument("--bootstrap", type=positive_int, default=2000, metavar="N",
                   help="bootstrap resamples for the 95%% intervals")  # fmt: skip
    r.set_defaults(func=_run)

    t = lsub.add_parser("tasks", help="list an environment's tasks or validate a task file")
    _env_args(t)
    t.add_argument("--validate", default=None, metavar="FILE", help="validate this task file")
    t.set_defaults(func=_tasks)

    x = lsub.add_parser("export", help="write the oracle's screens as a MedSPOT dataset")
    _env_args(x)
    x.add_argument("--out", required=True, metavar="DIR", help="dataset root to write")
    _selection_args(x)
    x.set_defaults(func=_export)

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
