//! Every driver call that puts an operation on a stream for an application, in one place: a
//! launch as the application made it ([`Launch`], its arguments borrowed for the duration of
//! its call) and as Baton made it later ([`CudaCommand::launch`], from an owned copy).
//!
//! An interposer's hook builds a [`Launch`] from the application's arguments and submits it to
//! the stream's XQueue ([`baton_core::XQueue::submit_after`]; `hwqueue.rs` makes it a
//! submission to a [`crate::CudaHwQueue`]); the queue either launches it at once, here, or asks
//! for an owned [`CudaCommand`] to launch later, also here.

use std::cell::Cell;
use std::ffi::c_void;
use std::time::Instant;

use baton_cuda_sys::{CUdeviceptr, CUfunction, CUlaunchConfig, CUresult, CUstream};

use crate::{CudaCommand, Driver, DriverError, KernelArgs, MemsetWidth, ParamCache, check};

thread_local! {
    /// Time this thread spent in the driver's launch calls, for launches asked to be timed.
    static DRIVER_NS: Cell<u64> = const { Cell::new(0) };
}

/// Adds `ns` to the calling thread's driver time (a driver call timed elsewhere, such as one
/// passed straight through).
pub fn add_driver_ns(ns: u64) {
    DRIVER_NS.with(|d| d.set(d.get().saturating_add(ns)));
}

/// The time the calling thread spent in timed driver calls (see [`Launch::new`]) since the last
/// call, which starts it again: a profiler's way to tell the driver's share of a hook's time.
pub fn take_driver_ns() -> u64 {
    DRIVER_NS.with(|d| d.replace(0))
}

/// A `cuLaunchKernel` or `cuLaunchCooperativeKernel` call's arguments.
#[derive(Clone, Copy)]
pub struct KernelCall<'a> {
    /// The function (or a `CUkernel` passed as one).
    pub f: CUfunction,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
    /// Dynamic shared memory bytes.
    pub shared: u32,
    /// The application's `kernelParams`.
    pub params: *mut *mut c_void,
    /// The application's `extra` (null for a cooperative launch).
    pub extra: *mut *mut c_void,
    /// A cooperative launch.
    pub cooperative: bool,
    /// Where the function's parameter layout is found, should the arguments be copied.
    pub layouts: &'a ParamCache,
}

/// A `cuLaunchKernelEx` call's arguments.
#[derive(Clone, Copy)]
pub struct KernelExCall<'a> {
    /// The application's configuration (its `hStream` is replaced at the call).
    pub config: &'a CUlaunchConfig,
    /// The function.
    pub f: CUfunction,
    /// The application's `kernelParams`.
    pub params: *mut *mut c_void,
    /// The application's `extra`.
    pub extra: *mut *mut c_void,
    /// Its attributes ask for a cooperative launch.
    pub cooperative: bool,
    /// As for [`KernelCall`].
    pub layouts: &'a ParamCache,
}

/// What a [`Launch`] launches, borrowed from the hook's frame: a launch is a few words, cheap to
/// hand down.
#[derive(Clone, Copy)]
pub enum Op<'a> {
    /// `cuLaunchKernel` or `cuLaunchCooperativeKernel`.
    Kernel(&'a KernelCall<'a>),
    /// `cuLaunchKernelEx`.
    KernelEx(&'a KernelExCall<'a>),
    /// Any other operation, whose arguments are plain values (or host memory CUDA's contract
    /// keeps valid until the operation runs).
    Command(&'a CudaCommand),
}

/// One stream operation as the application called it: where it goes and what it is, its
/// arguments borrowed for the duration of the call. Launched at once, it copies nothing;
/// [`Launch::into_owned`] makes the copy a later launch needs.
#[derive(Clone, Copy)]
pub struct Launch<'a> {
    stream: CUstream,
    op: Op<'a>,
    timed: bool,
}

