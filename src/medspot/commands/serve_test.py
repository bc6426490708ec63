"""`medspot serve-test`: run the OpenAI-compatible test server (the one the test suite uses)
on 127.0.0.1, to try the OpenAI path of `medspot eval` without a key or a model. It answers
every request with the same text (default "(500, 500)", the centre of a rel1000 screen) until
Ctrl-C. Then, in another shell:

    medspot eval --data DATA --limit 2 --model openai:test --convention rel1000 \\
        --base-url http://127.0.0.1:PORT/v1 --out results/try

With `--script FILE` it plays scripted computer-use conversations instead, in both the
Responses API's and the Messages API's formats (`medspot.testing.cu_script`), for
`medspot live run --mode agent --model openai-computer-use --base-url http://127.0.0.1:PORT/v1`
or `--model anthropic-computer-use --base-url http://127.0.0.1:PORT`.
"""

from __future__ import annotations

import argparse
import sys
import time

from medspot.commands._common import non_negative_float

__all__ = ["register"]

DEFAULT_ANSWER = "(500, 500)"  # the centre of a rel1000 screen


def _run(args: argparse.Namespace) -> int:
    from medspot.errors import ConfigError
    from medspot.testing.openai_server import OpenAITestServer

    responder = None
    if args.script:
        from pathlib import Path

        from medspot.testing.cu_script import ScriptedComputerUse, load_script

        if args.answer is not None:
            raise ConfigError(
                "--answer and --script go apart: a script answers every request it matches "
                "with its own turns (and refuses the others)"
            )
        responder = ScriptedComputerUse(load_script(Path(args.script)))
    answer = DEFAULT_ANSWER if args.answer is None else args.answer
    srv = OpenAITestServer(answer=answer, responder=responder, latency=args.latency, port=args.port)
    try:
        srv.start()
    except OSError as e:
        raise ConfigError(f"cannot serve on 127.0.0.1:{args.port}: {e.strerror or e}") from None
    try:
        if responder is not None:
            print(f"serving {srv.base_url} (OpenAI) and {srv.root_url} (Anthropic) with the "
                  f"script {args.script}; Ctrl-C stops", flush=True)  # fmt: skip
            print(
                "try: medspot live run --env orthanc-explorer --mode agent --model "
                f"openai-computer-use --base-url {srv.base_url} --out results/try "
                "(a placeholder key in OPENAI_API_KEY)",
                file=sys.stderr,
                flush=True,
            )
        else:
            print(f"serving {srv.base_url} (answer {answer!r}); Ctrl-C stops", flush=True)
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
    p.add_argument(
        "--answer", default=None,
        help=f"the text every request gets (default {DEFAULT_ANSWER!r}; not with --script)",
    )  # fmt: skip
    p.add_argument(
        "--script", default=None, metavar="FILE",
        help="scripted computer-use conversations (JSON; medspot.testing.cu_script)",
    )  # fmt: skip
    p.add_argument(
        "--latency", type=non_negative_float, default=0.0, metavar="S", help="seconds per answer"
    )
    p.set_defaults(func=_run)
