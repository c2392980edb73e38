//! Spatial sharing for CUDA streams: a stream's kernels confined to part of the GPU's SMs.
//!
//! An [`SmPartition`] is a green context over `n` of the device's SMs. Kernels of the
//! application's primary context run on a green context's stream as they are: the runtime's
//! `<<<>>>` launch, its `CUfunction` and its `CUkernel` all do, on the partition's SMs only
//! (measured on an H100, `scripts/gpu/spatial/green_probe.cu`). A [`Confined`] stream keeps the
//! application's order with two events: `enter`, recorded on the application's stream and
//! waited for by the green stream before the kernel; `leave`, recorded on the green stream
//! after it and waited for by the application's stream. Everything else (copies, event
//! records, synchronization) stays on the application's stream, which therefore sees each
//! kernel exactly where the application put it.

use std::sync::Mutex;

use baton_core::locks;
use baton_cuda_sys::{
    CU_DEV_RESOURCE_TYPE_SM, CU_EVENT_DISABLE_TIMING, CU_GREEN_CTX_DEFAULT_STREAM,
    CU_STREAM_NON_BLOCKING, CUcontext, CUdevResource, CUdevice, CUevent, CUgreenCtx, CUresult,
    CUstream,
};

use crate::{Driver, DriverError, check};

/// A green context over part of a device's SMs. See the module documentation.
pub struct SmPartition {
    driver: &'static Driver,
    green: CUgreenCtx,
    sms: u32,
    device_sms: u32,
}

// SAFETY: a green context handle may be used from any thread; streams are created on it with
// the driver's own synchronization.
unsafe impl Send for SmPartition {}
// SAFETY: as above; the partition has no interior state.
unsafe impl Sync for SmPartition {}

/// `device`'s SMs as one resource, as green contexts see them.
///
/// # Safety
/// `device` is a device of `driver`.
unsafe fn device_sms(
    driver: &'static Driver,
    device: CUdevice,
) -> Result<CUdevResource, DriverError> {
    let get = Driver::require(driver.cuDeviceGetDevResource, "cuDeviceGetDevResource")?;
    let mut all = CUdevResource::default();
    // SAFETY: `all` is a valid out-pointer, larger than the driver's struct.
    check("cuDeviceGetDevResource", unsafe {
        get(device, &mut all, CU_DEV_RESOURCE_TYPE_SM)
    })?;
    Ok(all)
}

impl SmPartition {
    /// How many SMs `device` has, as green contexts count them.
    ///
    /// # Safety
    /// `device` is a device of `driver`.
    pub unsafe fn device_sm_count(
        driver: &'static Driver,
        device: CUdevice,
    ) -> Result<u32, DriverError> {
        // SAFETY: the caller's promise.
        unsafe { device_sms(driver, device) }.map(|all| all.sm_count)
    }

    /// A green context over at least `sms` of `device`'s SMs (the driver rounds up to its
    /// granularity, 8 on Hopper; [`SmPartition::sms`] says how many it gave). Fails if the
    /// device cannot keep any SM outside it, or the driver has no green contexts.
    ///
    /// # Safety
    /// `device` is a device of `driver`, whose primary context is active (the green context
    /// retains it).
    pub unsafe fn new(
        driver: &'static Driver,
        device: CUdevice,
        sms: u32,
    ) -> Result<SmPartition, DriverError> {
        let split = Driver::require(
            driver.cuDevSmResourceSplitByCount,
            "cuDevSmResourceSplitByCount",
        )?;
        let desc = Driver::require(
            driver.cuDevResourceGenerateDesc,
            "cuDevResourceGenerateDesc",
        )?;
        let create = Driver::require(driver.cuGreenCtxCreate, "cuGreenCtxCreate")?;
        Driver::require(driver.cuGreenCtxStreamCreate, "cuGreenCtxStreamCreate")?;
        // SAFETY: the caller's promise.
        let all = unsafe { device_sms(driver, device) }?;
        if sms == 0 || sms >= all.sm_count {
            return Err(DriverError {
                code: CUresult::INVALID_VALUE,
                call: "cuDevSmResourceSplitByCount (the partition must leave some of the device's SMs free)",
            });
        }
        let mut group = CUdevResource::default();
        let mut rest = CUdevResource::default();
        let mut groups = 1u32;
        // SAFETY: one-element result array (`groups` = 1), valid input and remainder.
        check("cuDevSmResourceSplitByCount", unsafe {
            split(&mut group, &mut groups, &all, &mut rest, 0, sms)
        })?;
        if groups != 1 || group.sm_count >= all.sm_count {
            return Err(DriverError {
                code: CUresult::INVALID_VALUE,
                call: "cuDevSmResourceSplitByCount (no partition leaving SMs free)",
            });
        }
        let mut d = std::ptr::null_mut();
        // SAFETY: one resource, produced by the driver above.
        check("cuDevResourceGenerateDesc", unsafe {
            desc(&mut d, &mut group, 1)
        })?;
        let mut green = std::ptr::null_mut();
        // SAFETY: `d` is the driver's descriptor; `green` a valid out-pointer.
        check("cuGreenCtxCreate", unsafe {
            create(&mut green, d, device, CU_GREEN_CTX_DEFAULT_STREAM)
        })?;
        Ok(SmPartition {
            driver,
            green,
            sms: group.sm_count,
            device_sms: all.sm_count,
        })
    }

