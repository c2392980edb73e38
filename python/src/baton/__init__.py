"""Baton from Python: priorities, hints and queue status for this program's GPU work.

The program must run under Baton (`baton run -- python app.py`); otherwise every call raises
`NotLoadedError` (check first with `baton.loaded()`). Streams are given as a
`torch.cuda.Stream`, a CuPy stream, or a raw `CUstream`/`cudaStream_t` handle (an int);
`None` means PyTorch's current stream when PyTorch is in use, else the default stream.

Shortest use::

    import baton
    with baton.priority(10):        # the work this thread issues in the block: priority 10
        run_request()
    baton.hint(upcoming_ms=2)       # work arrives in 2 ms: start making room

The wheel also carries the `baton` executable and the interposer: `baton.run([...])` starts a
program under Baton from Python, and `python -m baton ARGS` is the `baton` command.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, List, Optional

from . import _abi
from .cli import executable, interposer, run

__all__ = [
    "BatonError",
    "NotLoadedError",
    "OutOfRangeError",
    "UnknownStreamError",
    "Queue",
    "Status",
    "abi_version",
    "clear_hint",
    "clear_stream_priority",
    "clear_thread_priority",
    "executable",
    "hint",
    "interposer",
    "loaded",
    "priority",
    "resume",
    "run",
    "set_process_priority",
    "set_stream_priority",
    "set_thread_priority",
    "status",
    "stream_priority",
    "suspend",
]

__version__ = "0.1.0"


class BatonError(RuntimeError):
    """A call Baton refused: `code` is the C ABI's `BATON_ERR_*`, `name` its short name."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.name = _abi.ERROR_NAMES.get(code, "unknown")


class NotLoadedError(BatonError):
    """Baton is not loaded in this process (start it with `baton run -- ...`)."""


class OutOfRangeError(BatonError, ValueError):
    """A value outside its documented range (priorities are -100..=100)."""


class UnknownStreamError(BatonError, ValueError):
    """Not a live CUDA stream."""


_ERROR_CLASSES = {
    _abi.ERR_NOT_LOADED: NotLoadedError,
    _abi.ERR_OUT_OF_RANGE: OutOfRangeError,
    _abi.ERR_UNKNOWN_STREAM: UnknownStreamError,
}


def _fn(name: str) -> Any:
    f = _abi.library().get(name)
    if f is None:
        raise NotLoadedError(_abi.ERR_NOT_LOADED, _abi.NOT_LOADED_MESSAGE)
    return f


def _check(code: int) -> None:
    if code == _abi.OK:
        return
    detail = _fn("baton_last_error")()
    message = detail.decode("utf-8", "replace") if detail else ""
    if not message:
        message = _fn("baton_error_message")(code).decode("utf-8", "replace")
    raise _ERROR_CLASSES.get(code, BatonError)(code, message)


def _call(name: str, *args: Any) -> None:
    _check(_fn(name)(*args))


def _priority(p: int) -> int:
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"a priority is an int in -100..=100, not {type(p).__name__}")
    if not -100 <= p <= 100:
        raise OutOfRangeError(
            _abi.ERR_OUT_OF_RANGE,
            f"priority {p} is out of range: it must be between -100 and 100, higher first",
        )
    return p


def _stream(stream: Any) -> int:
    """The CUstream handle of `stream` (see the module documentation)."""
    if stream is None:
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.current_stream().cuda_stream)
        return 0
    if isinstance(stream, bool):
        raise TypeError("a stream is a torch.cuda.Stream, a CuPy stream or an int handle")
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr", "handle"):
        h = getattr(stream, attr, None)
        if isinstance(h, int):
            return h
    raise TypeError(f"a stream is a torch.cuda.Stream, a CuPy stream or an int handle, not {type(stream).__name__}")


def loaded() -> bool:
    """Whether Baton runs in this process (the program was started under `baton run`)."""
    return _abi.library().loaded


def abi_version() -> tuple[int, int]:
    """The (major, minor) version of the C ABI Baton's interposer exports."""
    v = _fn("baton_abi_version")()
    return (v >> 16, v & 0xFFFF)


