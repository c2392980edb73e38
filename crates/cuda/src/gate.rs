//! Level 2 for CUDA streams: a gate in front of every command.
//!
//! The gate is a 32-bit word in pinned host memory that the GPU can read. Before each command
//! Baton puts `cuStreamWaitValue32(word ≥ 1)` in the stream; the GPU front-end starts nothing
//! behind it while the word is 0. `close` stores 0, `open` stores 1: suspension then stops the
//! device after at most the command already running, and nothing is re-launched on resume
//! (every command stays queued in order). The XQueue reopens a closed gate while another queue
//! waits for one of its commands to complete, so no wait on the device can hang on it.

use std::sync::atomic::{AtomicU32, Ordering};

use baton_cuda_sys::{
    CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE, CU_STREAM_WAIT_VALUE_GEQ, CUcontext,
    CUdeviceptr, CUstream,
};

use crate::{Driver, DriverError, check};

/// One queue's gate. See the module documentation.
pub struct Gate {
    driver: &'static Driver,
    /// Pinned, device-mapped; never freed (see `Drop`).
    host: *mut AtomicU32,
    device: CUdeviceptr,
}

// SAFETY: the word is pinned host memory owned by the gate and only accessed atomically; the
// device pointer is a plain address usable from any thread.
unsafe impl Send for Gate {}
// SAFETY: as above.
unsafe impl Sync for Gate {}

impl Gate {
    /// Allocates an open gate in `ctx`.
    ///
    /// # Safety
    /// `ctx` is a live context of `driver`.
    pub unsafe fn new(driver: &'static Driver, ctx: CUcontext) -> Result<Gate, DriverError> {
        let alloc = Driver::require(driver.cuMemHostAlloc, "cuMemHostAlloc")?;
        Driver::require(driver.cuStreamWaitValue32_v2, "cuStreamWaitValue32_v2")?;
        let push = Driver::require(driver.cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2")?;
        let pop = Driver::require(driver.cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2")?;
        let mut p = std::ptr::null_mut();
        // SAFETY: `ctx` is live (the caller's promise); push/pop are balanced; `p` is a valid
        // out-pointer; 4 bytes of pinned memory.
        let r = unsafe {
            check("cuCtxPushCurrent", push(ctx))?;
            let r = check(
                "cuMemHostAlloc",
                alloc(
                    &mut p,
                    4,
                    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP,
                ),
            );
            let mut old = std::ptr::null_mut();
            let _ = pop(&mut old);
            r
        };
        r?;
        let host = p.cast::<AtomicU32>();
        // SAFETY: freshly allocated, 4 bytes, suitably aligned (page-aligned allocation).
        unsafe { (*host).store(1, Ordering::Release) };
        let mut device: CUdeviceptr = p as usize as CUdeviceptr;
        if let Some(get) = driver.cuMemHostGetDevicePointer_v2 {
            // SAFETY: `p` is mapped pinned memory of this driver; `device` a valid out-pointer.
            // Without unified addressing the device address differs; with it, they are equal.
            let _ = unsafe { get(&mut device, p, 0) };
        }
        Ok(Gate {
            driver,
            host,
            device,
        })
    }

    /// Lets the stream's commands start.
    pub fn open(&self) {
        // SAFETY: the word lives as long as the gate.
        unsafe { (*self.host).store(1, Ordering::Release) };
    }

    /// Stops the stream at its next gate.
    pub fn close(&self) {
        // SAFETY: as above.
        unsafe { (*self.host).store(0, Ordering::Release) };
    }

    /// Whether it is open.
    pub fn is_open(&self) -> bool {
        // SAFETY: as above.
        unsafe { (*self.host).load(Ordering::Acquire) != 0 }
    }

    /// Puts the gate in front of the next command of `stream`.
    ///
    /// # Safety
    /// `stream` is a live stream of the gate's context (the queue's own).
    pub unsafe fn wait_on(&self, stream: CUstream) -> Result<(), DriverError> {
        let wait = Driver::require(self.driver.cuStreamWaitValue32_v2, "cuStreamWaitValue32_v2")?;
        // SAFETY: the caller's live stream and the gate's device address.
        check("cuStreamWaitValue32", unsafe {
            wait(stream, self.device, 1, CU_STREAM_WAIT_VALUE_GEQ)
        })
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        // A destroyed stream's queued commands still run, each behind a wait that reads the
        // word: it is left open and never freed (4 bytes of pinned memory per stream).
        self.open();
    }
}
