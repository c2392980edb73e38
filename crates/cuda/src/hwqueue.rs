//! The CUDA hardware queue: one stream, at Level 1, and at Level 3 when its context's channel
//! group is under Baton's control ([`ContextSlice`]), and at Level 2 with a [`Gate`]. Its
//! kernels may be confined to part of the SMs ([`Confined`]).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use baton_core::locks;
use baton_core::{HwError, HwQueue, Level, Submission};
use baton_cuda_sys::{
    CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_LEGACY, CUcontext, CUresult, CUstream,
    CUstreamCaptureStatus,
};

use crate::gate::Gate;
use crate::green::Confined;
use crate::rm::{ContextSlice, SliceRole};
use crate::{CudaCommand, Driver, DriverError, EventPool, Launch, PooledEvent, check};

thread_local! {
    static LAUNCH_WORKER: Cell<bool> = const { Cell::new(false) };
}

/// Counts stream captures in progress in the process. While one runs, application threads must
/// not make "unsafe" driver calls such as event queries (CUDA would fail them and invalidate the
/// capture), so the queues leave completion tracking to their launch workers, which run in
/// relaxed capture mode; and no thread may query, synchronize or record into a stream that
/// records into a graph, nor use the legacy stream (see `CudaHwQueue::recording`).
#[derive(Debug, Default)]
pub struct CaptureGate {
    active: AtomicUsize,
}

impl CaptureGate {
    /// A capture began.
    pub fn begin(&self) {
        self.active.fetch_add(1, Ordering::AcqRel);
    }

    /// A capture ended (or failed to begin after `begin`).
    pub fn end(&self) {
        let _ = self
            .active
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Whether any capture is in progress.
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Acquire) > 0
    }
}

/// One CUDA stream as an XQueue's hardware queue.
#[repr(C)]
pub struct CudaHwQueue {
    /// No Level-2 gate and no SM confinement: a launch is just the driver call. First, so a
    /// launch reads one cache line of the queue.
    plain: bool,
    driver: &'static Driver,
    ctx: CUcontext,
    stream: CUstream,
    /// `stream` is the legacy default stream.
    legacy: bool,
    pool: Arc<EventPool>,
    gate: Arc<CaptureGate>,
    /// The context's time slice (Level 3), if Baton controls it.
    slice: Option<Arc<ContextSlice>>,
    /// The stream's gate (Level 2), if it has one.
    gate_l2: Option<Gate>,
    /// What its context's time slice depends on.
    l3: Mutex<L3State>,
    /// Where its kernels run when confined to part of the SMs.
    confined: Option<Confined>,
    /// Whether `confined` applies only while the queue is preemptible (a more urgent queue
    /// exists), and whether it is now; `None`: always.
    confine_while_preemptible: Option<AtomicBool>,
    /// Kernels launched confined.
    confined_kernels: AtomicUsize,
    /// Sync points recorded on this stream (its program's own events not counted).
    sync_points: AtomicU64,
}

/// What a queue's context's time slice depends on (Level 3).
#[derive(Clone, Copy, Debug)]
struct L3State {
    /// Suspended at Level 3.
    interrupted: bool,
    /// A more urgent queue may suspend it.
    preemptible: bool,
    /// It outranks other work on its device.
    leading: bool,
}

impl L3State {
    /// Its role for the slice: it runs freely when neither interrupted nor preemptible.
    fn role(self) -> SliceRole {
        SliceRole {
            running: !self.interrupted && !self.preemptible,
            leading: self.leading,
        }
    }
}

// SAFETY: CUDA contexts and streams may be used from any thread.
unsafe impl Send for CudaHwQueue {}

// SAFETY: as above; the queue holds no interior state besides thread-safe pools.
unsafe impl Sync for CudaHwQueue {}

/// An application's launch, submitted to its stream's queue: launched at once from the
/// application's thread, or copied for a later launch (see `launch.rs`).
impl Submission<CudaHwQueue> for Launch<'_> {
    #[inline]
    fn launch(self, hw: &CudaHwQueue) -> Result<(), HwError> {
        hw.launch_now(self)
    }

    fn into_command(self, hw: &CudaHwQueue) -> Result<CudaCommand, Self> {
        self.into_owned(hw.driver)
    }
}

