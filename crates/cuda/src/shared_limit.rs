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

use std::sync::{Mutex, MutexGuard};

use baton_core::locks;
use baton_cuda_sys::{CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as LIMIT, CUfunction};

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

/// Runs `launch` (of `cmd`) with its function's dynamic shared memory limit at least what
/// `cmd` asks for: raised for the launch and put back after, when it was lowered since the
/// application made the launch. A limit the driver will not tell or change is left as it is
/// (the launch then meets the driver's answer, as it would have).
pub(crate) fn with_limit_for<R>(d: &Driver, cmd: &CudaCommand, launch: impl FnOnce() -> R) -> R {
    let Some((f, bytes)) = cmd.needs_raised_limit() else {
        return launch();
    };
    let (Some(get), Some(set)) = (d.cuFuncGetAttribute, d.cuFuncSetAttribute) else {
        return launch();
    };
    let _lock = attribute_lock();
    let mut current = 0;
    // SAFETY: `f` is the application's function (or kernel passed as one), live while a launch
    // of it is held; `current` is a valid out-pointer.
    let known = unsafe { get(&mut current, LIMIT, f) }.is_success();
    let want = i32::try_from(bytes).unwrap_or(i32::MAX);
    // SAFETY: as above; the value is one the application's own launch asked for.
    if !known || current >= want || !unsafe { set(f, LIMIT, want) }.is_success() {
        return launch();
    }
    let r = launch();
    // SAFETY: as above; the value the application had set.
    unsafe { set(f, LIMIT, current) };
    r
}
