//! The probes' kernels and the context and stream they run on.

use std::ffi::{CStr, c_uint, c_void};

use baton_cuda_sys::{CUcontext, CUdevice, CUevent, CUfunction, CUmodule, CUresult, CUstream};

use super::error::{ProbeError, ck, need};
use crate::Driver;

/// Two kernels: `baton_spin` spins on the GPU's global timer for its argument, in ns (a
/// kernel switched out still ends on time: right for latency, wrong for throughput);
/// `baton_work` runs a dependent chain of `iters` multiply-adds (a fixed amount of work).
const SPIN_PTX: &str = "
.version 7.0
.target sm_70
.address_size 64

.visible .entry baton_spin(.param .u64 baton_spin_ns)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [baton_spin_ns];
    mov.u64 %rd2, %globaltimer;
$Lspin:
    mov.u64 %rd3, %globaltimer;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $Lspin;
    ret;
}

.visible .entry baton_work(.param .u64 baton_work_iters)
{
    .reg .pred %p<3>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [baton_work_iters];
    mov.u64 %rd2, 0;
    mov.f32 %f1, 0f3F800000;
$Lwork:
    fma.rn.f32 %f1, %f1, 0f3F7FFFFF, 0f3A83126F;
    add.u64 %rd2, %rd2, 1;
    setp.lt.u64 %p1, %rd2, %rd1;
    @%p1 bra $Lwork;
    setp.eq.f32 %p2, %f1, 0f47C35000;
    @%p2 trap;
    ret;
}
\0";

/// A context probes run in: a device's primary context, retained and never released.
#[derive(Clone, Copy)]
pub struct Context {
    driver: &'static Driver,
    device: CUdevice,
    raw: CUcontext,
}

impl Context {
    /// Initializes the driver and retains device `ordinal`'s primary context.
    pub fn primary(driver: &'static Driver, ordinal: i32) -> Result<Context, ProbeError> {
        let mut device: CUdevice = 0;
        let mut raw: CUcontext = std::ptr::null_mut();
        // SAFETY: valid out-pointers; flags 0.
        unsafe {
            ck("cuInit", need(driver.cuInit, "cuInit")?(0))?;
            ck(
                "cuDeviceGet",
                need(driver.cuDeviceGet, "cuDeviceGet")?(&mut device, ordinal),
            )?;
            ck(
                "cuDevicePrimaryCtxRetain",
                need(driver.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")?(
                    &mut raw, device,
                ),
            )?;
        }
        Ok(Context {
            driver,
            device,
            raw,
        })
    }

    /// A new (non-primary) context on this context's device, never destroyed.
    pub(super) fn create_another(&self) -> Result<Context, ProbeError> {
        let mut raw: CUcontext = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; flags 0; the device was returned by the driver.
        ck("cuCtxCreate", unsafe {
            need(self.driver.cuCtxCreate_v2, "cuCtxCreate_v2")?(&mut raw, 0, self.device)
        })?;
        Ok(Context { raw, ..*self })
    }

    /// The driver it belongs to.
    pub fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// Its device.
    pub fn device(&self) -> CUdevice {
        self.device
    }

    /// The driver's handle (live for the process's lifetime).
    pub fn raw(&self) -> CUcontext {
        self.raw
    }

    /// Makes the context current, loads `ptx` (NUL-terminated) and finds its kernels
    /// `names`; also creates a non-blocking stream.
    pub(super) fn load<const N: usize>(
        &self,
        ptx: &str,
        names: [&CStr; N],
    ) -> Result<([CUfunction; N], CUstream), ProbeError> {
        let d = self.driver;
        let set = need(d.cuCtxSetCurrent, "cuCtxSetCurrent")?;
        let load = need(d.cuModuleLoadData, "cuModuleLoadData")?;
        let get = need(d.cuModuleGetFunction, "cuModuleGetFunction")?;
        let create = need(d.cuStreamCreate, "cuStreamCreate")?;
        if !ptx.ends_with('\0') {
            return Err(ProbeError::PtxNotTerminated);
        }
        let mut module: CUmodule = std::ptr::null_mut();
        let mut funcs: [CUfunction; N] = [std::ptr::null_mut(); N];
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: a live context; valid out-pointers; the PTX text is NUL-terminated (checked
        // above) and the names are C strings.
        unsafe {
            ck("cuCtxSetCurrent", set(self.raw))?;
            ck("cuModuleLoadData", load(&mut module, ptx.as_ptr().cast()))?;
            for (f, name) in funcs.iter_mut().zip(names) {
                ck("cuModuleGetFunction", get(f, module, name.as_ptr()))?;
            }
            ck("cuStreamCreate", create(&mut stream, 1))?;
        }
        Ok((funcs, stream))
    }
}

/// The `spin` and `work` kernels loaded in a [`Context`], with a non-blocking stream of that
/// context to launch them on.
pub struct Kernels {
    context: Context,
    spin: CUfunction,
    work: CUfunction,
    stream: CUstream,
}

impl Kernels {
    /// Loads the kernels in `context` and creates their stream.
    pub fn load(context: &Context) -> Result<Kernels, ProbeError> {
        let ([spin, work], stream) = context.load(SPIN_PTX, [c"baton_spin", c"baton_work"])?;
        Ok(Kernels {
            context: *context,
            spin,
            work,
            stream,
        })
    }

