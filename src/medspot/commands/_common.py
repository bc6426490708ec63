"""Options and helpers shared by the command modules."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medspot.adapters.keys import named_key
from medspot.adapters.options import AdapterOptions
from medspot.errors import ConfigError
from medspot.limits import (
    MAX_BOOTSTRAP,
    MAX_CONCURRENCY,
    MAX_RETRIES_LIMIT,
    MAX_SEED,
    MAX_SPARES,
)

if TYPE_CHECKING:
    from medspot.live.loop.envspec import EnvSpec

__all__ = [
    "adapter_options",
    "add_data_args",
    "add_executor_args",
    "add_model_args",
    "add_protocol_args",
    "add_spare_args",
    "bootstrap_number",
    "concurrency_number",
    "env_spec",
    "non_negative_float",
    "parse_apps",
    "parse_env_options",
    "positive_float",
    "positive_int",
    "progress_bar",
    "retries_number",
    "seed_number",
    "whole_number",
]


def _whole_in(text: str, least: int, most: int | None) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < least:
        raise argparse.ArgumentTypeError(f"{text!r} must be {least} or more")
    if most is not None and v > most:
        raise argparse.ArgumentTypeError(f"{text!r} must be {most} at most")
    return v


def whole_number(least: int, most: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from `least` to `most` (`medspot.limits`)."""

    def parse(text: str) -> int:
        return _whole_in(text, least, most)

    parse.__name__ = "whole number"  # argparse names the type in its own messages
    return parse


def positive_int(text: str) -> int:
    return _whole_in(text, 1, None)


def _finite(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return v


def non_negative_float(text: str) -> float:
    v = _finite(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return v


def positive_float(text: str) -> float:
    """A finite number above 0 (a timeout: 0 is refused, never read as the default)."""
    v = _finite(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
    return v


def seed_number(text: str) -> int:
    """A seed: a whole number 0 .. `limits.MAX_SEED`."""
    return _whole_in(text, 0, MAX_SEED)


# the bounded counts of `medspot.limits`, as argparse types
concurrency_number = whole_number(1, MAX_CONCURRENCY)
bootstrap_number = whole_number(1, MAX_BOOTSTRAP)
retries_number = whole_number(0, MAX_RETRIES_LIMIT)


def parse_apps(text: str | None) -> list[str] | None:
    if not text:
        return None
    apps = [a.strip() for a in text.split(",") if a.strip()]
    if not apps:
        raise ConfigError("--apps needs at least one application name")
    return apps


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str, doc: str | None
) -> argparse.ArgumentParser:
    """The parser of the command `name`: `help` its line in `medspot --help`, its module's
    docstring (`doc`) its description."""
    return sub.add_parser(name, help=help, description=doc)


def add_data_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument(
        "--data",
        required=required,
        metavar="DATA",
        help="dataset root (holding Annotations/ and Images/), a tree containing "
        "it, or a hub dataset (hf://Tajamul21/MedSPOT or Tajamul21/MedSPOT)",
    )
    p.add_argument("--apps", metavar="A,B", help="only these applications (comma separated)")
    p.add_argument("--limit", type=positive_int, metavar="N", help="first N tasks per app")


def add_protocol_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--protocol",
        default=None,
        metavar="P",
        help="scoring protocol: medspot-v1 (default) or a compatibility preset "
        "upstream-a ... upstream-e",
    )
    p.add_argument(
        "--tolerance",
        type=non_negative_float,
        default=None,
        metavar="PX",
        help="override the protocol's hit tolerance, in pixels of the original",
    )
    p.add_argument(
        "--bootstrap",
        type=bootstrap_number,
        default=2000,
        metavar="N",
        help="bootstrap resamples for the 95%% intervals (default 2000)",
    )


def out_dir(value: str | None, model: str) -> Path:
    if value:
        return Path(value)
    safe = model.replace("/", "_").replace(":", "_")
    return Path("results") / safe


_ADAPTER_OPTIONS = (
    "backend",
    "api_key_env",
    "timeout",
    "checkpoint",
    "device",
    "dtype",
    "batch_size",
    "replay_file",
    "convention",
    "prompt_template",
    "price_file",
    "api_model",
    "computer_tool",
    "acknowledge_safety_checks",
)


def adapter_options(args: argparse.Namespace) -> AdapterOptions:
    """The adapter options of the parsed command line (those a command defines), without
    unset ones. A variable named by `--api-key-env` must be set (checked here, before
    anything starts; the backends read it, `medspot.adapters.keys`)."""
    opts: dict[str, Any] = {k: getattr(args, k, None) for k in _ADAPTER_OPTIONS}
    opts["base_urls"] = getattr(args, "base_url", None) or []
    if getattr(args, "api_key_env", None) is not None:
        named_key(args.api_key_env)
    return AdapterOptions.from_mapping({k: v for k, v in opts.items() if v not in (None, [])})


class _Bar:
    """Drawn from the first call on, so that an error before any call prints no empty bar."""

    def __init__(self, desc: str) -> None:
        self._desc = desc
        self._bar: Any = None

    def update(self, ev: Any) -> None:
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=ev.units_total, unit=ev.unit, desc=self._desc,
                             file=sys.stderr, dynamic_ncols=True, mininterval=0.5)  # fmt: skip
        # tasks done of tasks (a sequential run asks a number of steps no one knows ahead:
        # a total counted in calls would shrink with every miss); calls made beside it
        post: dict[str, object] = {"calls": ev.done, "errors": ev.errors}
        if ev.cost_usd:
            post["cost"] = f"${ev.cost_usd:.4f}"
        self._bar.set_postfix(post, refresh=False)
        self._bar.update(ev.units_done - self._bar.n)  # redraws at most every mininterval

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def progress_bar(disabled: bool, desc: str = "eval") -> _Bar | None:
    """A progress bar on stderr for `runner.ProgressEvent`s, or None when disabled."""
    if disabled:
        return None
    return _Bar(desc)


