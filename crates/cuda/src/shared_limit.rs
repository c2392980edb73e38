//! A function's dynamic shared memory limit at a launch Baton makes later.
//!
//! CUDA checks a launch's dynamic shared memory against the function's limit
//! (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`) when the launch is made, and libraries
//! raise the limit before a launch that needs it and lower it again right after. A launch Baton
//! held back reaches the driver after the lowering: it is made with the limit raised to what
//! it asks for and put back at once, under a lock the application's own attribute changes take
//! too (through the interposer), so that neither is lost. Launching every held command before
//! each lowering instead let a held job through a service's request many times a second
//! (ResNet-50 training lowers limits about four times a step).

use std::ffi::c_uint;
use std::sync::{Mutex, MutexGuard};

use baton_core::locks;
use baton_cuda_sys::{
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as LIMIT, CUdevice, CUfunction, CUkernel,
};

use crate::{CudaCommand, Driver};

/// Dynamic shared memory every function may use without raising its limit.
const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;

static ATTRIBUTES: Mutex<()> = Mutex::new(());

/// Held while a function attribute changes: by the application's `cuFuncSetAttribute` and
/// `cuKernelSetAttribute` (through the interposer), and by a later launch's raise.
pub fn attribute_lock() -> MutexGuard<'static, ()> {
    locks::lock(&ATTRIBUTES)
}

impl CudaCommand {
    /// The function of a kernel launch that asks for more dynamic shared memory than every
    /// function may use, and how much.
    fn needs_raised_limit(&self) -> Option<(CUfunction, u32)> {
        self.kernel_shared()
            .filter(|(_, bytes)| *bytes > DEFAULT_DYNAMIC_SHARED)
    }
}

/// Through which calls the driver tells and changes a launch handle's attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttributesVia {
    /// `cuFuncGetAttribute`/`cuFuncSetAttribute`: the handle is a `CUfunction`.
    Function,
    /// `cuKernelGetAttribute`/`cuKernelSetAttribute` on this device: the handle is a library
    /// kernel (`CUkernel`) passed as a function, as the CUDA runtime launches kernels. The
    /// driver launches such a handle but refuses it in the `cuFunc*` attribute calls (driver
    /// 580, `CUDA_ERROR_INVALID_HANDLE`).
    Kernel(CUdevice),
}

/// Function attribute `attrib` of launch handle `f`, and through which calls the driver told
/// it: as a function first, then as a library kernel on `device` (the current context's when
/// `None`). `None` when the driver tells neither way.
///
/// # Safety
/// `f` is a launch handle an application gave (a function, or a library kernel passed as one),
/// or a value the driver refuses as either.
pub unsafe fn read_attribute(
    d: &Driver,
    f: CUfunction,
    attrib: c_uint,
    device: Option<CUdevice>,
) -> Option<(i32, AttributesVia)> {
    let mut v = 0;
    if let Some(get) = d.cuFuncGetAttribute
        // SAFETY: `f` is a launch handle the application gave (a function, or a kernel passed
        // as one, which the driver refuses with an error); `v` is a valid out-pointer.
        && unsafe { get(&mut v, attrib, f) }.is_success()
    {
        return Some((v, AttributesVia::Function));
    }
    let get = d.cuKernelGetAttribute?;
    let dev = device.or_else(|| current_device(d))?;
    // `f` was refused as a function, so it is a library kernel passed as one (the only other
    // handle a launch takes) or no handle at all, which the driver refuses too.
    let k: CUkernel = f.cast();
    // SAFETY: `k` is a kernel handle or one the driver refuses; `v` is a valid out-pointer.
    unsafe { get(&mut v, attrib, k, dev) }
        .is_success()
        .then_some((v, AttributesVia::Kernel(dev)))
}

/// Sets attribute `attrib` of launch handle `f` to `value`, through the calls `via` names;
/// whether the driver took it.
fn write_attribute(
    d: &Driver,
    f: CUfunction,
    attrib: c_uint,
    value: i32,
    via: AttributesVia,
) -> bool {
    match via {
        AttributesVia::Function => d.cuFuncSetAttribute.is_some_and(|set| {
            // SAFETY: a function handle the driver just told this attribute of.
            unsafe { set(f, attrib, value) }.is_success()
        }),
        AttributesVia::Kernel(dev) => d.cuKernelSetAttribute.is_some_and(|set| {
            let k: CUkernel = f.cast();
            // SAFETY: a kernel handle the driver just told this attribute of, on `dev`.
            unsafe { set(attrib, value, k, dev) }.is_success()
        }),
    }
}

/// The current context's device.
fn current_device(d: &Driver) -> Option<CUdevice> {
    let get = d.cuCtxGetDevice?;
    let mut dev = 0;
    // SAFETY: `dev` is a valid out-pointer; without a current context the driver says so.
    unsafe { get(&mut dev) }.is_success().then_some(dev)
}

/// Runs `launch` (of `cmd`) with its function's dynamic shared memory limit at least what
/// `cmd` asks for: raised for the launch and put back after, when it was lowered since the
/// application made the launch. A limit the driver will not tell or change is left as it is
/// (the launch then meets the driver's answer, as it would have). Called on a thread with the
/// launch's context current.
pub(crate) fn with_limit_for<R>(d: &Driver, cmd: &CudaCommand, launch: impl FnOnce() -> R) -> R {
    let Some((f, bytes)) = cmd.needs_raised_limit() else {
        return launch();
    };
    let _lock = attribute_lock();
    let want = i32::try_from(bytes).unwrap_or(i32::MAX);
    // SAFETY: `f` is the handle of the application's launch, live while the launch is held.
    let Some((current, via)) = (unsafe { read_attribute(d, f, LIMIT, None) }) else {
        return launch();
    };
    if current >= want || !write_attribute(d, f, LIMIT, want, via) {
        return launch();
    }
    let r = launch();
    write_attribute(d, f, LIMIT, current, via);
    r
}
