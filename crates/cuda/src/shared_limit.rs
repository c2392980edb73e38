//! A function's dynamic shared memory limit at a launch Baton makes later.
//!
//! CUDA checks a launch's dynamic shared memory against the limit in force
//! (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`) when the launch is made, and libraries
//! raise the limit before a launch that needs it and lower it again right after. A launch Baton
//! held back reaches the driver after the lowering: it is made with the limit raised to what
//! it asks for and put back at once, under a lock the application's own attribute changes take
//! too (through the interposer), so that neither is lost. Launching every held command before
//! each lowering instead let a held job through a service's request many times a second
//! (ResNet-50 training lowers limits about four times a step).
//!
//! # Which limit is in force
//! A launch handle is a function (`CUfunction`) or a library kernel (`CUkernel`) passed as one,
//! as the CUDA runtime launches its kernels. A kernel launched in a context runs as its function
//! in that context (`cuKernelGetFunction`), so two values can bear on it:
//! - the kernel's, per device (`cuKernelSetAttribute`, read back by `cuKernelGetAttribute`);
//! - its function's, per context (`cuFuncSetAttribute` on the function
//!   `cuKernelGetFunction` gave), which, once set, overrides the kernel's whatever the order of
//!   the two calls.
//!
//! The function's value (`cuFuncGetAttribute` on it) is the one in force, so that is what is
//! read, and a raise goes through the call that sets what is in force: the kernel's value
//! while the function has none of its own (setting the function's would override every later
//! change the program makes to the kernel's), the function's once it has one. Every launch that
//! asks for dynamic shared memory is checked, not only those above the 48 KiB every function may
//! use by default: a function with static shared memory may use less, and a program may lower
//! a limit below the default.

use std::ffi::c_uint;
use std::sync::{Mutex, MutexGuard};

use baton_core::locks;
use baton_cuda_sys::{
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as LIMIT, CUdevice, CUfunction, CUkernel,
};

use crate::{CudaCommand, Driver};

static ATTRIBUTES: Mutex<()> = Mutex::new(());

/// Held while a function attribute changes: by the application's `cuFuncSetAttribute` and
/// `cuKernelSetAttribute` (through the interposer), and by a later launch's raise.
pub fn attribute_lock() -> MutexGuard<'static, ()> {
    locks::lock(&ATTRIBUTES)
}

/// A launch handle as the driver resolves it in the calling thread's current context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaunchHandle {
    /// A function: its attributes are its own (`cuFuncGetAttribute`/`cuFuncSetAttribute`).
    Function(CUfunction),
    /// A library kernel passed as a function. The driver launches it but refuses it in the
    /// `cuFunc*` attribute calls (driver 580, `CUDA_ERROR_INVALID_HANDLE`).
    Kernel {
        /// The kernel.
        kernel: CUkernel,
        /// Its function in the current context, whose attributes are those in force.
        function: CUfunction,
        /// The device the kernel's own attributes are read and set on.
        device: CUdevice,
    },
}

impl LaunchHandle {
    /// How the driver takes `f` in the current context, `device` being the context's device
    /// (asked of the driver when `None`); `None` when it takes it neither as a function nor as
    /// a kernel.
    ///
    /// # Safety
    /// `f` is a launch handle an application gave (a function, or a library kernel passed as
    /// one), or a value the driver refuses as either.
    pub unsafe fn resolve(d: &Driver, f: CUfunction, device: Option<CUdevice>) -> Option<Self> {
        // SAFETY: the caller's contract.
        if unsafe { function_attribute(d, f, LIMIT) }.is_some() {
            return Some(LaunchHandle::Function(f));
        }
        let get = d.cuKernelGetFunction?;
        // `f` was refused as a function, so it is a library kernel passed as one (the only other
        // handle a launch takes) or no handle at all, which the driver refuses too.
        let kernel: CUkernel = f.cast();
        let mut function: CUfunction = std::ptr::null_mut();
        // SAFETY: `kernel` is a kernel handle or one the driver refuses; `function` is a valid
        // out-pointer.
        if !unsafe { get(&mut function, kernel) }.is_success() || function.is_null() {
            return None;
        }
        let device = device.or_else(|| current_device(d))?;
        Some(LaunchHandle::Kernel {
            kernel,
            function,
            device,
        })
    }

    /// The function whose attributes are in force for a launch of this handle.
    fn function(self) -> CUfunction {
        match self {
            LaunchHandle::Function(f) | LaunchHandle::Kernel { function: f, .. } => f,
        }
    }

    /// Attribute `attrib` in force for a launch of this handle.
    pub fn in_force(self, d: &Driver, attrib: c_uint) -> Option<i32> {
        // SAFETY: a function handle the driver resolved.
        unsafe { function_attribute(d, self.function(), attrib) }
    }

    /// For a kernel, its own value of `attrib` on its device (what `cuKernelGetAttribute`
    /// says, which is not in force once its function has a value of its own).
    pub fn kernel_value(self, d: &Driver, attrib: c_uint) -> Option<i32> {
        let LaunchHandle::Kernel { kernel, device, .. } = self else {
            return None;
        };
        let get = d.cuKernelGetAttribute?;
        let mut v = 0;
        // SAFETY: a kernel handle the driver resolved; `v` is a valid out-pointer.
        unsafe { get(&mut v, attrib, kernel, device) }
            .is_success()
            .then_some(v)
    }

