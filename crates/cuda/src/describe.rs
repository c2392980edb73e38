//! What Baton says of a command it launched later that the driver refused: the application
//! learns of the failure only at its next synchronization, without knowing which command it
//! was, so the log names the command and what the driver had in force for it.

use std::fmt::Write as _;

use baton_cuda_sys::{CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as LIMIT, CUfunction};

use crate::{CudaCommand, Driver, KernelArgs, LaunchHandle};

impl CudaCommand {
    /// One line describing the command for a log: for a kernel, its name, shape, dynamic
    /// shared memory against the limit in force (and, for a library kernel, the kernel's own
    /// limit), how its arguments were copied. Asks the driver: call it on a thread with the
    /// command's context current, while the command's handles are live.
    pub fn describe(&self, d: &Driver) -> String {
        let (f, shape, shared, args) = match self {
            CudaCommand::Kernel {
                f,
                grid,
                block,
                shared,
                args,
                cooperative,
            } => (
                *f,
                format!(
                    "{}grid {grid:?} block {block:?}",
                    if *cooperative { "cooperative " } else { "" }
                ),
                *shared,
                args,
            ),
            CudaCommand::KernelEx {
                config,
                attrs,
                f,
                args,
            } => (
                *f,
                format!(
                    "grid {:?} block {:?} with {} launch attributes",
                    [config.gridDimX, config.gridDimY, config.gridDimZ],
                    [config.blockDimX, config.blockDimY, config.blockDimZ],
                    attrs.len()
                ),
                config.sharedMemBytes,
                args,
            ),
            other => return format!("{:?}", baton_core::HwCommand::kind(other)),
        };
        let mut s = format!(
            "kernel {} {shape}, {shared} bytes of dynamic shared memory",
            crate::params::function_name(d, f).unwrap_or_else(|| format!("{f:?}"))
        );
        describe_limit(d, f, &mut s);
        let _ = match args {
            KernelArgs::None => write!(s, ", no arguments"),
            KernelArgs::Params { layout, .. } => write!(
                s,
                ", {} parameters in {} bytes",
                layout.params.len(),
                layout.total()
            ),
            KernelArgs::Extra { size, .. } => write!(s, ", a {size}-byte argument buffer"),
        };
        s
    }
}

/// Appends the dynamic shared memory limit in force for `f` (and the kernel's own).
fn describe_limit(d: &Driver, f: CUfunction, s: &mut String) {
    // SAFETY: `f` is the handle of a launch Baton holds, live while it is held.
    let Some(handle) = (unsafe { LaunchHandle::resolve(d, f, None) }) else {
        s.push_str(" (the driver takes its handle neither as a function nor as a kernel)");
        return;
    };
    let in_force = handle.in_force(d, LIMIT);
    let _ = match (handle, in_force) {
        (LaunchHandle::Function(_), Some(v)) => write!(s, " (its limit: {v})"),
        (LaunchHandle::Kernel { .. }, Some(v)) => write!(
            s,
            " (a library kernel; the limit in force: {v}, the kernel's own: {})",
            handle
                .kernel_value(d, LIMIT)
                .map_or_else(|| "unknown".to_string(), |k| k.to_string())
        ),
        (_, None) => write!(s, " (its limit unknown)"),
    };
}
