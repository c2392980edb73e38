//! Reusable events: the sync points of CUDA queues.

use std::sync::{Arc, Mutex};

use baton_core::locks;
use baton_cuda_sys::{CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING, CUcontext, CUevent};

use crate::{Driver, DriverError, check};

/// Events of one context, created on demand and reused. Events wait by blocking (not
/// spinning) and carry no timing, the cheapest kind to record.
pub struct EventPool {
    driver: &'static Driver,
    ctx: CUcontext,
    free: Mutex<Vec<CUevent>>,
    /// Events handed out so far (each one a sync point).
    handed: std::sync::atomic::AtomicU64,
}

// SAFETY: CUDA contexts and events may be used from any thread; the free list is behind a mutex.
unsafe impl Send for EventPool {}
// SAFETY: as above.
unsafe impl Sync for EventPool {}

/// An event on loan from a pool; it goes back when dropped.
pub struct PooledEvent {
    event: CUevent,
    pool: Arc<EventPool>,
}

// SAFETY: a CUDA event handle may be used from any thread.
unsafe impl Send for PooledEvent {}
// SAFETY: as above; the handle is only read.
unsafe impl Sync for PooledEvent {}

impl EventPool {
    /// A pool for `ctx`.
    pub fn new(driver: &'static Driver, ctx: CUcontext) -> Arc<EventPool> {
        Arc::new(EventPool {
            driver,
            ctx,
            free: Mutex::new(Vec::new()),
            handed: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// How many events were handed out so far.
    pub fn handed_out(&self) -> u64 {
        self.handed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// An event, reused or newly created (in the pool's context, whatever is current).
    pub fn get(self: &Arc<Self>) -> Result<PooledEvent, DriverError> {
        self.handed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let reused = locks::lock(&self.free).pop();
        let event = match reused {
            Some(e) => e,
            None => self.create()?,
        };
        Ok(PooledEvent {
            event,
            pool: Arc::clone(self),
        })
    }

    fn create(&self) -> Result<CUevent, DriverError> {
        let d = self.driver;
        let push = Driver::require(d.cuCtxPushCurrent_v2, "cuCtxPushCurrent_v2")?;
        let pop = Driver::require(d.cuCtxPopCurrent_v2, "cuCtxPopCurrent_v2")?;
        let create = Driver::require(d.cuEventCreate, "cuEventCreate")?;
        let mut ev: CUevent = std::ptr::null_mut();
        // SAFETY: `ctx` is a live context (the pool's owner keeps it alive); push and pop are
        // balanced; `ev` is a valid out-pointer.
        unsafe {
            check("cuCtxPushCurrent_v2", push(self.ctx))?;
            let r = create(&mut ev, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC);
            let mut old = std::ptr::null_mut();
            let _ = pop(&mut old);
            check("cuEventCreate", r)?;
        }
        Ok(ev)
    }
}

impl Drop for EventPool {
    fn drop(&mut self) {
        if let Some(destroy) = self.driver.cuEventDestroy_v2 {
            for e in locks::get_mut(&mut self.free).drain(..) {
                // SAFETY: the event came from cuEventCreate and no PooledEvent refers to it
                // (they hold the pool alive); destroying is allowed from any thread.
                let _ = unsafe { destroy(e) };
            }
        }
    }
}

impl PooledEvent {
    /// The event handle.
    pub fn handle(&self) -> CUevent {
        self.event
    }
}

impl Drop for PooledEvent {
    fn drop(&mut self) {
        locks::lock(&self.pool.free).push(self.event);
    }
}
