"""The `baton` Python package on the driver API (reached through ctypes, as the CUDA runtime
reaches it: `dlopen` + `dlsym`). First argument: "absent" (no Baton: every call raises
NotLoadedError), "local" (under the interposer with a scheduler in the process) or "torch"
(`baton.torch` under the interposer, over a stand-in for the few parts of PyTorch it uses,
whose streams are the driver's). Prints "<mode> ok" or raises."""

import contextlib
import ctypes
import sys
import threading
import types

import baton

mode = sys.argv[1]

cuda = ctypes.CDLL("libcuda.so.1")


def cu(name, *args):
    r = getattr(cuda, name)(*args)
    assert r == 0, f"{name} returned {r}"


cu("cuInit", 0)
dev = ctypes.c_int()
cu("cuDeviceGet", ctypes.byref(dev), 0)
ctx = ctypes.c_void_p()
cu("cuCtxCreate_v2", ctypes.byref(ctx), 0, dev)
module = ctypes.c_void_p()
cu("cuModuleLoadData", ctypes.byref(module), b".fake_cuda_module spin_us")
spin = ctypes.c_void_p()
cu("cuModuleGetFunction", ctypes.byref(spin), module, b"spin_us")
streams = []
for _ in range(2):
    s = ctypes.c_void_p()
    cu("cuStreamCreate", ctypes.byref(s), 0)
    streams.append(s.value)
hp, be = streams


def launch(stream, us=10):
    arg = ctypes.c_uint64(us)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.byref(arg), ctypes.c_void_p))
    cuda.cuLaunchKernel.argtypes = (
        [ctypes.c_void_p]
        + [ctypes.c_uint] * 7
        + [
            ctypes.c_void_p,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
    )
    r = cuda.cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, stream, params, None)
    assert r == 0, f"cuLaunchKernel returned {r}"


def raises(cls, f, *args, **kwargs):
    try:
        f(*args, **kwargs)
    except cls as e:
        return e
    raise AssertionError(f"{f.__name__}{args} did not raise {cls.__name__}")


if mode == "absent":
    assert not baton.loaded()
    e = raises(baton.NotLoadedError, baton.set_thread_priority, 10)
    assert e.code == 1 and e.name == "not_loaded" and "baton run" in str(e), e
    raises(baton.NotLoadedError, baton.status)
    raises(baton.NotLoadedError, baton.hint, upcoming_ms=2, stream=hp)
    with_block = raises(baton.NotLoadedError, lambda: baton.priority(5).__enter__())
    assert isinstance(with_block, baton.BatonError)
elif mode == "local":
    assert baton.loaded()
    assert baton.abi_version() == (1, 0), baton.abi_version()
    assert baton.stream_priority(hp) == 0
    baton.set_stream_priority(hp, 10)
    assert baton.stream_priority(hp) == 10
    # Errors, with the exact reason.
    e = raises(baton.OutOfRangeError, baton.set_stream_priority, hp, 101)
    assert "between -100 and 100" in str(e), e
    e = raises(baton.UnknownStreamError, baton.set_stream_priority, 0xDEAD0, 1)
    assert "0xdead0" in str(e), e
    raises(TypeError, baton.set_stream_priority, "a stream", 1)
    raises(TypeError, baton.set_thread_priority, 1.5)
    e = raises(baton.OutOfRangeError, baton.hint, deadline_ms=0.000001, stream=hp)
    assert "deadline" in str(e), e
    e = raises(baton.BatonError, baton.suspend, hp)
    assert e.name == "not_app_managed", e
    # A scoped priority follows the thread's work onto each stream it launches on; blocks
    # nest, and the stream goes back once the thread's unscoped work reaches it.
    with baton.priority(7):
        launch(be)
        assert baton.stream_priority(be) == 7
        with baton.priority(9):
            launch(be)
            assert baton.stream_priority(be) == 9
        launch(be)
        assert baton.stream_priority(be) == 7
    launch(be)
    assert baton.stream_priority(be) == 0
    # Another thread's priority does not leak into this one.
    seen = []

    def other():
        with baton.priority(-5):
            launch(be)
            seen.append(baton.stream_priority(be))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [-5], seen
    launch(be)
    assert baton.stream_priority(be) == 0
    # A stream's priority scoped to a block comes back after it.
    with baton.priority(20, stream=be):
        assert baton.stream_priority(be) == 20
    assert baton.stream_priority(be) == 0
    baton.hint(deadline_ms=20, upcoming_ms=2, stream=hp)
    baton.hint(utilization=30, process=True)
    baton.clear_hint("deadline", stream=hp)
    raises(ValueError, baton.clear_hint, "colour")
    baton.set_process_priority(3)
    assert baton.stream_priority(hp) == 10
    st = baton.status()
    assert st.scheduler == "local" and st.policy == "hpf", st
    assert st.process_priority == 3, st
    by_stream = {q.stream: q for q in st.queues}
    assert by_stream[hp].priority == 10 and by_stream[be].priority == 3, st
    assert by_stream[be].submitted >= 6, by_stream[be]
    assert by_stream[hp].kind == "regular"
    cu("cuCtxSynchronize")
