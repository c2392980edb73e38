//! CUDA commands in owned form, ready to be launched later from another thread.

use std::ffi::c_void;

use baton_core::{CommandKind, HwCommand};
use baton_cuda_sys::{
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, CUdeviceptr, CUevent, CUfunction, CUgraphExec,
    CUhostFn, CUlaunchAttribute, CUlaunchConfig, CUstream, CUstreamCallback,
};

use crate::{Driver, DriverError, KernelArgs, check};

/// A host pointer the application handed to an asynchronous operation; CUDA's contract makes
/// the application keep it valid until the operation has run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostPtr(pub *mut c_void);

// SAFETY: the pointer is only passed back to the driver, as the application would have.
unsafe impl Send for HostPtr {}

/// Element width of a memory fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemsetWidth {
    /// Bytes (`cuMemsetD8Async`).
    D8,
    /// 16-bit words (`cuMemsetD16Async`).
    D16,
    /// 32-bit words (`cuMemsetD32Async`).
    D32,
}

/// One deferred CUDA operation. Everything the application passed by pointer and might reuse
/// after its call returned (kernel arguments, launch attributes) is owned here.
pub enum CudaCommand {
    /// `cuLaunchKernel` or `cuLaunchCooperativeKernel`.
    Kernel {
        /// The function (or a `CUkernel` passed as one).
        f: CUfunction,
        /// Grid dimensions.
        grid: [u32; 3],
        /// Block dimensions.
        block: [u32; 3],
        /// Dynamic shared memory bytes.
        shared: u32,
        /// The copied arguments.
        args: KernelArgs,
        /// A cooperative launch.
        cooperative: bool,
    },
    /// `cuLaunchKernelEx`.
    KernelEx {
        /// The configuration (its `attrs` and `hStream` are set at launch).
        config: CUlaunchConfig,
        /// The copied attributes.
        attrs: Vec<CUlaunchAttribute>,
        /// The function.
        f: CUfunction,
        /// The copied arguments.
        args: KernelArgs,
    },
    /// `cuLaunchHostFunc`.
    HostFunc {
        /// The callback.
        f: CUhostFn,
        /// Its argument.
        data: HostPtr,
    },
    /// `cuStreamAddCallback`.
    StreamCallback {
        /// The callback.
        f: CUstreamCallback,
        /// Its argument.
        data: HostPtr,
        /// Flags (0).
        flags: u32,
    },
    /// `cuMemcpyAsync` between addresses that are not pageable host memory.
    Copy {
        /// Destination.
        dst: CUdeviceptr,
        /// Source.
        src: CUdeviceptr,
        /// Bytes.
        bytes: usize,
    },
    /// `cuMemcpyHtoDAsync_v2` from page-locked host memory.
    CopyHtoD {
        /// Destination.
        dst: CUdeviceptr,
        /// Source (page-locked).
        src: HostPtr,
        /// Bytes.
        bytes: usize,
    },
    /// `cuMemcpyDtoHAsync_v2` to page-locked host memory.
    CopyDtoH {
        /// Destination (page-locked).
        dst: HostPtr,
        /// Source.
        src: CUdeviceptr,
        /// Bytes.
        bytes: usize,
    },
    /// `cuStreamWaitValue32_v2`.
    WaitValue32 {
        /// The word.
        addr: CUdeviceptr,
        /// The value compared with.
        value: u32,
        /// Comparison flags.
        flags: u32,
    },
    /// `cuStreamWriteValue32_v2`.
    WriteValue32 {
        /// The word.
        addr: CUdeviceptr,
        /// The value written.
        value: u32,
        /// Flags.
        flags: u32,
    },
    /// `cuMemcpyDtoDAsync_v2`.
    CopyDtoD {
        /// Destination.
        dst: CUdeviceptr,
        /// Source.
        src: CUdeviceptr,
        /// Bytes.
        bytes: usize,
    },
    /// `cuMemsetD{8,16,32}Async`.
    Memset {
        /// Element width.
        width: MemsetWidth,
        /// Destination.
        dst: CUdeviceptr,
        /// The value (low bits used for narrow widths).
        value: u32,
        /// Elements.
        count: usize,
    },
    /// `cuEventRecord` / `cuEventRecordWithFlags`.
    EventRecord {
        /// The event.
        event: CUevent,
        /// Flags, for the `WithFlags` form.
        flags: Option<u32>,
    },
    /// `cuStreamWaitEvent`.
    WaitEvent {
        /// The event.
        event: CUevent,
        /// Flags.
        flags: u32,
    },
    /// `cuGraphLaunch`.
    GraphLaunch(CUgraphExec),
    /// `cuGraphUpload`.
    GraphUpload(CUgraphExec),
    /// `cuMemFreeAsync`.
    MemFree(CUdeviceptr),
}

// SAFETY: CUDA handles may be used from any thread; owned buffers are plain data; host pointers
// follow CUDA's own contract (see `HostPtr`).
unsafe impl Send for CudaCommand {}