impl CudaHwQueue {
    /// A queue launching onto `stream` (a real stream or `CU_STREAM_LEGACY`) of `ctx`.
    pub fn new(
        driver: &'static Driver,
        ctx: CUcontext,
        stream: CUstream,
        pool: Arc<EventPool>,
        gate: Arc<CaptureGate>,
    ) -> CudaHwQueue {
        CudaHwQueue {
            plain: true,
            driver,
            ctx,
            stream,
            legacy: stream == CU_STREAM_LEGACY || stream.is_null(),
            pool,
            gate,
            slice: None,
            gate_l2: None,
            l3: Mutex::new(L3State {
                interrupted: false,
                preemptible: true,
                leading: false,
            }),
            confined: None,
            confine_while_preemptible: None,
            confined_kernels: AtomicUsize::new(0),
            sync_points: AtomicU64::new(0),
        }
    }

    /// Gives the queue Level 3 through its context's time slice. It starts preemptible, as
    /// an XQueue does, so it does not hold the context's slice until a scheduler says nothing
    /// can suspend it.
    pub fn with_slice(mut self, slice: Arc<ContextSlice>) -> CudaHwQueue {
        slice.attach(false);
        self.slice = Some(slice);
        self
    }

    /// Gives the queue Level 2: a gate in front of every command it launches (see
    /// [`Gate`]).
    pub fn with_gate(mut self, gate: Gate) -> CudaHwQueue {
        self.gate_l2 = Some(gate);
        self.plain = false;
        self
    }

    /// Opens the queue's Level-2 gate at once, without its XQueue's lock: for a thread about to
    /// wait on the device inside the driver while that lock may be held by a launch blocked
    /// there too. The queue's launched commands then run; its XQueue closes the gate again at
    /// its next suspension.
    pub fn force_gate_open(&self) {
        if let Some(g) = &self.gate_l2 {
            g.open();
        }
    }

    /// Confines the queue's kernels (except cooperative ones, which need the whole device)
    /// to part of the SMs.
    pub fn with_confinement(mut self, c: Confined) -> CudaHwQueue {
        self.confined = Some(c);
        self.plain = false;
        self
    }

    /// Confines the queue's kernels (except cooperative ones) to part of the SMs while the
    /// queue is preemptible, that is while a scheduler may suspend it because more urgent work
    /// exists ([`HwQueue::set_preemptible`]); otherwise they use the whole GPU. It starts
    /// preemptible, as an XQueue does. Switching is safe at any kernel: a confined kernel is
    /// ordered on the application's stream by its two events, an unconfined one is on it.
    pub fn with_confinement_while_preemptible(mut self, c: Confined) -> CudaHwQueue {
        self.confine_while_preemptible = Some(AtomicBool::new(true));
        self.with_confinement(c)
    }

    /// Whether the queue's kernels are confined now (if it has a partition at all).
    fn confining(&self) -> bool {
        self.confine_while_preemptible
            .as_ref()
            .is_none_or(|now| now.load(Ordering::Relaxed))
    }

    /// SMs the queue's kernels are confined to, if they are.
    pub fn confined_sms(&self) -> Option<u32> {
        self.confined.as_ref().map(Confined::sms)
    }

    /// Kernels launched confined so far.
    pub fn confined_kernels(&self) -> usize {
        self.confined_kernels.load(Ordering::Relaxed)
    }

    /// Sync points recorded on this stream so far: how often it kept its launch window.
    pub fn sync_points(&self) -> u64 {
        self.sync_points.load(Ordering::Relaxed)
    }

    /// What must reach `stream` before each command: the gate, at Level 2.
    fn gate_before(&self, stream: CUstream) -> Result<(), HwError> {
        match &self.gate_l2 {
            // SAFETY: the queue's own stream (or the application's name for it), live while
            // the queue exists.
            Some(g) => unsafe { g.wait_on(stream) }.map_err(hw),
            None => Ok(()),
        }
    }

    /// Launches `l` from the application's thread (the XQueue's fast path, or an operation's
    /// turn): on the stream the application named, or a kernel on the queue's SM partition if
    /// it has one.
    #[inline]
    pub(crate) fn launch_now(&self, l: Launch<'_>) -> Result<(), HwError> {
        if self.plain {
            // SAFETY: `Launch::new`'s contract: the stream is this queue's (as the application
            // named it) and the calling thread has its context current.
            return unsafe { l.call(self.driver, l.stream()) }.map_err(hw);
        }
        // SAFETY: as above; a confined launch goes to the partition's stream, ordered with it.
        unsafe { self.launch_on(l.stream(), l.confinable(), |s| l.call(self.driver, s)) }
    }

    /// Readies the queue for an operation the caller performs itself on `handle` in its turn
    /// ([`baton_core::XQueue::in_turn`]): the gate, at Level 2.
    ///
    /// # Safety
    /// `handle` is the queue's live stream as the application named it (or its stand-in).
    pub unsafe fn before_in_place(&self, handle: CUstream) -> Result<(), HwError> {
        if self.plain {
            return Ok(());
        }
        self.gate_before(handle)
    }