impl<'a> Launch<'a> {
    /// `op` for `stream` (the stream as the driver is to be given it); `timed` adds the
    /// driver call's duration to this thread's [`take_driver_ns`].
    ///
    /// # Safety
    /// `stream` is a live stream (or `CU_STREAM_LEGACY`) of the queue the launch is submitted
    /// to; the submitting thread has its context current; the pointers in `op` are valid as
    /// the CUDA driver API documents them for as long as the launch exists (the application's
    /// call it was made in).
    #[inline]
    pub unsafe fn new(stream: CUstream, op: Op<'a>, timed: bool) -> Launch<'a> {
        Launch { stream, op, timed }
    }

    /// Whether it is a kernel that may run on part of the SMs (not a cooperative one).
    #[inline]
    pub(crate) fn confinable(&self) -> bool {
        match self.op {
            Op::Kernel(k) => !k.cooperative,
            Op::KernelEx(k) => !k.cooperative,
            Op::Command(c) => c.confinable(),
        }
    }

    /// The stream the application's call named, as the driver knows it.
    #[inline]
    pub(crate) fn stream(&self) -> CUstream {
        self.stream
    }

    /// An owned copy to launch after the application's call returned, or the launch back when
    /// none can be made faithfully: kernel arguments whose layout the driver will not tell, or
    /// a copy from pageable host memory (which the application may reuse the moment its call
    /// returns).
    pub fn into_owned(self, d: &Driver) -> Result<CudaCommand, Launch<'a>> {
        let copied = match self.op {
            Op::Kernel(k) => {
                let layout = if k.params.is_null() {
                    None
                } else {
                    k.layouts.layout(d, k.f)
                };
                // SAFETY: `new`'s contract: the arguments are valid during the call.
                unsafe { KernelArgs::copy(layout, k.params, k.extra) }.map(|args| {
                    CudaCommand::Kernel {
                        f: k.f,
                        grid: k.grid,
                        block: k.block,
                        shared: k.shared,
                        args,
                        cooperative: k.cooperative,
                    }
                })
            }
            Op::KernelEx(k) => {
                let layout = if k.params.is_null() {
                    None
                } else {
                    k.layouts.layout(d, k.f)
                };
                // SAFETY: as above.
                unsafe { KernelArgs::copy(layout, k.params, k.extra) }.map(|args| {
                    let c = k.config;
                    let attrs = if c.attrs.is_null() || c.numAttrs == 0 {
                        Vec::new()
                    } else {
                        // SAFETY: `attrs` holds `numAttrs` attributes during the call.
                        unsafe { std::slice::from_raw_parts(c.attrs, c.numAttrs as usize) }.to_vec()
                    };
                    CudaCommand::KernelEx {
                        config: *c,
                        attrs,
                        f: k.f,
                        args,
                    }
                })
            }
            Op::Command(CudaCommand::Copy { src, .. }) if !d.is_driver_memory(*src) => None,
            Op::Command(CudaCommand::CopyHtoD { src, .. })
                if !d.is_driver_memory(src.0 as CUdeviceptr) =>
            {
                None
            }
            Op::Command(c) => Some(c.clone()),
        };
        copied.ok_or(self)
    }

    /// Calls the driver now, on the launch's stream, outside any queue (a stream recording into
    /// a graph, where nothing executes); the driver's status.
    pub fn outside_queue(self, d: &Driver) -> CUresult {
        // SAFETY: `new`'s contract; the launch's own stream.
        match unsafe { self.call(d, self.stream) } {
            Ok(()) => CUresult::SUCCESS,
            Err(e) => e.code,
        }
    }

    /// Calls the driver: the operation on `stream` (the launch's own stream, or the stream of
    /// the SM partition it is confined to).
    ///
    /// # Safety
    /// `stream` is the launch's stream or one ordered with it on the same device.
    #[inline]
    pub(crate) unsafe fn call(self, d: &Driver, stream: CUstream) -> Result<(), DriverError> {
        if self.timed {
            // SAFETY: the caller's contract.
            return unsafe { self.call_timed(d, stream) };
        }
        match self.op {
            // SAFETY: `new`'s contract and the caller's.
            Op::Kernel(k) => unsafe { kernel_call(d, k, stream) },
            Op::KernelEx(k) => {
                let mut c = *k.config;
                c.hStream = stream;
                // SAFETY: as above; `c` is the application's configuration on `stream`.
                unsafe { kernel_ex(d, &c, k.f, k.params, k.extra) }
            }
            // SAFETY: as above.
            Op::Command(c) => unsafe { c.launch(d, stream) },
        }
    }