impl HwCommand for CudaCommand {
    fn kind(&self) -> CommandKind {
        match self {
            CudaCommand::Kernel { .. } | CudaCommand::KernelEx { .. } => CommandKind::Kernel,
            CudaCommand::HostFunc { .. } | CudaCommand::StreamCallback { .. } => {
                CommandKind::HostFunc
            }
            CudaCommand::CopyDtoD { .. }
            | CudaCommand::Copy { .. }
            | CudaCommand::CopyHtoD { .. }
            | CudaCommand::CopyDtoH { .. } => CommandKind::Memcpy,
            CudaCommand::WaitValue32 { .. } => CommandKind::EventWait,
            CudaCommand::WriteValue32 { .. } => CommandKind::EventRecord,
            CudaCommand::Memset { .. } | CudaCommand::MemFree(_) => CommandKind::Memset,
            CudaCommand::EventRecord { .. } => CommandKind::EventRecord,
            CudaCommand::WaitEvent { .. } => CommandKind::EventWait,
            CudaCommand::GraphLaunch(_) | CudaCommand::GraphUpload(_) => CommandKind::GraphLaunch,
        }
    }
}

/// The events launch attributes record (a programmatic event, a launch-completion event): each
/// is a record of that event at the launch's place in its stream.
pub fn attribute_events(attrs: &[CUlaunchAttribute]) -> Vec<CUevent> {
    attrs
        .iter()
        .filter_map(|a| match a.id {
            CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT => {
                // SAFETY: for this key the value is a struct whose first member is the event.
                Some(unsafe { a.value.programmaticEvent.event })
            }
            CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT => {
                // SAFETY: as above.
                Some(unsafe { a.value.launchCompletionEvent.event })
            }
            _ => None,
        })
        .filter(|e| !e.is_null())
        .collect()
}

/// Whether launch attributes ask for a cooperative launch (all blocks resident at once).
pub fn cooperative_attrs(attrs: &[CUlaunchAttribute]) -> bool {
    attrs.iter().any(|a| {
        // SAFETY: for this key, `cooperative` is the meaningful member (an int).
        a.id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && unsafe { a.value.cooperative } != 0
    })
}

impl CudaCommand {
    /// Whether the command is a kernel that may run on part of the SMs: any kernel but a
    /// cooperative one, whose blocks must all be resident at once.
    pub fn confinable(&self) -> bool {
        match self {
            CudaCommand::Kernel { cooperative, .. } => !cooperative,
            CudaCommand::KernelEx { attrs, .. } => !cooperative_attrs(attrs),
            _ => false,
        }
    }

