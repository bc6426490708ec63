"""Check kinds: what a check's parameters are, which state it reads, and a pure judge.

A check in a task file (`CheckSpec`: `kind` plus parameters) is decided in two parts: the
environment READS a state (the Orthanc database, the page's URL, the viewer's state, the AT-SPI
tree), then the kind's JUDGE, a pure function of the parsed parameters and that state, says
whether it holds. Judging is therefore unit tested on states built by hand, and only reading
needs the application:

    ZOOM = CheckKind("ohif.zoom", ZoomParams, reads="ohif", judge=_zoom, summary="...")
    KINDS = CheckKinds(ZOOM, ...)                       # an environment's kinds
    KINDS.evaluate(spec, {"ohif": read_viewer_state})   # `env.check(spec)`: a dispatcher

Every kind declares its parameters as a pydantic model (`CheckParams`: unknown keys refused,
types strict: `"3"` is not a number, `1` is not a boolean). A task file is checked against them
when it is read (`taskfiles.parse_task_file`), so an unknown, missing or ill-typed parameter,
an unknown seeded name or a bad locator inside a check is a located data error before anything
runs, never an environment fault.

The rule for boolean parameters, the same in every kind: a boolean parameter states a claim and
`false` states its opposite (`"value": false` is "not visible", `"changed": false` is
"unchanged", `"present": false` is "absent"); none is ignored. A kind whose parameters could
hold whatever the state says why (`CheckParams.vacuous`, reported by `medspot live audit`).

A kind that judges a region of the task's images (slices, a structure's voxels, a landmark)
validates it against the environment's geometry (`CheckParams.geometry_problem`, given what
`EnvEntry.geometry` knows without starting the application): a slice past the volume, or a
region where the truth is empty (a Dice there would compare nothing with nothing), is refused
when the task file is read.

Every environment whose actions can destroy data (`EnvEntry.destructive`, a toolset's tools
that change state) has a collateral-harm kind (`CheckParams.guards_collateral`):
`orthanc.collateral_loss`, `dicomscope.collateral_loss`, `inv.collateral_loss`, each naming the
task's own targets (what may go) and firing when anything else of the start is lost.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from medspot.errors import DataError
from medspot.live.core.harm import HarmLabel
from medspot.live.core.tasks import CheckSpec, Locator, StartSpec

__all__ = [
    "CheckKind",
    "CheckKinds",
    "CheckParams",
    "Regex",
    "RegexParams",
    "RowMatch",
    "StateReaders",
    "pattern_matches_anything",
    "rows_match",
]

P = TypeVar("P", bound="CheckParams")
S = TypeVar("S")
StateReaders = Mapping[str, Callable[[Any], Any]]
RowMatch = Literal["contains", "equals"]
# strings a regex that "matches anything" matches too (`re.search`)
_PROBES = ("", "x", "\n", "#study?uuid=0a1b", "DICOMscope - ^$", "\x00\u00e9 9")


def _compiles(v: str) -> str:
    try:
        re.compile(v)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return v


Regex = Annotated[str, AfterValidator(_compiles)]  # a regular expression, searched


class CheckParams(BaseModel):
    """The parameters of one check kind. Subclasses declare fields (and validators for what
    belongs together); `vacuous` says why a valid set of parameters holds whatever the
    state, for the task audit."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    # a kind of the collateral-harm rule: in a task's `fail_if`, it fires when anything the
    # task's start holds, beyond the targets its parameters name, is deleted or overwritten
    # (the task audit asks for one in every task whose actions can destroy data)
    guards_collateral: ClassVar[bool] = False
    # the label every harm rule (a `fail_if` check) of this kind carries, where the kind is an
    # environment's built-in harm rule (the collateral-loss kinds: `core.harm.COLLATERAL_HARM`);
    # task validation refuses another one, so one rule means one thing in every task
    harm: ClassVar[HarmLabel | None] = None

    def vacuous(self) -> str | None:
        return None

    def unapplied(self) -> str | None:
        """Why this check reads a value the agent can type into a field before the application
        applies it (a text box's content), for the task audit: a success check must read the
        applied value (what the application uses)."""
        return None

    def unanchored(self) -> str | None:
        """Why this check (an annotation that must exist) does not say which image the
        annotation lies on, for the task audit: one drawn on any image would pass it."""
        return None

    def view_without_series(self) -> str | None:
        """Why this check reads what a viewer displays (a window, a zoom, a slice) without
        naming the series it is about, for the task audit: the same view of another series,
        or of another study loaded into the viewport, would pass it."""
        return None

    def unplaced_count(self) -> int:
        """How many annotations this check asks for by their number alone (a count of at least
        n), for the task audit: unless the task's other checks place as many (`placed_count`),
        an annotation drawn anywhere passes."""
        return 0

    def placed_count(self) -> int:
        """How many annotations this check asks for at a place (end points at landmarks), for
        the task audit's `unplaced_count` rule."""
        return 0

    def needs_change(self, start: StartSpec) -> str | None:
        """Why this check holds at no start state a task with `start` can have (it needs
        something to happen in the episode first): an infeasible task's success checks say that
        nothing changed, so such a check there is a contradiction (`parse_task_file` refuses
        it). None: it may hold at the start, or the kind cannot tell."""
        return None

    def geometry_problem(self, geometry: object) -> tuple[str, str] | None:
        """Where this check's region lies outside what the environment shows for the task, or
        where the truth it compares with is empty there: (the parameter, why), for task
        validation (`check_against_entry` refuses it). `geometry` is what the environment
        knows of the task's images without starting (`EnvEntry.geometry`: a phantom volume,
        the seeded studies), of the environment's own type; a kind that judges no region, or
        that is given a geometry it does not know, says None."""
        return None

    def locators(self) -> list[tuple[str, Locator]]:
        """The locators among the parameters (checked against the environment's keys)."""
        return [
            (n, v) for n in type(self).model_fields if isinstance(v := getattr(self, n), Locator)
        ]