def add_model_args(p: argparse.ArgumentParser, *, model_required: bool = True) -> None:
    """The model and backend options of `eval` and `live run` (`adapter_options` reads them)."""
    g = p.add_argument_group("model and backend")
    g.add_argument(
        "--model",
        required=model_required,
        metavar="NAME",
        help="a name from `medspot models`, or openai:NAME for any served model",
    )
    g.add_argument(
        "--backend",
        choices=["openai", "hf"],
        default=None,
        help="served over an OpenAI-compatible API, or in-process transformers",
    )
    g.add_argument(
        "--base-url",
        action="append",
        metavar="URL",
        help="OpenAI-compatible server (repeat to spread load over replicas); "
        "default: $OPENAI_BASE_URL or OpenAI",
    )
    g.add_argument(
        "--api-key-env",
        default=None,
        metavar="VAR",
        help="the environment variable holding the API key; when given, the only one read "
        "(default: OPENAI_API_KEY, ANTHROPIC_API_KEY for anthropic-computer-use, sent to a "
        "custom --base-url too)",
    )
    g.add_argument(
        "--api-model",
        default=None,
        metavar="NAME",
        help="model name to send to the server (default: the card's checkpoint)",
    )
    g.add_argument(
        "--timeout",
        type=positive_float,
        default=None,
        metavar="S",
        help="per-request timeout in seconds",
    )
    g.add_argument(
        "--checkpoint",
        default=None,
        metavar="ID_OR_DIR",
        help="hub id or local directory of the weights (hf backend)",
    )
    g.add_argument("--device", default=None, help="torch device for --backend hf (cpu, cuda)")
    g.add_argument("--dtype", default=None, help="torch dtype for --backend hf (bfloat16, ...)")
    g.add_argument(
        "--batch-size",
        type=positive_int,
        default=None,
        metavar="N",
        help="steps per forward pass (--backend hf)",
    )
    g.add_argument(
        "--prompt",
        choices=["native", "upstream"],
        default=None,
        help="prompt style (default: native; upstream under an upstream-* protocol)",
    )
    g.add_argument(
        "--convention",
        choices=["rel1000", "rel1", "abs_sent"],
        default=None,
        help="coordinate convention of an openai:NAME model or replay raw text",
    )
    g.add_argument(
        "--prompt-template",
        default=None,
        metavar="FILE",
        help="prompt template file for openai:NAME ({instruction}, {width}, {height})",
    )
    g.add_argument(
        "--replay-file", default=None, metavar="FILE", help="JSONL answers for --model replay"
    )
    g.add_argument(
        "--price-file",
        default=None,
        metavar="FILE",
        help="JSON/TOML price table overriding the built-in one",
    )