    /// The gate (Level 2), then `launch` on `stream`, or on the SM partition's stream for a
    /// `confinable` kernel when the queue has one.
    ///
    /// # Safety
    /// `stream` is the queue's live stream (or the application's name for it), and the calling
    /// thread has its context current.
    unsafe fn launch_on(
        &self,
        stream: CUstream,
        confinable: bool,
        launch: impl FnOnce(CUstream) -> Result<(), DriverError>,
    ) -> Result<(), HwError> {
        if self.plain {
            return launch(stream).map_err(hw);
        }
        self.gate_before(stream)?;
        match &self.confined {
            Some(c) if confinable && self.confining() => {
                self.confined_kernels.fetch_add(1, Ordering::Relaxed);
                // SAFETY: the caller's promise; the partition's stream belongs to a green
                // context of the same device, whose kernels and memory it shares.
                unsafe { c.launch(stream, launch) }.map_err(hw)
            }
            _ => launch(stream).map_err(hw),
        }
    }

    /// Updates the queue's Level-3 state and tells the slice what changed of its role.
    fn set_l3(&self, f: impl FnOnce(&mut L3State)) {
        let Some(slice) = &self.slice else { return };
        let mut s = locks::lock(&self.l3);
        let was = *s;
        f(&mut s);
        slice.update(was.role(), s.role());
        if s.interrupted != was.interrupted {
            slice.set_interrupted(s.interrupted);
        }
    }

    /// Whether the driver must not be asked about this stream, nor given anything for it, on
    /// Baton's behalf now: the stream records into a graph (a capture began on it, or it joined
    /// one by waiting on a captured event), where a sync point would become part of the
    /// application's graph and a query or synchronization fails and invalidates the capture;
    /// or it is the legacy stream while some capture runs, which CUDA forbids touching while a
    /// blocking stream captures. Asks the driver only while a capture is in progress.
    fn recording(&self) -> bool {
        if !self.gate.active() {
            return false;
        }
        if self.legacy {
            return true;
        }
        let Some(is_capturing) = self.driver.cuStreamIsCapturing else {
            return true;
        };
        let mut status = CUstreamCaptureStatus::default();
        // SAFETY: the stream is live while its queue exists; `status` is a valid out-pointer.
        let r = unsafe { is_capturing(self.stream, &mut status) };
        !r.is_success() || status != CU_STREAM_CAPTURE_STATUS_NONE
    }

    /// The stream commands are launched on.
    pub fn stream(&self) -> CUstream {
        self.stream
    }

    /// The stream's context.
    pub fn context(&self) -> CUcontext {
        self.ctx
    }

    /// The driver.
    pub fn driver(&self) -> &'static Driver {
        self.driver
    }
}

fn hw(e: DriverError) -> HwError {
    e.into()
}

impl HwQueue for CudaHwQueue {
    type Command = CudaCommand;
    type SyncPoint = Arc<PooledEvent>;

    fn max_level(&self) -> Level {
        if self.slice.is_some() {
            Level::L3
        } else if self.gate_l2.is_some() {
            Level::L2
        } else {
            Level::L1
        }
    }

    fn supports(&self, level: Level) -> bool {
        match level {
            Level::L1 => true,
            Level::L2 => self.gate_l2.is_some(),
            Level::L3 => self.slice.is_some(),
        }
    }

    fn deactivate(&self) -> Result<(), HwError> {
        let g = self
            .gate_l2
            .as_ref()
            .ok_or(HwError::Unsupported(Level::L2))?;
        g.close();
        Ok(())
    }

    fn reactivate(&self, _inflight: baton_core::InflightRange) -> Result<(), HwError> {
        // Nothing was dropped: the commands wait behind the gate, in order.
        let g = self
            .gate_l2
            .as_ref()
            .ok_or(HwError::Unsupported(Level::L2))?;
        g.open();
        Ok(())
    }

    fn set_preemptible(&self, preemptible: bool) {
        if let Some(now) = &self.confine_while_preemptible {
            // Launches read it under the XQueue's state lock, which the caller holds.
            now.store(preemptible, Ordering::Relaxed);
        }
        self.set_l3(|s| s.preemptible = preemptible);
    }

    fn set_leading(&self, leading: bool) {
        self.set_l3(|s| s.leading = leading);
    }

    fn interrupt(&self) -> Result<(), HwError> {
        if self.slice.is_none() {
            return Err(HwError::Unsupported(Level::L3));
        }
        self.set_l3(|s| s.interrupted = true);
        Ok(())
    }

