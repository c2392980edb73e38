"""PyTorch helpers: a stream of its own per priority, so one thread's urgent work never shares a
queue with another thread's background work.

Baton schedules streams. PyTorch puts every thread's work on the same default stream unless
told otherwise, so two priorities in one process need two streams; `priority` gives the
calling thread one per (device, priority) and makes it current inside the block::

    import baton.torch
    with baton.torch.priority(10):
        logits = model(batch)          # on a priority-10 stream of this thread
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterator, Optional, Tuple

try:
    import torch
except ModuleNotFoundError as e:
    if e.name != "torch":
        raise
    raise ModuleNotFoundError(
        "baton.torch needs PyTorch, which is not installed in this Python "
        f"({__import__('sys').executable}): install it (https://pytorch.org/get-started/), "
        "or use baton's own functions (`import baton`), which need no framework",
        name="torch",
    ) from None

import baton

_local = threading.local()


def stream(p: int, device: Optional[Any] = None) -> "torch.cuda.Stream":
    """This thread's stream for priority `p` on `device` (default: the current device), made on
    first use and given `p` as its own Baton priority."""
    dev = torch.device("cuda", torch.cuda.current_device()) if device is None else torch.device(device)
    streams: Dict[Tuple[int, int], torch.cuda.Stream] = getattr(_local, "streams", None) or {}
    _local.streams = streams
    key = (dev.index or 0, p)
    s = streams.get(key)
    if s is None:
        s = torch.cuda.Stream(device=dev)
        baton.set_stream_priority(s, p)
        streams[key] = s
    return s


@contextlib.contextmanager
def priority(p: int, device: Optional[Any] = None) -> Iterator["torch.cuda.Stream"]:
    """Runs the block's PyTorch work at priority `p`: on this thread's stream for `p`, with the
    thread's priority set to `p`. Yields the stream. Like `torch.cuda.stream`, it adds no
    waits: tensors made on another stream before the block need
    `torch.cuda.current_stream().wait_stream(other)` (or a `.cpu()`/`synchronize`) first, and
    results read on another stream after it need the same. It deliberately does not make the
    block wait for the default stream: that would queue urgent work behind whatever
    background work another thread left there."""
    s = stream(p, device)
    with baton.priority(p), torch.cuda.stream(s):
        yield s
