"""`medspot live serve`: MedSPOT-Live for agents that bring their own loop (docs/live.md "MCP",
"OpenEnv"): an MCP server (`--mcp`, stdio or streamable HTTP) or an OpenEnv HTTP/WebSocket
server (`--openenv`) whose episodes are journaled into `--out` exactly as `live run` writes a
run folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from medspot.commands._common import (
    bootstrap_number,
    concurrency_number,
    non_negative_float,
    parse_env_options,
    positive_int,
    seed_number,
)
from medspot.commands._runlog import run_log
from medspot.errors import ConfigError

__all__ = ["register_serve"]

LIVE_LOG = "live.log"


def _task_ids(raw: str | None) -> tuple[str, ...]:
    if raw is None:
        return ()
    ids = tuple(t.strip() for t in raw.split(",") if t.strip())
    if not ids:
        raise ConfigError(f"--tasks {raw!r} names no task id (leave --tasks out to offer all)")
    return ids


def _serve(args: argparse.Namespace) -> int:
    from medspot.live.envs.registry import env_entry
    from medspot.live.serve.host import ServeOptions

    env_entry(args.env)
    if args.mcp == args.openenv:
        raise ConfigError("medspot live serve: give one of --mcp and --openenv")
    if args.openenv and args.transport != "stdio":
        raise ConfigError("--transport is the MCP server's; the OpenEnv server is HTTP")
    if args.port is not None and args.mcp and args.transport == "stdio":
        raise ConfigError("--port needs --transport http (stdio has no port)")
    out = Path(args.out)
    opts = ServeOptions(
        env=args.env, out=out, mode=args.mode, concurrency=args.concurrency,
        task_ids=_task_ids(args.tasks),
        tasks_file=Path(args.tasks_file) if args.tasks_file else None,
        env_options=parse_env_options(args.env_option), tools=args.tools, seed=args.seed,
        n_boot=args.bootstrap, protocol="mcp" if args.mcp else "openenv",
    )  # fmt: skip
    args.run_folder = out
    with run_log(out, out / LIVE_LOG, verbose=getattr(args, "verbose", 0)):
        if args.mcp:
            from medspot.live.serve.mcp_server import run_mcp

            return run_mcp(opts, args.transport, args.port or 0, args.idle_timeout)
        from medspot.live.serve.openenv_server import run_openenv

        return run_openenv(opts, args.port or 0, args.idle_timeout)


def register_serve(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`medspot live serve` under `medspot live`."""
    from medspot.live.serve import IDLE_TIMEOUT_S

    s = lsub.add_parser(
        "serve", help="serve an environment's tasks to your own agent (MCP or OpenEnv)",
        description=__doc__,
    )  # fmt: skip
    s.add_argument("--env", required=True, metavar="ENV", help="a live environment")
    which = s.add_argument_group("protocol (one of)")
    which.add_argument("--mcp", action="store_true",
                       help="an MCP server (pip install 'medspot[mcp]')")  # fmt: skip
    which.add_argument(
        "--openenv", action="store_true",
        help="an OpenEnv HTTP/WebSocket server (pip install 'medspot[openenv]')",
    )  # fmt: skip
    s.add_argument(
        "--transport", choices=["stdio", "http"], default="stdio",
        help="MCP: stdio (default; the client starts the server) or streamable HTTP on "
        "127.0.0.1 (the URL is printed)",
    )  # fmt: skip
    s.add_argument("--port", type=positive_int, default=None, metavar="N",
                   help="HTTP port on 127.0.0.1 (default: a free one)")  # fmt: skip
    s.add_argument("--out", required=True, metavar="RUN_DIR",
                   help="the run folder the episodes are journaled into")  # fmt: skip
    s.add_argument("--tasks", default=None, metavar="IDS", help="offer only these task ids")
    s.add_argument("--tasks-file", default=None, metavar="FILE",
                   help="a task file instead of the packaged")  # fmt: skip
    s.add_argument(
        "--mode", choices=["agent", "guided"], default="agent",
        help="agent: the goal only (default); guided: also each step's instruction",
    )  # fmt: skip
    s.add_argument(
        "--concurrency", type=concurrency_number, default=1, metavar="N",
        help="environments side by side; with more than one, every call names its episode",
    )  # fmt: skip
    s.add_argument("--env-option", action="append", metavar="KEY=VALUE",
                   help="an option of the environment; repeatable")  # fmt: skip
    s.add_argument(
        "--tools", default=None, metavar="NAME",
        help="the tools track: typed tools over the application's API beside the GUI "
        "actions (orthanc)",
    )  # fmt: skip
    s.add_argument(
        "--idle-timeout", type=non_negative_float, default=IDLE_TIMEOUT_S, metavar="S",
        help="HTTP: a client silent this long has left; its episodes end as abandoned "
        f"(default {IDLE_TIMEOUT_S:g})",
    )  # fmt: skip
    s.add_argument("--seed", type=seed_number, default=0, help="seed of the bootstrap")
    s.add_argument("--bootstrap", type=bootstrap_number, default=2000, metavar="N",
                   help="bootstrap resamples for the 95%% intervals")  # fmt: skip
    s.set_defaults(func=_serve)