elif mode == "torch":
    # What baton.torch uses of PyTorch: torch.device, and torch.cuda's current_device, Stream
    # (its `cuda_stream` a driver stream), stream (makes one current on this thread) and
    # current_stream (what `baton` reads for `stream=None`).
    class Device:
        def __init__(self, kind, index=None):
            if isinstance(kind, Device):
                kind, index = kind.type, kind.index
            self.type, self.index = kind, index

    class Stream:
        def __init__(self, device=None, handle=None):
            if handle is None:
                # As PyTorch does on a thread's first CUDA call: the device's context current.
                cu("cuCtxSetCurrent", ctx)
                s = ctypes.c_void_p()
                cu("cuStreamCreate", ctypes.byref(s), 0)
                handle = s.value
            self.cuda_stream, self.device = handle, device

    legacy = Stream(handle=0)
    current = threading.local()

    @contextlib.contextmanager
    def stream(s):
        before = getattr(current, "stream", legacy)
        current.stream = s
        try:
            yield
        finally:
            current.stream = before

    torch = types.ModuleType("torch")
    torch.device = Device
    torch.cuda = types.SimpleNamespace(
        current_device=lambda: 0,
        Stream=Stream,
        stream=stream,
        current_stream=lambda: getattr(current, "stream", legacy),
        is_available=lambda: True,
        is_initialized=lambda: True,
    )
    sys.modules["torch"] = torch
    import baton.torch

    with baton.torch.priority(10) as s10:
        # The block's work is on this thread's priority-10 stream, at priority 10.
        assert torch.cuda.current_stream() is s10
        assert baton.stream_priority(s10) == 10
        launch(s10.cuda_stream)
        assert baton.stream_priority(None) == 10
    assert torch.cuda.current_stream() is legacy
    # One stream per (device, priority) and thread: the same again, another for another
    # priority, another for another thread.
    with baton.torch.priority(10) as again:
        assert again is s10
    with baton.torch.priority(-5) as low:
        assert low is not s10 and baton.stream_priority(low) == -5
    theirs = []

    def other():
        with baton.torch.priority(10) as s:
            launch(s.cuda_stream)
            theirs.append(s)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert theirs and theirs[0] is not s10 and baton.stream_priority(theirs[0]) == 10
    by_stream = {q.stream: q for q in baton.status().queues}
    assert by_stream[s10.cuda_stream].priority == 10, by_stream
    assert by_stream[s10.cuda_stream].submitted >= 1, by_stream
    cu("cuCtxSynchronize")
else:
    raise SystemExit(f"unknown mode {mode}")
print(f"{mode} ok")
