"""`medspot serve-test`: run the OpenAI-compatible test server (the one the test suite uses)
on 127.0.0.1, to try the OpenAI path of `medspot eval` without a key or a model. It answers
every request with the same text (default "(500, 500)", the centre of a rel1000 screen) until
Ctrl-C. Then, in another shell:

    medspot eval --data DATA --limit 2 --model openai:test --convention rel1000 \\
        --base-url http://127.0.0.1:PORT/v1 --out results/try
"""

from __future__ import annotations

import argparse
import sys
import time

from medspot.commands._common import non_negative_float

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from medspot.errors import ConfigError
    from medspot.testing.openai_server import OpenAITestServer

    srv = OpenAITestServer(answer=args.answer, latency=args.latency, port=args.port)
    try:
        srv.start()
    except OSError as e:
        raise ConfigError(f"cannot serve on 127.0.0.1:{args.port}: {e.strerror or e}") from None
    try:
        print(f"serving {srv.base_url} (answer {args.answer!r}); Ctrl-C stops", flush=True)
        print(
            f"try: medspot eval --data DATA --limit 2 --model openai:test --convention "
            f"rel1000 --base-url {srv.base_url} --out results/try",
            file=sys.stderr,
            flush=True,
        )
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print(f"stopped after {srv.request_count} request(s)", file=sys.stderr)
        return 0
    finally:
        srv.close()


def _port(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0..65535)")
    return v


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve-test",
        help="run the local OpenAI-compatible test server (try eval without a key)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--port", type=_port, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--answer", default="(500, 500)", help="the text every request gets")
    p.add_argument(
        "--latency", type=non_negative_float, default=0.0, metavar="S", help="seconds per answer"
    )
    p.set_defaults(func=_run)
