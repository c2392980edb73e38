"""A Python program that launches while holding the interpreter lock (ctypes.PyDLL keeps it
across foreign calls; ctypes.CDLL releases it), into a low-priority stream that Baton holds
back while a high-priority stream's long kernel runs.

  python_lock.py pydll|cdll
"""

import ctypes
import sys
import time

lib = (ctypes.PyDLL if sys.argv[1] == "pydll" else ctypes.CDLL)("libcuda.so.1")


def ck(r, what):
    if r != 0:
        sys.exit(f"{what} failed: {r}")


ck(lib.cuInit(0), "cuInit")
dev = ctypes.c_int()
ck(lib.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
ck(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
ck(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
ck(lib.cuModuleLoadData(ctypes.byref(mod), b".fake_cuda_module spin_us\0"), "cuModuleLoadData")
ck(lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"spin_us"), "cuModuleGetFunction")


def stream(priority):
    s = ctypes.c_void_p()
    ck(lib.cuStreamCreateWithPriority(ctypes.byref(s), 1, priority), "cuStreamCreateWithPriority")
    return s


def launch(s, us):
    arg = ctypes.c_ulonglong(us)
    params = (ctypes.c_void_p * 1)(ctypes.addressof(arg))
    ck(lib.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, None), "cuLaunchKernel")


high, low = stream(-5), stream(0)
launch(high, 400_000)  # 0.4 s: the low stream is suspended meanwhile
time.sleep(0.1)
for _ in range(6):  # beyond BATON_MAX_BUFFERED: the launching thread is held
    launch(low, 10)
ck(lib.cuStreamSynchronize(low), "cuStreamSynchronize")
ck(lib.cuStreamSynchronize(high), "cuStreamSynchronize")
print("python-lock ok")
