"""`medspot live serve`: MedSPOT-Live for agents that bring their own loop (docs/live.md "MCP",
"OpenEnv"): an MCP server (`--mcp`, stdio or streamable HTTP) or an OpenEnv HTTP/WebSocket
server (`--openenv`) whose episodes are journaled into `--out` exactly as `live run` writes a
run folder."""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

from medspot.commands._common import (
    add_executor_args,
    add_spare_args,
    bootstrap_number,
    concurrency_number,
    env_spec,
    non_negative_float,
    seed_number,
    whole_number,
)
from medspot.commands._runlog import run_log
from medspot.errors import ConfigError
from medspot.limits import MAX_IDLE_TIMEOUT_S, MAX_PORT, MIN_IDLE_TIMEOUT_S

__all__ = ["register_serve"]

LIVE_LOG = "live.log"


def _task_ids(raw: str | None) -> tuple[str, ...]:
    if raw is None:
        return ()
    ids = tuple(t.strip() for t in raw.split(",") if t.strip())
    if not ids:
        raise ConfigError(f"--tasks {raw!r} names no task id (leave --tasks out to offer all)")
    return ids


def idle_timeout(text: str) -> float:
    """An argparse type: `--idle-timeout S`, 0 (never) or `MIN_IDLE_TIMEOUT_S` ..
    `MAX_IDLE_TIMEOUT_S` seconds."""
    v = non_negative_float(text)
    if v != 0 and not MIN_IDLE_TIMEOUT_S <= v <= MAX_IDLE_TIMEOUT_S:
        raise argparse.ArgumentTypeError(
            f"{text!r} must be 0 (never) or from {MIN_IDLE_TIMEOUT_S:g} to "
            f"{MAX_IDLE_TIMEOUT_S:g} seconds"
        )
    return v


def _transport(args: argparse.Namespace) -> str:
    """The transport: MCP's (stdio by default, or http); the OpenEnv server is HTTP only."""
    if args.openenv:
        if args.transport == "stdio":
            raise ConfigError(
                "--transport stdio is the MCP server's: the OpenEnv server serves HTTP and its "
                "WebSocket only (leave --transport out)"
            )
        return "http"
    transport: str = args.transport or "stdio"
    if args.port is not None and transport == "stdio":
        raise ConfigError("--port needs --transport http (stdio has no port)")
    return transport


def _serve(args: argparse.Namespace) -> int:
    from medspot.live.envs.registry import env_entry
    from medspot.live.serve.host import ServeOptions

    env_entry(args.env)
    if args.mcp == args.openenv:
        raise ConfigError("medspot live serve: give one of --mcp and --openenv")
    transport = _transport(args)
    out = Path(args.out)
    opts = ServeOptions(
        spec=env_spec(args, _task_ids(args.tasks)), out=out, mode=args.mode,
        concurrency=args.concurrency, seed=args.seed, n_boot=args.bootstrap,
        protocol="mcp" if args.mcp else "openenv",
    )  # fmt: skip
    args.run_folder = out
    with contextlib.ExitStack() as stack:
        sock = None
        if transport == "http":  # the port first: taken or not, before anything is written
            from medspot.live.serve.http import bind_port

            sock = stack.enter_context(bind_port(args.port or 0))
        stack.enter_context(run_log(out, out / LIVE_LOG, verbose=getattr(args, "verbose", 0)))
        if args.mcp:
            from medspot.live.serve.mcp_server import run_mcp

            return run_mcp(opts, sock, args.idle_timeout)
        from medspot.live.serve.openenv_server import run_openenv

        assert sock is not None
        return run_openenv(opts, sock, args.idle_timeout)


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
        "--transport", choices=["stdio", "http"], default=None,
        help="MCP: stdio (default; the client starts the server) or streamable HTTP on "
        "127.0.0.1 (the URL is printed); the OpenEnv server is HTTP",
    )  # fmt: skip
    s.add_argument("--port", type=whole_number(0, MAX_PORT), default=None, metavar="N",
                   help="HTTP port on 127.0.0.1 (default, or 0: a free one)")  # fmt: skip
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
    add_spare_args(
        s, "default: none, each start is a reset; one is prepared for the next start of the "
        "task its environment last started, which an agent that repeats a task takes",
    )  # fmt: skip
    add_executor_args(s)
    s.add_argument("--env-option", action="append", metavar="KEY=VALUE",
                   help="an option of the environment; repeatable")  # fmt: skip
    s.add_argument(
        "--tools", default=None, metavar="NAME",
        help="the tools track: typed tools over the application's API beside the GUI "
        "actions (orthanc)",
    )  # fmt: skip
    s.add_argument(
        "--idle-timeout", type=idle_timeout, default=IDLE_TIMEOUT_S, metavar="S",
        help="HTTP: a client silent this long has left; its episodes end as abandoned "
        f"(default {IDLE_TIMEOUT_S:g}; 0: never; else {MIN_IDLE_TIMEOUT_S:g} to "
        f"{MAX_IDLE_TIMEOUT_S:g})",
    )  # fmt: skip
    s.add_argument("--seed", type=seed_number, default=0, help="seed of the bootstrap")
    s.add_argument("--bootstrap", type=bootstrap_number, default=2000, metavar="N",
                   help="bootstrap resamples for the 95%% intervals")  # fmt: skip
    s.set_defaults(func=_serve)
