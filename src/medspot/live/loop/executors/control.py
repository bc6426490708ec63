"""The control channel between the runner and the worker in an environment container
(`--executor container`): a unix socket in a folder bind-mounted into the container, carrying
length-prefixed pickles, one request and one answer at a time.

Why this shape: the container has no network at all (`--network none`: a published TCP port
needs a network, a bind-mounted socket does not), and the objects that cross are exactly those
a Ray actor's calls carry (`LiveTask`, `LiveAction`, `Observation` with its PNG bytes,
`StepResult`, `EpisodeState`), pickled as Ray pickles them: no second schema of a step to keep
in step with the first. Both ends run the same medspot (the image's source hash is checked
before a container starts, and again by the worker), and the socket is reachable only through
the run's private folder, as trusted as a Ray cluster's own channel.

A request is `(method, args)`; an answer `(True, value)` or `(False, exception)`.
"""

from __future__ import annotations

import pickle
import socket
import struct
from typing import Any

from medspot.live.core.contract import EnvironmentFault

__all__ = ["MAX_MESSAGE_BYTES", "SOCKET_NAME", "receive", "send"]

SOCKET_NAME = "control.sock"
_HEADER = struct.Struct("!Q")
MAX_MESSAGE_BYTES = 1 << 30  # a screen is a few hundred kB; more is a broken peer


def send(sock: socket.socket, obj: Any) -> None:
    """One message: its length, then its pickle."""
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)))
    sock.sendall(data)


def _exactly(sock: socket.socket, n: int, *, at_start: bool) -> bytes | None:
    parts: list[bytes] = []
    left = n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            if at_start and left == n:
                return None
            raise ConnectionError("the control channel closed in the middle of a message")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def receive(sock: socket.socket) -> Any:
    """The next message, or `EOFError` when the peer closed the channel between messages."""
    header = _exactly(sock, _HEADER.size, at_start=True)
    if header is None:
        raise EOFError("the control channel is closed")
    (size,) = _HEADER.unpack(header)
    if size > MAX_MESSAGE_BYTES:
        raise ConnectionError(f"a control message of {size} bytes: not a medspot peer")
    data = _exactly(sock, size, at_start=False)
    assert data is not None
    return pickle.loads(data)


def picklable_error(e: BaseException) -> BaseException:
    """`e` if it survives a pickle round trip, else the environment fault it stands for."""
    try:
        pickle.loads(pickle.dumps(e))
    except Exception:
        return EnvironmentFault(f"{type(e).__name__}: {e}")
    return e
