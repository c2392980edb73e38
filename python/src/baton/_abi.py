"""The C ABI (include/baton.h) through ctypes: types, codes, and the symbols of this process.

Under `baton run` the interposer is preloaded, so its `baton_*` symbols are in the process's
global scope and `ctypes.CDLL(None)` finds them. Without Baton they are absent, and every call
raises `NotLoadedError`.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional

ABI_MAJOR = 1
ABI_MINOR = 0

NO_PRIORITY = -(2**31)

OK = 0
ERR_NOT_LOADED = 1
ERR_DISABLED = 2
ERR_NO_DRIVER = 3
ERR_INVALID_ARGUMENT = 4
ERR_OUT_OF_RANGE = 5
ERR_UNKNOWN_STREAM = 6
ERR_NOT_APP_MANAGED = 7
ERR_APP_MANAGED = 8
ERR_BUFFER_TOO_SMALL = 9
ERR_INTERNAL = 10

ERROR_NAMES = {
    ERR_NOT_LOADED: "not_loaded",
    ERR_DISABLED: "disabled",
    ERR_NO_DRIVER: "no_driver",
    ERR_INVALID_ARGUMENT: "invalid_argument",
    ERR_OUT_OF_RANGE: "out_of_range",
    ERR_UNKNOWN_STREAM: "unknown_stream",
    ERR_NOT_APP_MANAGED: "not_app_managed",
    ERR_APP_MANAGED: "app_managed",
    ERR_BUFFER_TOO_SMALL: "buffer_too_small",
    ERR_INTERNAL: "internal",
}

NOT_LOADED_MESSAGE = "Baton is not loaded in this process: start the program with `baton run -- PROGRAM`"

HINT_DEADLINE = 1
HINT_UTILIZATION = 2
HINT_LAXITY = 3
HINT_UPCOMING = 4
HINT_CLEAR = 0x100

SCHEDULERS = {1: "app", 2: "local", 3: "global"}
STREAM_KINDS = {1: "legacy", 2: "per-thread", 3: "regular"}


class Hint(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_uint32),
        ("priority", ctypes.c_int32),
        ("value_ns", ctypes.c_uint64),
        ("until_ns", ctypes.c_uint64),
        ("percent", ctypes.c_double),
    ]


class Status(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("scheduler", ctypes.c_uint32),
        ("process_priority", ctypes.c_int32),
        ("level", ctypes.c_uint32),
        ("queues", ctypes.c_uint32),
        ("suspended_queues", ctypes.c_uint32),
        ("connected", ctypes.c_uint32),
        ("policy", ctypes.c_char * 32),
    ]


class Queue(ctypes.Structure):
    _fields_ = [
        ("stream", ctypes.c_uint64),
        ("context", ctypes.c_uint64),
        ("device", ctypes.c_int32),
        ("kind", ctypes.c_uint32),
        ("priority", ctypes.c_int32),
        ("level", ctypes.c_uint32),
        ("suspended", ctypes.c_uint32),
        ("ready", ctypes.c_uint32),
        ("submitted", ctypes.c_uint64),
        ("completed", ctypes.c_uint64),
        ("pending", ctypes.c_uint64),
        ("in_flight", ctypes.c_uint64),
    ]


_SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "baton_abi_version": (ctypes.c_uint32, []),
    "baton_error_message": (ctypes.c_char_p, [ctypes.c_int32]),
    "baton_last_error": (ctypes.c_char_p, []),
    "baton_set_thread_priority": (ctypes.c_int32, [ctypes.c_int32]),
    "baton_clear_thread_priority": (ctypes.c_int32, []),
    "baton_set_stream_priority": (ctypes.c_int32, [ctypes.c_void_p, ctypes.c_int32]),
    "baton_clear_stream_priority": (ctypes.c_int32, [ctypes.c_void_p]),
    "baton_get_stream_priority": (
        ctypes.c_int32,
        [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32)],
    ),
    "baton_get_stream_own_priority": (
        ctypes.c_int32,
        [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32)],
    ),
    "baton_set_process_priority": (ctypes.c_int32, [ctypes.c_int32]),
    "baton_hint_stream": (ctypes.c_int32, [ctypes.c_void_p, ctypes.POINTER(Hint)]),
    "baton_hint_process": (ctypes.c_int32, [ctypes.POINTER(Hint)]),
    "baton_suspend_stream": (ctypes.c_int32, [ctypes.c_void_p]),
    "baton_resume_stream": (ctypes.c_int32, [ctypes.c_void_p]),
    "baton_status": (ctypes.c_int32, [ctypes.POINTER(Status)]),
    "baton_queues": (
        ctypes.c_int32,
        [ctypes.POINTER(Queue), ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)],
    ),
}


class Library:
    """The ABI's functions as found in this process, or none of them."""

    def __init__(self) -> None:
        self.functions: dict[str, Any] = {}
        try:
            process = ctypes.CDLL(None)
        except OSError:
            return
        for name, (restype, argtypes) in _SIGNATURES.items():
            try:
                f = getattr(process, name)
            except AttributeError:
                self.functions = {}
                return
            f.restype = restype
            f.argtypes = argtypes
            self.functions[name] = f

    @property
    def loaded(self) -> bool:
        return bool(self.functions)

    def get(self, name: str) -> Optional[Any]:
        return self.functions.get(name)


_LIBRARY: Optional[Library] = None


def library() -> Library:
    global _LIBRARY
    if _LIBRARY is None:
        _LIBRARY = Library()
    return _LIBRARY