    /// Sets the kernel's own value of `attrib` (nothing for a function); whether the driver
    /// took it.
    fn set_kernel_value(self, d: &Driver, attrib: c_uint, value: i32) -> bool {
        let LaunchHandle::Kernel { kernel, device, .. } = self else {
            return false;
        };
        d.cuKernelSetAttribute.is_some_and(|set| {
            // SAFETY: a kernel handle the driver resolved, on its device.
            unsafe { set(attrib, value, kernel, device) }.is_success()
        })
    }

    /// Sets the value of `attrib` of the function in force; whether the driver took it.
    fn set_function_value(self, d: &Driver, attrib: c_uint, value: i32) -> bool {
        d.cuFuncSetAttribute.is_some_and(|set| {
            // SAFETY: a function handle the driver resolved.
            unsafe { set(self.function(), attrib, value) }.is_success()
        })
    }

    /// Raises the dynamic shared memory limit in force from `current` to `want` through the
    /// call that sets what is in force (see the module documentation); how to put it back, or
    /// `None` when the driver took no raise.
    fn raise_limit(self, d: &Driver, current: i32, want: i32) -> Option<Restore> {
        if let LaunchHandle::Kernel { .. } = self {
            let own = self.kernel_value(d, LIMIT)?;
            if own == current {
                // The function may have no value of its own: try the kernel's.
                if !self.set_kernel_value(d, LIMIT, want) {
                    return None;
                }
                if self.in_force(d, LIMIT).is_some_and(|v| v >= want) {
                    return Some(Restore::Kernel(self, own));
                }
                // The function has a value of its own, equal to the kernel's.
                self.set_kernel_value(d, LIMIT, own);
            }
            // The function's value is in force: raising it keeps it the function's own.
        }
        self.set_function_value(d, LIMIT, want)
            .then_some(Restore::Function(self, current))
    }
}

/// How to put back a limit raised for one launch.
enum Restore {
    /// The kernel's own value, to this.
    Kernel(LaunchHandle, i32),
    /// The function's value, to this.
    Function(LaunchHandle, i32),
}

impl Restore {
    fn apply(self, d: &Driver) {
        match self {
            Restore::Kernel(h, v) => h.set_kernel_value(d, LIMIT, v),
            Restore::Function(h, v) => h.set_function_value(d, LIMIT, v),
        };
    }
}

/// `cuFuncGetAttribute(attrib, f)`, or `None` if the driver refuses it.
///
/// # Safety
/// `f` is a launch handle or a value the driver refuses.
unsafe fn function_attribute(d: &Driver, f: CUfunction, attrib: c_uint) -> Option<i32> {
    let get = d.cuFuncGetAttribute?;
    let mut v = 0;
    // SAFETY: the caller's contract; `v` is a valid out-pointer.
    unsafe { get(&mut v, attrib, f) }.is_success().then_some(v)
}

/// Function attribute `attrib` in force for a launch of handle `f` made now in the current
/// context (a function, or a library kernel passed as one, `device` its context's device or
/// `None` to ask the driver); `None` when the driver tells neither way.
///
/// # Safety
/// `f` is a launch handle an application gave (a function, or a library kernel passed as one),
/// or a value the driver refuses as either.
pub unsafe fn read_attribute(
    d: &Driver,
    f: CUfunction,
    attrib: c_uint,
    device: Option<CUdevice>,
) -> Option<i32> {
    // SAFETY: the caller's contract.
    unsafe { LaunchHandle::resolve(d, f, device) }?.in_force(d, attrib)
}

/// The current context's device.
fn current_device(d: &Driver) -> Option<CUdevice> {
    let get = d.cuCtxGetDevice?;
    let mut dev = 0;
    // SAFETY: `dev` is a valid out-pointer; without a current context the driver says so.
    unsafe { get(&mut dev) }.is_success().then_some(dev)
}

/// Runs `launch` (of `cmd`) with the dynamic shared memory limit in force for its function at
/// least what `cmd` asks for: raised for the launch and put back after, when it was lowered
/// since the application made the launch. A limit the driver will not tell or change is left
/// as it is (the launch then meets the driver's answer, as it would have). Called on a thread
/// with the launch's context current.
pub(crate) fn with_limit_for<R>(d: &Driver, cmd: &CudaCommand, launch: impl FnOnce() -> R) -> R {
    let Some((f, bytes)) = cmd.kernel_shared().filter(|(_, bytes)| *bytes > 0) else {
        return launch();
    };
    let _lock = attribute_lock();
    let want = i32::try_from(bytes).unwrap_or(i32::MAX);
    // SAFETY: `f` is the handle of the application's launch, live while the launch is held.
    let Some(handle) = (unsafe { LaunchHandle::resolve(d, f, None) }) else {
        return launch();
    };
    let Some(current) = handle.in_force(d, LIMIT) else {
        return launch();
    };
    if current >= want {
        return launch();
    }
    let Some(restore) = handle.raise_limit(d, current, want) else {
        return launch();
    };
    let r = launch();
    restore.apply(d);
    r
}
