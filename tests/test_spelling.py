"""`did_you_mean`: the hint of every "unknown ..." error that can guess a misspelt name."""

from __future__ import annotations

from medspot.spelling import did_you_mean, suggestion

KNOWN = ["open-study-ct-doe-john", "open-study-mr-doe-john", "delete-study-ct-miller"]


def test_the_nearest_known_name() -> None:
    assert did_you_mean("open-study-ct-doe-jon", KNOWN) == "did you mean 'open-study-ct-doe-john'?"


def test_nothing_close_says_nothing() -> None:
    assert did_you_mean("zzz", KNOWN) == ""
    assert did_you_mean("anything", []) == ""


def test_two_names_and_the_callers_own_first() -> None:
    declared = {"quiet_s": 1, "reset_quiet_s": 2, "chromium": 3}
    assert (
        did_you_mean("quiet", declared, n=2, first=["reset_quiet_s"])
        == "did you mean 'reset_quiet_s' or 'quiet_s'?"
    )
    # a name of `first` is not repeated, and `n` bounds the list
    assert did_you_mean("quiet_", declared, first=["quiet_s"]) == "did you mean 'quiet_s'?"


def test_the_suggestion_follows_the_unknown_name_in_parentheses() -> None:
    assert suggestion("open-study-ct-doe-jon", KNOWN) == " (did you mean 'open-study-ct-doe-john'?)"
    assert suggestion("zzz", KNOWN) == ""