    /// Launches the command on `stream` (a real stream handle or `CU_STREAM_LEGACY`).
    ///
    /// # Safety
    /// `stream` must be a live stream (or `CU_STREAM_LEGACY`) of a context current on this
    /// thread, and the handles and host pointers in the command must still be valid, as the
    /// application that issued it promised CUDA.
    pub unsafe fn launch(self, d: &Driver, stream: CUstream) -> Result<(), DriverError> {
        // SAFETY (for every call below): the handles and pointers are those the application
        // passed to the driver, kept valid by CUDA's contract; owned copies live until the call
        // returns; the entry point has the signature its type states.
        match self {
            CudaCommand::Kernel {
                f,
                grid,
                block,
                shared,
                mut args,
                cooperative,
            } => {
                if cooperative {
                    let call =
                        Driver::require(d.cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel")?;
                    args.with_pointers(|kp, _| {
                        // SAFETY: see above.
                        let r = unsafe {
                            call(
                                f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                                stream, kp,
                            )
                        };
                        check("cuLaunchCooperativeKernel", r)
                    })
                } else {
                    let call = Driver::require(d.cuLaunchKernel, "cuLaunchKernel")?;
                    args.with_pointers(|kp, extra| {
                        // SAFETY: see above.
                        let r = unsafe {
                            call(
                                f, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                                stream, kp, extra,
                            )
                        };
                        check("cuLaunchKernel", r)
                    })
                }
            }
            CudaCommand::KernelEx {
                mut config,
                mut attrs,
                f,
                mut args,
            } => {
                let call = Driver::require(d.cuLaunchKernelEx, "cuLaunchKernelEx")?;
                config.hStream = stream;
                config.numAttrs = u32::try_from(attrs.len()).unwrap_or(u32::MAX);
                config.attrs = if attrs.is_empty() {
                    std::ptr::null_mut()
                } else {
                    attrs.as_mut_ptr()
                };
                args.with_pointers(|kp, extra| {
                    // SAFETY: see above; `config.attrs` points into `attrs`, alive here.
                    let r = unsafe { call(&config, f, kp, extra) };
                    check("cuLaunchKernelEx", r)
                })
            }
            CudaCommand::HostFunc { f, data } => {
                let call = Driver::require(d.cuLaunchHostFunc, "cuLaunchHostFunc")?;
                // SAFETY: see above.
                check("cuLaunchHostFunc", unsafe { call(stream, f, data.0) })
            }
            CudaCommand::StreamCallback { f, data, flags } => {
                let call = Driver::require(d.cuStreamAddCallback, "cuStreamAddCallback")?;
                // SAFETY: see above.
                check("cuStreamAddCallback", unsafe {
                    call(stream, f, data.0, flags)
                })
            }
            CudaCommand::Copy { dst, src, bytes } => {
                let call = Driver::require(d.cuMemcpyAsync, "cuMemcpyAsync")?;
                // SAFETY: see above.
                check("cuMemcpyAsync", unsafe { call(dst, src, bytes, stream) })
            }
            CudaCommand::CopyHtoD { dst, src, bytes } => {
                let call = Driver::require(d.cuMemcpyHtoDAsync_v2, "cuMemcpyHtoDAsync_v2")?;
                // SAFETY: see above.
                check("cuMemcpyHtoDAsync_v2", unsafe {
                    call(dst, src.0.cast_const(), bytes, stream)
                })
            }
            CudaCommand::CopyDtoH { dst, src, bytes } => {
                let call = Driver::require(d.cuMemcpyDtoHAsync_v2, "cuMemcpyDtoHAsync_v2")?;
                // SAFETY: see above.
                check("cuMemcpyDtoHAsync_v2", unsafe {
                    call(dst.0, src, bytes, stream)
                })
            }
            CudaCommand::WaitValue32 { addr, value, flags } => {
                let call = Driver::require(d.cuStreamWaitValue32_v2, "cuStreamWaitValue32_v2")?;
                // SAFETY: see above.
                check("cuStreamWaitValue32_v2", unsafe {
                    call(stream, addr, value, flags)
                })
            }
            CudaCommand::WriteValue32 { addr, value, flags } => {
                let call = Driver::require(d.cuStreamWriteValue32_v2, "cuStreamWriteValue32_v2")?;
                // SAFETY: see above.
                check("cuStreamWriteValue32_v2", unsafe {
                    call(stream, addr, value, flags)
                })
            }
            CudaCommand::CopyDtoD { dst, src, bytes } => {
                let call = Driver::require(d.cuMemcpyDtoDAsync_v2, "cuMemcpyDtoDAsync_v2")?;
                // SAFETY: see above.
                check("cuMemcpyDtoDAsync_v2", unsafe {
                    call(dst, src, bytes, stream)
                })
            }
            CudaCommand::Memset {
                width,
                dst,
                value,
                count,
            } => match width {
                MemsetWidth::D8 => {
                    let call = Driver::require(d.cuMemsetD8Async, "cuMemsetD8Async")?;
                    // SAFETY: see above.
                    check("cuMemsetD8Async", unsafe {
                        call(dst, value.to_le_bytes()[0], count, stream)
                    })
                }
                MemsetWidth::D16 => {
                    let call = Driver::require(d.cuMemsetD16Async, "cuMemsetD16Async")?;
                    // SAFETY: see above.
                    check("cuMemsetD16Async", unsafe {
                        call(
                            dst,
                            u16::from_le_bytes([value.to_le_bytes()[0], value.to_le_bytes()[1]]),
                            count,
                            stream,
                        )
                    })
                }
                MemsetWidth::D32 => {
                    let call = Driver::require(d.cuMemsetD32Async, "cuMemsetD32Async")?;
                    // SAFETY: see above.
                    check("cuMemsetD32Async", unsafe {
                        call(dst, value, count, stream)
                    })
                }
            },
            CudaCommand::EventRecord { event, flags } => match flags {
                None => {
                    let call = Driver::require(d.cuEventRecord, "cuEventRecord")?;
                    // SAFETY: see above.
                    check("cuEventRecord", unsafe { call(event, stream) })
                }
                Some(fl) => {
                    let call = Driver::require(d.cuEventRecordWithFlags, "cuEventRecordWithFlags")?;
                    // SAFETY: see above.
                    check("cuEventRecordWithFlags", unsafe { call(event, stream, fl) })
                }
            },
            CudaCommand::WaitEvent { event, flags } => {
                let call = Driver::require(d.cuStreamWaitEvent, "cuStreamWaitEvent")?;
                // SAFETY: see above.
                check("cuStreamWaitEvent", unsafe { call(stream, event, flags) })
            }
            CudaCommand::GraphLaunch(g) => {
                let call = Driver::require(d.cuGraphLaunch, "cuGraphLaunch")?;
                // SAFETY: see above.
                check("cuGraphLaunch", unsafe { call(g, stream) })
            }
            CudaCommand::GraphUpload(g) => {
                let call = Driver::require(d.cuGraphUpload, "cuGraphUpload")?;
                // SAFETY: see above.
                check("cuGraphUpload", unsafe { call(g, stream) })
            }
            CudaCommand::MemFree(p) => {
                let call = Driver::require(d.cuMemFreeAsync, "cuMemFreeAsync")?;
                // SAFETY: see above.
                check("cuMemFreeAsync", unsafe { call(p, stream) })
            }
        }
    }
}
