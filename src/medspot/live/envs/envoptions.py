"""An environment's options (`--env-option KEY=VALUE`), typed and checked before anything starts.

The options an environment takes are the keyword parameters of its factory (`EnvEntry.factory`:
the environment class, whose constructor's they are) with their type hints; a factory function
that passes `**options` on to the class its return annotation names declares that class's
constructor parameters instead. `workdir` is the runner's, never an
option. Each value is converted to its parameter's type: text from the command line is read
(`true`/`false`, numbers, `none` where None is allowed, `1280x800` or `1280,800` for a pair of
numbers, shell words for a tuple of strings); a value of another type (from Python) is
validated; a duration (a name ending in `_s`, seconds) must be 0 or more; a path-like option
(a program, a folder: `typing.Annotated` with a `medspot.live.core.optionpaths` check) must be
what it names (the program exists and runs, the folder exists). Unknown names and values that
do not fit are `ConfigError`s naming the environment, the option and what it expects (exit
status 2), never an environment fault.
"""

from __future__ import annotations

import inspect
import math
import shlex
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from medspot.errors import ConfigError
from medspot.live.core.contract import EnvEntry
from medspot.live.core.optionpaths import OptionCheck
from medspot.live.core.tasks import LiveTask
from medspot.live.envs.registry import env_entry
from medspot.spelling import suggestion

__all__ = ["EnvOption", "check_env_options", "check_viewport", "env_options_of"]

RUNNER_PARAMS = frozenset({"workdir"})  # given by the runner, not by the user
# the run's `--spares N` / `--no-spare`, not options of an environment
SPARE_WORDS = frozenset({"spare", "spares", "no_spare"})
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0"})


@dataclass(frozen=True)
class EnvOption:
    """One option: its name, its type (`Any` where the parameter has no hint), its default,
    and what its value must be beyond its type (`checks`: a program that runs, a folder)."""

    name: str
    annotation: Any
    default: Any
    checks: tuple[OptionCheck, ...] = ()

    @property
    def type_name(self) -> str:
        if self.checks:
            none = " or none" if type(None) in typing.get_args(self.annotation) else ""
            return " and ".join(c.describe() for c in self.checks) + none
        return _type_name(self.annotation)


def _checks_of(hint: Any) -> tuple[OptionCheck, ...]:
    """The `OptionCheck`s an annotation carries (`Annotated[T, check]`, also inside `| None`)."""
    if typing.get_origin(hint) is typing.Annotated:
        return tuple(m for m in hint.__metadata__ if isinstance(m, OptionCheck))
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(c for a in typing.get_args(hint) for c in _checks_of(a))
    return ()


def _params(fn: Callable[..., Any]) -> tuple[dict[str, EnvOption], bool, Any]:
    """The keyword parameters of `fn` (a class: its constructor), whether it also takes
    `**kwargs`, and its return annotation."""
    target = fn.__init__ if isinstance(fn, type) else fn  # type: ignore[misc]
    try:
        hints = typing.get_type_hints(target)
        extras = typing.get_type_hints(target, include_extras=True)
    except Exception:  # an annotation that cannot be resolved: treat the parameters as untyped
        hints, extras = {}, {}
    out: dict[str, EnvOption] = {}
    var_kw = False
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var_kw = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in RUNNER_PARAMS:
            default = None if p.default is p.empty else p.default
            checks = _checks_of(extras.get(p.name))
            out[p.name] = EnvOption(p.name, hints.get(p.name, Any), default, checks)
    return out, var_kw, hints.get("return")


def env_options_of(entry: EnvEntry) -> dict[str, EnvOption] | None:
    """The options `entry`'s environment declares; None when it declares none that can be
    known (a factory taking `**options` without a class to follow): then any name passes."""
    options, var_kw, returns = _params(entry.factory)
    if var_kw:
        if not isinstance(returns, type):
            return None
        more, var_kw_too, _ = _params(returns)
        if var_kw_too:
            return None
        options = {**more, **options}
    return options


def _type_name(t: Any) -> str:
    if t is Any:
        return "any value"
    if t is bool:
        return "true or false"
    if t is int:
        return "a whole number"
    if t is float:
        return "a number"
    if t is str:
        return "text"
    if t is Path:
        return "a path"
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or none" if type(None) in args else "")
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_type_name(args[0])} (shell words)"
        if args and all(a in (int, float) for a in args):
            return f"{len(args)} numbers, e.g. " + "x".join(["1280", "800", "1"][: len(args)])
        return f"{len(args)} values"
    return getattr(t, "__name__", str(t))


