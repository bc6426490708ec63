"""A Playwright driver killed on purpose (a folder's cleanup, the watchdog, Ctrl-C to the
process group) leaves asyncio's "Future exception was never retrieved" behind: a DEBUG record,
not an error on the terminal."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from medspot.live.drivers.web import _DRIVER_GONE_FILTER

GONE = (
    "Future exception was never retrieved\nfuture: <Future finished exception="
    "Exception('Connection closed while reading from the driver')>"
)


@pytest.fixture
def terminal() -> Iterator[io.StringIO]:
    """A stderr-like handler of level NOTSET on the root logger, the asyncio logger filtered
    as `WebSession` filters it."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root, asyncio_log = logging.getLogger(), logging.getLogger("asyncio")
    level = root.level
    root.addHandler(handler)
    asyncio_log.addFilter(_DRIVER_GONE_FILTER)
    try:
        yield out
    finally:
        asyncio_log.removeFilter(_DRIVER_GONE_FILTER)
        root.removeHandler(handler)
        root.setLevel(level)


def test_a_killed_driver_is_no_error_on_the_terminal(terminal: io.StringIO) -> None:
    logging.getLogger().setLevel(logging.INFO)
    logging.getLogger("asyncio").error(GONE)
    assert terminal.getvalue() == ""
    logging.getLogger("asyncio").error("Task was destroyed but it is pending!")
    assert "Task was destroyed" in terminal.getvalue()  # other asyncio errors stay errors


def test_a_killed_driver_is_a_debug_record_where_debug_is_logged(terminal: io.StringIO) -> None:
    logging.getLogger().setLevel(logging.DEBUG)
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep()
    logging.getLogger().addHandler(handler)
    try:
        logging.getLogger("asyncio").error(GONE)
    finally:
        logging.getLogger().removeHandler(handler)
    assert [r.levelname for r in records] == ["DEBUG"]