def set_thread_priority(p: int) -> None:
    """Schedules the work this thread issues from now on at priority `p` (-100..=100)."""
    _call("baton_set_thread_priority", _priority(p))


def clear_thread_priority() -> None:
    """Ends this thread's priority: its work takes its streams' own priorities again."""
    _call("baton_clear_thread_priority")


def set_stream_priority(stream: Any, p: int) -> None:
    """Gives `stream`'s work a priority of its own, over the process's."""
    _call("baton_set_stream_priority", ctypes.c_void_p(_stream(stream)), _priority(p))


def clear_stream_priority(stream: Any) -> None:
    """Removes `stream`'s own priority: it follows the process's again."""
    _call("baton_clear_stream_priority", ctypes.c_void_p(_stream(stream)))


def stream_priority(stream: Any = None) -> int:
    """The priority `stream`'s work is scheduled at now."""
    out = ctypes.c_int32()
    _call("baton_get_stream_priority", ctypes.c_void_p(_stream(stream)), ctypes.byref(out))
    return out.value


def set_process_priority(p: int) -> None:
    """Sets the whole process's priority: streams without their own follow it."""
    _call("baton_set_process_priority", _priority(p))


_scopes = threading.local()


@contextlib.contextmanager
def priority(p: int, stream: Any = None) -> Iterator[None]:
    """Scopes a priority: the work this thread issues inside the block runs at `p` (each stream
    it launches on takes `p` while the thread's work is on it); with `stream`, that stream's
    own priority is `p` inside the block instead (the stream's own priority, or none, comes
    back after it). Blocks nest; the outer priority comes back on exit. Work already queued keeps the priority its stream had."""
    p = _priority(p)
    if stream is not None:
        handle = ctypes.c_void_p(_stream(stream))
        before = ctypes.c_int32()
        _call("baton_get_stream_own_priority", handle, ctypes.byref(before))
        _call("baton_set_stream_priority", handle, p)
        try:
            yield
        finally:
            if before.value == _abi.NO_PRIORITY:
                _call("baton_clear_stream_priority", handle)
            else:
                _call("baton_set_stream_priority", handle, before.value)
        return
    stack: List[int] = getattr(_scopes, "stack", None) or []
    _scopes.stack = stack
    set_thread_priority(p)
    stack.append(p)
    try:
        yield
    finally:
        stack.pop()
        if stack:
            set_thread_priority(stack[-1])
        else:
            clear_thread_priority()


def _ns(ms: Optional[float], what: str) -> int:
    if ms is None:
        return 0
    if ms < 0:
        raise OutOfRangeError(_abi.ERR_OUT_OF_RANGE, f"{what} must not be negative (got {ms} ms)")
    return int(round(ms * 1_000_000))


def hint(
    *,
    deadline_ms: Optional[float] = None,
    utilization: Optional[float] = None,
    laxity_ms: Optional[float] = None,
    critical_priority: Optional[int] = None,
    upcoming_ms: Optional[float] = None,
    expires_ms: float = 10.0,
    stream: Any = None,
    process: bool = False,
) -> None:
    """Gives hints about `stream`'s work (default: the current stream), or the whole process's
    with `process=True`:

    - `deadline_ms`: each piece of work should finish within this long of its release
      (deadline policies);
    - `utilization`: the share of the device's time to reserve, in percent (0.1..=100);
    - `laxity_ms` with `critical_priority`: after waiting this long, work runs at that priority;
    - `upcoming_ms`: work arrives in this long (0..=10 000): lower work is made to yield ahead
      of it (pre-preemption); the hint lapses `expires_ms` after that if nothing came.
    """
    hints = []
    if deadline_ms is not None:
        hints.append(_abi.Hint(kind=_abi.HINT_DEADLINE, value_ns=_ns(deadline_ms, "deadline")))
    if utilization is not None:
        hints.append(_abi.Hint(kind=_abi.HINT_UTILIZATION, percent=float(utilization)))
    if laxity_ms is not None or critical_priority is not None:
        if laxity_ms is None or critical_priority is None:
            raise TypeError("a laxity hint needs both laxity_ms and critical_priority")
        hints.append(
            _abi.Hint(
                kind=_abi.HINT_LAXITY,
                value_ns=_ns(laxity_ms, "laxity"),
                priority=_priority(critical_priority),
            )
        )
    if upcoming_ms is not None:
        hints.append(
            _abi.Hint(
                kind=_abi.HINT_UPCOMING,
                value_ns=_ns(upcoming_ms, "upcoming"),
                until_ns=_ns(expires_ms, "expires"),
            )
        )
    if not hints:
        raise TypeError("give at least one hint (deadline_ms, utilization, laxity_ms, upcoming_ms)")
    _give(hints, stream, process)