    fn restore(&self, _inflight: baton_core::InflightRange) -> Result<(), HwError> {
        // Nothing was dropped: the context's commands stay on the GPU and continue.
        if self.slice.is_none() {
            return Err(HwError::Unsupported(Level::L3));
        }
        self.set_l3(|s| s.interrupted = false);
        Ok(())
    }

    fn on_create(&self) -> Result<(), HwError> {
        LAUNCH_WORKER.with(|w| w.set(true));
        let set = Driver::require(self.driver.cuCtxSetCurrent, "cuCtxSetCurrent").map_err(hw)?;
        // SAFETY: the context outlives its queues.
        check("cuCtxSetCurrent", unsafe { set(self.ctx) }).map_err(hw)?;
        self.driver.relax_capture_mode();
        Ok(())
    }

    fn launch(&self, cmd: CudaCommand) -> Result<(), HwError> {
        let confinable = cmd.confinable();
        // SAFETY: the stream lives as long as its queue and the launching threads have its
        // context current (the application's own thread, or the worker after `on_create`); the
        // command's contents are the application's, valid by CUDA's contract.
        let r = crate::shared_limit::with_limit_for(self.driver, &cmd, || unsafe {
            self.launch_on(self.stream, confinable, |s| cmd.launch(self.driver, s))
        });
        if let Err(e) = &r {
            // The application learns of it at its next synchronization, without knowing which
            // command it was: say it here, with what the driver had in force for it.
            tracing::warn!(
                stream = ?self.stream,
                command = %cmd.describe(self.driver),
                "a command Baton launched later failed: {e}"
            );
        }
        r
    }

    fn sync_point(&self) -> Result<Arc<PooledEvent>, HwError> {
        if self.recording() {
            return Err(HwError::Busy);
        }
        let ev = self.pool.get().map_err(hw)?;
        let record = Driver::require(self.driver.cuEventRecord, "cuEventRecord").map_err(hw)?;
        // SAFETY: the event and stream are live handles of the same context.
        check("cuEventRecord", unsafe { record(ev.handle(), self.stream) }).map_err(hw)?;
        self.sync_points.fetch_add(1, Ordering::Relaxed);
        Ok(Arc::new(ev))
    }

    fn is_reached(&self, sp: &Arc<PooledEvent>) -> Result<bool, HwError> {
        if self.gate.active() && !LAUNCH_WORKER.with(Cell::get) {
            return Ok(false);
        }
        let query = Driver::require(self.driver.cuEventQuery, "cuEventQuery").map_err(hw)?;
        // SAFETY: the event is live (held by `sp`).
        match unsafe { query(sp.handle()) } {
            CUresult::SUCCESS => Ok(true),
            CUresult::NOT_READY => Ok(false),
            r => Err(hw(DriverError {
                code: r,
                call: "cuEventQuery",
            })),
        }
    }

    fn query_idle(&self) -> Result<bool, HwError> {
        if self.gate.active() && (!LAUNCH_WORKER.with(Cell::get) || self.recording()) {
            return Ok(false);
        }
        let query = Driver::require(self.driver.cuStreamQuery, "cuStreamQuery").map_err(hw)?;
        // SAFETY: the stream is live while its queue exists.
        match unsafe { query(self.stream) } {
            CUresult::SUCCESS => Ok(true),
            CUresult::NOT_READY => Ok(false),
            r => Err(hw(DriverError {
                code: r,
                call: "cuStreamQuery",
            })),
        }
    }

    fn wait(&self, sp: &Arc<PooledEvent>) -> Result<(), HwError> {
        let sync =
            Driver::require(self.driver.cuEventSynchronize, "cuEventSynchronize").map_err(hw)?;
        // SAFETY: the event is live (held by `sp`).
        check("cuEventSynchronize", unsafe { sync(sp.handle()) }).map_err(hw)
    }

    fn synchronize(&self) -> Result<(), HwError> {
        let sync =
            Driver::require(self.driver.cuStreamSynchronize, "cuStreamSynchronize").map_err(hw)?;
        // SAFETY: the stream is live while its queue exists.
        check("cuStreamSynchronize", unsafe { sync(self.stream) }).map_err(hw)
    }
}

impl Drop for CudaHwQueue {
    fn drop(&mut self) {
        if let Some(s) = &self.slice {
            let l3 = *locks::lock(&self.l3);
            if l3.interrupted {
                s.set_interrupted(false);
            }
            s.detach(l3.role());
        }
    }
}