    /// [`Launch::call`], its duration added to this thread's driver time. Out of line: the
    /// untimed path stays short.
    ///
    /// # Safety
    /// As for [`Launch::call`].
    #[inline(never)]
    unsafe fn call_timed(mut self, d: &Driver, stream: CUstream) -> Result<(), DriverError> {
        self.timed = false;
        let since = Instant::now();
        // SAFETY: the caller's contract.
        let r = unsafe { self.call(d, stream) };
        add_driver_ns(u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX));
        r
    }
}

/// `k` launched on `stream`, straight from the application's arguments.
///
/// # Safety
/// As for [`kernel`].
#[inline]
unsafe fn kernel_call(d: &Driver, k: &KernelCall<'_>, stream: CUstream) -> Result<(), DriverError> {
    // SAFETY: the caller's contract.
    unsafe {
        kernel(
            d,
            k.f,
            k.grid,
            k.block,
            k.shared,
            stream,
            k.params,
            k.extra,
            k.cooperative,
        )
    }
}

/// `cuLaunchKernel`, or `cuLaunchCooperativeKernel` (which takes no `extra`).
///
/// # Safety
/// The driver API's contract for these functions, on a stream of a context current here.
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn kernel(
    d: &Driver,
    f: CUfunction,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
    stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    cooperative: bool,
) -> Result<(), DriverError> {
    let [gx, gy, gz] = grid;
    let [bx, by, bz] = block;
    if cooperative {
        let call = Driver::require(d.cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel")?;
        // SAFETY: the caller's contract.
        let r = unsafe { call(f, gx, gy, gz, bx, by, bz, shared, stream, params) };
        return check("cuLaunchCooperativeKernel", r);
    }
    let call = Driver::require(d.cuLaunchKernel, "cuLaunchKernel")?;
    // SAFETY: the caller's contract.
    let r = unsafe { call(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra) };
    check("cuLaunchKernel", r)
}

/// `cuLaunchKernelEx` with `config` (its stream and attributes set).
///
/// # Safety
/// As for [`kernel`].
unsafe fn kernel_ex(
    d: &Driver,
    config: &CUlaunchConfig,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> Result<(), DriverError> {
    let call = Driver::require(d.cuLaunchKernelEx, "cuLaunchKernelEx")?;
    // SAFETY: the caller's contract.
    check("cuLaunchKernelEx", unsafe {
        call(config, f, params, extra)
    })
}

impl CudaCommand {
    /// Launches the command on `stream` (a real stream handle or `CU_STREAM_LEGACY`).
    ///
    /// # Safety
    /// `stream` must be a live stream (or `CU_STREAM_LEGACY`) of a context current on this
    /// thread, and the handles and host pointers in the command must still be valid, as the
    /// application that issued it promised CUDA.
    pub unsafe fn launch(&self, d: &Driver, stream: CUstream) -> Result<(), DriverError> {
        // SAFETY (for every call below): the handles and pointers are those the application
        // passed to the driver, kept valid by CUDA's contract; owned copies live until the call
        // returns; the entry point has the signature its type states.
        match *self {
            CudaCommand::Kernel {
                f,
                grid,
                block,
                shared,
                ref args,
                cooperative,
            } => args.with_pointers(|kp, extra| {
                // SAFETY: see above; the pointers lead into `args`, alive during the call.
                unsafe { kernel(d, f, grid, block, shared, stream, kp, extra, cooperative) }
            }),
            CudaCommand::KernelEx {
                mut config,
                ref attrs,
                f,
                ref args,
            } => {
                config.hStream = stream;
                config.numAttrs = u32::try_from(attrs.len()).unwrap_or(u32::MAX);
                // The driver only reads the attributes.
                config.attrs = if attrs.is_empty() {
                    std::ptr::null_mut()
                } else {
                    attrs.as_ptr().cast_mut()
                };
                // SAFETY: see above; `config.attrs` points into `attrs`, alive here.
                args.with_pointers(|kp, extra| unsafe { kernel_ex(d, &config, f, kp, extra) })
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