    /// SMs in the partition.
    pub fn sms(&self) -> u32 {
        self.sms
    }

    /// SMs of the whole device.
    pub fn device_sms(&self) -> u32 {
        self.device_sms
    }

    /// A stream of the partition for the application's stream of context `ctx` with CUDA
    /// priority `priority`.
    ///
    /// # Safety
    /// `ctx` is the live primary context of the partition's device.
    pub unsafe fn confine(
        self: &std::sync::Arc<Self>,
        ctx: CUcontext,
        priority: i32,
    ) -> Result<Confined, DriverError> {
        let d = self.driver;
        let create = Driver::require(d.cuGreenCtxStreamCreate, "cuGreenCtxStreamCreate")?;
        let event = Driver::require(d.cuEventCreate, "cuEventCreate")?;
        let push = Driver::require(d.cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2")?;
        let pop = Driver::require(d.cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2")?;
        Driver::require(d.cuEventRecord, "cuEventRecord")?;
        Driver::require(d.cuStreamWaitEvent, "cuStreamWaitEvent")?;
        let mut stream = std::ptr::null_mut();
        // SAFETY: the partition's live green context; a valid out-pointer.
        check("cuGreenCtxStreamCreate", unsafe {
            create(&mut stream, self.green, CU_STREAM_NON_BLOCKING, priority)
        })?;
        let mut enter = std::ptr::null_mut();
        let mut leave = std::ptr::null_mut();
        // SAFETY: `ctx` is live (the caller's promise); push and pop are balanced; the events
        // are valid out-pointers.
        let r = unsafe {
            check("cuCtxPushCurrent", push(ctx))?;
            let r = check("cuEventCreate", event(&mut enter, CU_EVENT_DISABLE_TIMING))
                .and_then(|()| check("cuEventCreate", event(&mut leave, CU_EVENT_DISABLE_TIMING)));
            let mut old = std::ptr::null_mut();
            let _ = pop(&mut old);
            r
        };
        let c = Confined {
            part: self.clone(),
            stream,
            enter,
            leave,
            lock: Mutex::new(()),
        };
        r.map(|()| c)
    }
}

impl Drop for SmPartition {
    fn drop(&mut self) {
        if let Some(destroy) = self.driver.cuGreenCtxDestroy {
            // SAFETY: the last user of the green context; its streams were destroyed before
            // (each `Confined` holds the partition).
            let _ = unsafe { destroy(self.green) };
        }
    }
}

/// One application stream's kernels on an [`SmPartition`]. See the module documentation.
pub struct Confined {
    part: std::sync::Arc<SmPartition>,
    stream: CUstream,
    enter: CUevent,
    leave: CUevent,
    /// One chain at a time: the two events are reused.
    lock: Mutex<()>,
}

// SAFETY: stream and event handles may be used from any thread; the chain is serialized.
unsafe impl Send for Confined {}
// SAFETY: as above.
unsafe impl Sync for Confined {}

impl Confined {
    /// SMs the kernels run on.
    pub fn sms(&self) -> u32 {
        self.part.sms
    }

    /// Runs `launch` (a kernel launch onto the stream it is given) on the partition, after
    /// everything already on `app` and before everything put on `app` afterwards.
    ///
    /// # Safety
    /// `app` is the live application stream this was made for (or its stand-in handle), used
    /// from a thread with its context current.
    pub unsafe fn launch(
        &self,
        app: CUstream,
        launch: impl FnOnce(CUstream) -> Result<(), DriverError>,
    ) -> Result<(), DriverError> {
        let d = self.part.driver;
        let record = Driver::require(d.cuEventRecord, "cuEventRecord")?;
        let wait = Driver::require(d.cuStreamWaitEvent, "cuStreamWaitEvent")?;
        let _one = locks::lock(&self.lock);
        // SAFETY: live events of the application's context and live streams; a wait takes the
        // event's state at the call, so each event can be recorded again right after.
        unsafe {
            check("cuEventRecord", record(self.enter, app))?;
            check("cuStreamWaitEvent", wait(self.stream, self.enter, 0))?;
            launch(self.stream)?;
            check("cuEventRecord", record(self.leave, self.stream))?;
            check("cuStreamWaitEvent", wait(app, self.leave, 0))
        }
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        let d = self.part.driver;
        // SAFETY: handles this value created; destroying a stream or event with work pending
        // is allowed (the driver releases them when the work is done).
        unsafe {
            if let Some(destroy) = d.cuStreamDestroy_v2 {
                let _ = destroy(self.stream);
            }
            if let Some(destroy) = d.cuEventDestroy_v2 {
                let _ = destroy(self.enter);
                let _ = destroy(self.leave);
            }
        }
    }
}