class RegexParams(CheckParams):
    """One regular expression (`pattern`), searched in a text the kind reads (a title);
    `searched` names that text in the task audit's words."""

    pattern: Regex
    searched: ClassVar[str] = "text"

    def vacuous(self) -> str | None:
        if pattern_matches_anything(self.pattern):
            return f"the pattern matches any {self.searched}"
        return None


@dataclass(frozen=True)
class CheckKind(Generic[P, S]):
    """One check kind: its name, its parameters' model, the state it judges (`reads`: a name
    the environment's readers know) and the pure `judge(params, state) -> bool`."""

    name: str
    params: type[P]
    reads: str
    judge: Callable[[P, S], bool]
    summary: str = ""

    def parse(self, raw: Mapping[str, Any]) -> P:
        """The parameters, validated; a `DataError` naming the parameter otherwise."""
        try:
            return self.params.model_validate(dict(raw))
        except ValidationError as exc:
            errors = exc.errors()  # an unknown key first: a misspelt name explains the rest
            err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
            where = ".".join(str(p) for p in err["loc"])
            msg = str(err["msg"]).removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                known = ", ".join(_field_names(self.params)) or "none"
                msg = f"unknown parameter (known: {known})"
            raise DataError(f"check {self.name!r}: {where + ': ' if where else ''}{msg}") from None

    def holds(self, params: P, state: S) -> bool:
        return bool(self.judge(params, state))


def _field_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or n for n, f in model.model_fields.items()]


class CheckKinds(Mapping[str, CheckKind[Any, Any]]):
    """An environment's check kinds by name (iterating gives the names)."""

    def __init__(self, *kinds: CheckKind[Any, Any]) -> None:
        self._kinds: dict[str, CheckKind[Any, Any]] = {}
        for k in kinds:
            if k.name in self._kinds:
                raise ValueError(f"check kind {k.name!r} given twice")
            self._kinds[k.name] = k

    def __getitem__(self, name: str) -> CheckKind[Any, Any]:
        return self._kinds[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def __add__(self, other: CheckKinds) -> CheckKinds:
        return CheckKinds(*self._kinds.values(), *other._kinds.values())

    def kind(self, name: str, env: str = "this environment") -> CheckKind[Any, Any]:
        try:
            return self._kinds[name]
        except KeyError:
            raise DataError(f"check kind {name!r} is not understood by {env}") from None

    def parse(self, spec: CheckSpec, env: str = "this environment") -> CheckParams:
        params: CheckParams = self.kind(spec.kind, env).parse(spec.params)
        return params

    def evaluate(self, spec: CheckSpec, readers: StateReaders, env: str = "") -> bool:
        """Read the state the kind judges (`readers[kind.reads](params)`), then judge it."""
        kind = self.kind(spec.kind, env or "this environment")
        params = kind.parse(spec.params)
        return kind.holds(params, readers[kind.reads](params))


def pattern_matches_anything(pattern: str) -> bool:
    """Whether a regex (searched, `re.search`) matches every string: `""`, `".*"`, `"x?"`."""
    try:
        rx = re.compile(pattern)
    except re.error:
        return False
    return all(rx.search(p) is not None for p in _PROBES)


def _norm(s: str) -> str:
    return " ".join(s.split())


def rows_match(
    texts: Sequence[str], expected: Sequence[str], match: RowMatch, ordered: bool
) -> bool:
    """Whether the rows' texts are exactly the expected ones: as many rows as entries, each
    row matching one entry (`contains`: the entry is in the row's text; `equals`: the text is
    the entry, whitespace collapsed), in order when `ordered`."""
    rows = [_norm(t) for t in texts]
    want = [_norm(e) for e in expected]
    if len(rows) != len(want):
        return False

    def ok(row: str, entry: str) -> bool:
        return entry in row if match == "contains" else row == entry

    if ordered:
        return all(ok(r, e) for r, e in zip(rows, want, strict=True))
    # a perfect matching of rows to entries (augmenting paths; lists are short)
    owner: dict[int, int] = {}

    def place(e: int, seen: set[int]) -> bool:
        for r, row in enumerate(rows):
            if r in seen or not ok(row, want[e]):
                continue
            seen.add(r)
            if r not in owner or place(owner[r], seen):
                owner[r] = e
                return True
        return False

    return all(place(e, set()) for e in range(len(want)))