_KINDS = {
    "deadline": _abi.HINT_DEADLINE,
    "utilization": _abi.HINT_UTILIZATION,
    "laxity": _abi.HINT_LAXITY,
    "upcoming": _abi.HINT_UPCOMING,
}


def clear_hint(kind: str, *, stream: Any = None, process: bool = False) -> None:
    """Removes the hint of `kind` ("deadline", "utilization", "laxity" or "upcoming")."""
    if kind not in _KINDS:
        raise ValueError(f"unknown hint kind {kind!r}: one of {', '.join(_KINDS)}")
    _give([_abi.Hint(kind=_KINDS[kind] | _abi.HINT_CLEAR)], stream, process)


def _give(hints: List["_abi.Hint"], stream: Any, process: bool) -> None:
    if process:
        for h in hints:
            _call("baton_hint_process", ctypes.byref(h))
        return
    handle = ctypes.c_void_p(_stream(stream))
    for h in hints:
        _call("baton_hint_stream", handle, ctypes.byref(h))


def suspend(stream: Any) -> None:
    """Holds back `stream`'s work not yet given to the GPU (only when the program schedules its
    own queues: `BATON_SCHEDULER=app`)."""
    _call("baton_suspend_stream", ctypes.c_void_p(_stream(stream)))


def resume(stream: Any) -> None:
    """Lets `stream`'s work go again (`BATON_SCHEDULER=app`)."""
    _call("baton_resume_stream", ctypes.c_void_p(_stream(stream)))


@dataclass(frozen=True)
class Queue:
    """One of the process's queues (a CUDA stream)."""

    stream: int
    context: int
    device: int
    kind: str
    priority: int
    level: int
    suspended: bool
    ready: bool
    submitted: int
    completed: int
    pending: int
    in_flight: int


@dataclass(frozen=True)
class Status:
    """How Baton runs this process."""

    abi_version: tuple[int, int]
    scheduler: str
    process_priority: int
    level: int
    suspended_queues: int
    connected: bool
    policy: str
    queues: List[Queue] = field(default_factory=list)


def status() -> Status:
    """This process as Baton runs it: the scheduler, the process's priority, every queue."""
    st = _abi.Status()
    _call("baton_status", ctypes.byref(st))
    count = ctypes.c_size_t(0)
    code = _fn("baton_queues")(None, 0, ctypes.byref(count))
    if code not in (_abi.OK, _abi.ERR_BUFFER_TOO_SMALL):
        _check(code)
    while True:
        room = count.value + 8
        buf = (_abi.Queue * room)()
        code = _fn("baton_queues")(buf, room, ctypes.byref(count))
        if code != _abi.ERR_BUFFER_TOO_SMALL:
            _check(code)
            break
    queues = [
        Queue(
            stream=q.stream,
            context=q.context,
            device=q.device,
            kind=_abi.STREAM_KINDS.get(q.kind, str(q.kind)),
            priority=q.priority,
            level=q.level,
            suspended=bool(q.suspended),
            ready=bool(q.ready),
            submitted=q.submitted,
            completed=q.completed,
            pending=q.pending,
            in_flight=q.in_flight,
        )
        for q in buf[: count.value]
    ]
    return Status(
        abi_version=(st.abi_version >> 16, st.abi_version & 0xFFFF),
        scheduler=_abi.SCHEDULERS.get(st.scheduler, str(st.scheduler)),
        process_priority=st.process_priority,
        level=st.level,
        suspended_queues=st.suspended_queues,
        connected=bool(st.connected),
        policy=st.policy.decode("utf-8", "replace"),
        queues=queues,
    )
