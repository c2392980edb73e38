//! CUDA commands in owned form, ready to be launched later from another thread.

use std::ffi::c_void;

use baton_core::{CommandKind, HwCommand};
use baton_cuda_sys::{
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, CUdeviceptr, CUevent, CUfunction, CUgraphExec,
    CUhostFn, CUlaunchAttribute, CUlaunchConfig, CUstreamCallback,
};

use crate::KernelArgs;

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
#[derive(Clone)]
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

    /// A kernel launch's function (the handle it was launched with) and the dynamic shared
    /// memory it asks for; `None` for any other command.
    pub fn kernel_shared(&self) -> Option<(CUfunction, u32)> {
        match self {
            CudaCommand::Kernel { f, shared, .. } => Some((*f, *shared)),
            CudaCommand::KernelEx { f, config, .. } => Some((*f, config.sharedMemBytes)),
            _ => None,
        }
    }
}