def parse_env_options(items: list[str] | None) -> dict[str, str]:
    """`--env-option KEY=VALUE` pairs, as text: the environment's declared types convert and
    check them (`medspot.live.envs.envoptions`)."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        name = key.strip().replace("-", "_")
        if not sep or not name:
            raise ConfigError(f"--env-option {item!r}: expected KEY=VALUE")
        if name in out:
            raise ConfigError(f"--env-option {name} is given twice")
        out[name] = raw
    return out


def add_executor_args(p: argparse.ArgumentParser) -> None:
    """Where a live command's environments run: `--executor` and its options (`live run`,
    `live serve`, `live audit`, `live export`)."""
    from medspot.live.images.engine import ENGINES
    from medspot.live.loop.executors import DEFAULT_RAY_CPUS_PER_ENV, EXECUTORS
    from medspot.live.loop.executors.options import (
        DEFAULT_CONTAINER_CPUS,
        DEFAULT_CONTAINER_MEMORY,
    )

    p.add_argument(
        "--executor", choices=list(EXECUTORS), default="threads",
        help="where environments run: threads of this process (default), Ray actors on this "
        "machine or a cluster (pip install 'medspot[ray]'), or containers of the "
        "environment's image (`medspot live image build`)",
    )  # fmt: skip
    p.add_argument(
        "--ray-address", default=None, metavar="ADDRESS",
        help="ray: join this cluster (`auto`, or HOST:PORT of its head); default: start a "
        "local cluster for this run",
    )  # fmt: skip
    p.add_argument(
        "--ray-cpus-per-env", type=non_negative_float, default=None, metavar="CPUS",
        help=f"ray: CPUs each environment actor asks for (default {DEFAULT_RAY_CPUS_PER_ENV:g}; "
        "a fraction packs more per node)",
    )  # fmt: skip
    p.add_argument(
        "--engine", choices=list(ENGINES), default=None,
        help="container: the container engine (default: podman if it answers, else docker)",
    )  # fmt: skip
    p.add_argument(
        "--container-image", default=None, metavar="IMAGE",
        help="container: run this image (default: localhost/medspot-ENV:VERSION, built by "
        "`medspot live image build`)",
    )  # fmt: skip
    p.add_argument(
        "--container-memory", default=None, metavar="SIZE",
        help="container: memory limit of each environment's container, its spares included "
        f"(default {DEFAULT_CONTAINER_MEMORY})",
    )  # fmt: skip
    p.add_argument(
        "--container-cpus", type=non_negative_float, default=None, metavar="CPUS",
        help=f"container: CPU limit of each environment's container (default "
        f"{DEFAULT_CONTAINER_CPUS:g})",
    )  # fmt: skip


def add_spare_args(p: argparse.ArgumentParser, default: str) -> None:
    """`--spares N` and `--no-spare` (one of them; `default` says what neither means)."""
    spares = p.add_mutually_exclusive_group()
    spares.add_argument(
        "--spares", type=whole_number(0, MAX_SPARES), default=None, metavar="N",
        help="spare instances per environment, each prepared for one of the next tasks while "
        f"the current one runs (0 to {MAX_SPARES}; {default})",
    )  # fmt: skip
    spares.add_argument(
        "--no-spare", dest="spares", action="store_const", const=0,
        help="no spare instances (--spares 0): one instance per environment, less memory; the "
        "wait between tasks is then a reset",
    )  # fmt: skip


def env_spec(args: argparse.Namespace, task_ids: tuple[str, ...]) -> EnvSpec:
    """A live command's environment, checked (`EnvSpec`: exit 2 before anything starts):
    `--env`, `--env-option`, `--tasks-file`, the task ids, and where the command has them
    `--tools`, `--executor` and its options, `--spares` / `--no-spare`."""
    from medspot.live.loop.envspec import EnvSpec, ExecutorSpec
    from medspot.live.loop.executors.options import ContainerOptions

    container = ContainerOptions(
        engine=getattr(args, "engine", None), image=getattr(args, "container_image", None),
        memory=getattr(args, "container_memory", None),
        cpus=getattr(args, "container_cpus", None),
    )  # fmt: skip
    executor = ExecutorSpec(
        getattr(args, "executor", "threads"), getattr(args, "ray_address", None),
        getattr(args, "ray_cpus_per_env", None), container,
    )  # fmt: skip
    return EnvSpec(
        args.env, env_options=parse_env_options(args.env_option),
        tasks_file=Path(args.tasks_file) if args.tasks_file else None, task_ids=task_ids,
        tools=getattr(args, "tools", None), executor=executor,
        spares=getattr(args, "spares", None),
    )  # fmt: skip