def _read(text: str, t: Any) -> Any:
    """`text` (from the command line) as a value of type `t`; ValueError when it is not one."""
    s = text.strip()
    if t is Any:  # untyped: the old reading (true/false, numbers, else text)
        low = s.lower()
        if low in ("true", "false"):
            return low == "true"
        for conv in (int, float):
            try:
                return conv(s)
            except ValueError:
                pass
        return text
    if t is bool:
        if s.lower() in _TRUE:
            return True
        if s.lower() in _FALSE:
            return False
        raise ValueError
    if t is int:
        return int(s)
    if t is float:
        v = float(s)
        if not math.isfinite(v):
            raise ValueError
        return v
    if t is str:
        return text
    if t is Path:
        if not s:
            raise ValueError
        return Path(s).expanduser()
    origin, args = typing.get_origin(t), typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        if type(None) in args and s.lower() in ("", "none"):
            return None
        for a in args:
            if a is type(None):
                continue
            try:
                return _read(text, a)
            except ValueError:
                continue
        raise ValueError
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_read(w, args[0]) for w in shlex.split(s))
        numeric = all(a in (int, float) for a in args)
        parts = (s.lower().replace("x", ",") if numeric else s).split(",")
        if len(parts) != len(args):
            raise ValueError
        return tuple(_read(p, a) for p, a in zip(parts, args, strict=True))
    return TypeAdapter(t).validate_python(text)


def _convert(opt: EnvOption, value: Any) -> Any:
    try:
        if isinstance(value, str):
            out = _read(value, opt.annotation)
        elif opt.annotation is Any:
            return value
        else:
            out = TypeAdapter(opt.annotation).validate_python(value)
    except (ValueError, ValidationError, TypeError):
        raise ValueError(f"expected {opt.type_name}") from None
    if opt.name.endswith("_s") and isinstance(out, int | float) and not out >= 0:
        raise ValueError("a duration in seconds must be 0 or more")
    for check in opt.checks if out is not None else ():
        why = check.problem(out)
        if why is not None:
            raise ValueError(f"{why}; expected {check.describe()}")
    return out


def _did_you_mean(name: str, declared: Mapping[str, EnvOption]) -> str:
    """A hint for an unknown option: the declared names that contain it as a word or are
    spelled like it, and the run's own `--spares`/`--no-spare` for a slot's spare instances."""
    words = set(name.split("_"))
    hint = suggestion(
        name, declared, n=2, first=[o for o in declared if words <= set(o.split("_"))]
    )
    if name in SPARE_WORDS:
        hint += (
            " (a runner slot's spare instances are the run's `--spares N` or `--no-spare`, "
            "not an option)"
        )
    return hint


def check_env_options(env: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` converted to the types the environment `env` declares; `ConfigError` for an
    unknown name or a value that does not fit."""
    entry = env_entry(env)
    declared = env_options_of(entry)
    out: dict[str, Any] = {}
    for raw_name, value in options.items():
        name = raw_name.strip().replace("-", "_")
        if declared is None:
            out[name] = _read(value, Any) if isinstance(value, str) else value
            continue
        opt = declared.get(name)
        if opt is None:
            known = ", ".join(sorted(declared)) or "(none)"
            raise ConfigError(
                f"--env-option {raw_name}: {env} has no option {name!r}"
                f"{_did_you_mean(name, declared)}; its options: {known}"
            )
        try:
            out[name] = _convert(opt, value)
        except ValueError as e:
            raise ConfigError(f"--env-option {name}={value!r}: {e} ({env})") from None
    return out


def check_viewport(options: Mapping[str, Any], tasks: Sequence[LiveTask]) -> None:
    """An environment whose screen size is an option (`viewport`) runs tasks of that size only
    (`start.viewport`): a `ConfigError` before it starts, naming the tasks that differ."""
    vp = options.get("viewport")
    if vp is None:
        return
    size = (int(vp[0]), int(vp[1]))
    other = [t.id for t in tasks if tuple(t.start.viewport) != size]
    if other:
        shown = ", ".join(other[:5]) + (" ..." if len(other) > 5 else "")
        raise ConfigError(
            f"--env-option viewport={size[0]}x{size[1]}: {len(other)} task(s) start at another "
            f"size (start.viewport): {shown}"
        )