    /// Their context.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Their stream (live for the process's lifetime).
    pub fn stream(&self) -> CUstream {
        self.stream
    }

    /// Launches the spin kernel for `ns` on `grid` blocks of `block` threads.
    pub fn spin(&self, ns: u64, grid: c_uint, block: c_uint) -> Result<(), ProbeError> {
        self.launch(self.spin, ns, grid, block)
    }

    /// Launches the work kernel for `iters` multiply-adds per thread.
    pub fn work(&self, iters: u64, grid: c_uint, block: c_uint) -> Result<(), ProbeError> {
        self.launch(self.work, iters, grid, block)
    }

    fn launch(
        &self,
        f: CUfunction,
        arg: u64,
        grid: c_uint,
        block: c_uint,
    ) -> Result<(), ProbeError> {
        let d = self.context.driver;
        let set = need(d.cuCtxSetCurrent, "cuCtxSetCurrent")?;
        let launch = need(d.cuLaunchKernel, "cuLaunchKernel")?;
        let mut arg = arg;
        let mut params = [(&mut arg as *mut u64).cast::<c_void>()];
        // SAFETY: the function and stream belong to the context; the parameter array holds
        // one pointer to a u64, the kernel's one parameter, live for the call.
        unsafe {
            ck("cuCtxSetCurrent", set(self.context.raw))?;
            ck(
                "cuLaunchKernel",
                launch(
                    f,
                    grid,
                    1,
                    1,
                    block,
                    1,
                    1,
                    0,
                    self.stream,
                    params.as_mut_ptr(),
                    std::ptr::null_mut(),
                ),
            )
        }
    }

    /// Waits for everything launched on the stream.
    pub fn sync(&self) -> Result<(), ProbeError> {
        let sync = need(
            self.context.driver.cuStreamSynchronize,
            "cuStreamSynchronize",
        )?;
        // SAFETY: a live stream.
        ck("cuStreamSynchronize", unsafe { sync(self.stream) })
    }

    /// Whether the stream still has work that has not completed (`cuStreamQuery` answers
    /// `CUDA_ERROR_NOT_READY`).
    pub fn busy(&self) -> Result<bool, ProbeError> {
        let query = need(self.context.driver.cuStreamQuery, "cuStreamQuery")?;
        // SAFETY: a live stream.
        Ok(unsafe { query(self.stream) } == CUresult::NOT_READY)
    }

    /// `n` events to record on the stream in turn, never destroyed.
    pub fn event_ring(&self, n: usize) -> Result<EventRing<'_>, ProbeError> {
        let d = self.context.driver;
        let create = need(d.cuEventCreate, "cuEventCreate")?;
        need(d.cuEventRecord, "cuEventRecord")?;
        need(d.cuEventSynchronize, "cuEventSynchronize")?;
        let mut events: Vec<CUevent> = vec![std::ptr::null_mut(); n];
        for e in &mut events {
            // SAFETY: a valid out-pointer; flag 2 = CU_EVENT_DISABLE_TIMING.
            ck("cuEventCreate", unsafe { create(e, 2) })?;
        }
        Ok(EventRing {
            kernels: self,
            events,
        })
    }
}

/// Events recorded in turn on a [`Kernels`] stream, to keep a bounded number of launches
/// outstanding: wait for slot `k % n`, launch, record slot `k % n`.
pub struct EventRing<'k> {
    kernels: &'k Kernels,
    events: Vec<CUevent>,
}

impl EventRing<'_> {
    /// How many slots there are.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Records slot `slot` (below [`EventRing::len`]) after everything launched so far.
    ///
    /// # Panics
    /// If `slot` is out of range.
    pub fn record(&self, slot: usize) -> Result<(), ProbeError> {
        let record = need(self.kernels.context.driver.cuEventRecord, "cuEventRecord")?;
        // SAFETY: a live event and stream.
        ck("cuEventRecord", unsafe {
            record(self.events[slot], self.kernels.stream)
        })
    }

    /// Waits until what slot `slot` was last recorded after has completed.
    ///
    /// # Panics
    /// If `slot` is out of range.
    pub fn wait(&self, slot: usize) -> Result<(), ProbeError> {
        let wait = need(
            self.kernels.context.driver.cuEventSynchronize,
            "cuEventSynchronize",
        )?;
        // SAFETY: a live event.
        ck("cuEventSynchronize", unsafe { wait(self.events[slot]) })
    }
}
