//! The simulated device as hardware queues see it, in virtual or real time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use baton_core::locks;
use baton_core::{
    Clock, CommandKind, HwError, HwQueue, InflightRange, Level, ManualClock, MonotonicClock, Nanos,
};

use crate::{ContextId, EventId, SimCommand, SimConfig, SimDevice, StreamId};

/// How the simulated device's time moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeMode {
    /// Only when the owner calls [`Sim::advance_to`]. Deterministic; nothing may block.
    Virtual,
    /// With the wall clock: the model is brought up to date on every call, and waits sleep
    /// until the device's next event.
    RealTime,
}

struct Shared {
    device: Mutex<SimDevice>,
    changed: Condvar,
    mode: TimeMode,
    clock: Arc<dyn Clock>,
    manual: Option<Arc<ManualClock>>,
}

impl Shared {
    /// The device, brought up to the current time in real-time mode.
    fn lock(&self) -> MutexGuard<'_, SimDevice> {
        let mut d = locks::lock(&self.device);
        if self.mode == TimeMode::RealTime {
            d.advance_to(self.clock.now());
        }
        d
    }

    fn with<R>(&self, f: impl FnOnce(&mut SimDevice) -> R) -> R {
        let mut d = self.lock();
        let r = f(&mut d);
        drop(d);
        self.changed.notify_all();
        r
    }

    /// Blocks until `stream` has completed `count` commands.
    fn wait_done(&self, stream: StreamId, count: u64) -> Result<(), HwError> {
        let mut d = self.lock();
        loop {
            if d.done(stream) >= count {
                return Ok(());
            }
            if self.mode == TimeMode::Virtual {
                return Err(HwError::WouldBlock);
            }
            let next = d.next_event_time();
            d = if next == Nanos::MAX {
                locks::wait(&self.changed, d)
            } else {
                let wait = next.saturating_sub(self.clock.now());
                locks::wait_timeout(&self.changed, d, wait.into())
            };
            d.advance_to(self.clock.now());
        }
    }
}

/// A simulated device with its clock. Cloning shares the device.
#[derive(Clone)]
pub struct Sim {
    shared: Arc<Shared>,
}

impl Sim {
    /// A device with `cfg`, its time moving as `mode` says.
    pub fn new(cfg: SimConfig, mode: TimeMode) -> Sim {
        let (clock, manual): (Arc<dyn Clock>, _) = match mode {
            TimeMode::Virtual => {
                let m = Arc::new(ManualClock::new(Nanos::ZERO));
                (m.clone(), Some(m))
            }
            TimeMode::RealTime => (Arc::new(MonotonicClock::new()), None),
        };
        Sim {
            shared: Arc::new(Shared {
                device: Mutex::new(SimDevice::new(cfg)),
                changed: Condvar::new(),
                mode,
                clock,
                manual,
            }),
        }
    }

    /// The clock the device runs on; give it to the XQueues and schedulers that use it.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.shared.clock)
    }

    /// How time moves.
    pub fn mode(&self) -> TimeMode {
        self.shared.mode
    }

    /// Runs `f` on the device model (brought up to date first).
    pub fn with<R>(&self, f: impl FnOnce(&mut SimDevice) -> R) -> R {
        self.shared.with(f)
    }

    /// A new context (simulated process).
    pub fn create_context(&self) -> ContextId {
        self.with(SimDevice::create_context)
    }

    /// A new stream in `ctx`, as a hardware queue.
    pub fn create_stream(&self, ctx: ContextId, priority: i32) -> SimQueue {
        let stream = self.with(|d| d.create_stream(ctx, priority));
        SimQueue {
            sim: Arc::clone(&self.shared),
            stream,
            slice: None,
            confine: None,
        }
    }

    /// A new event.
    pub fn create_event(&self) -> EventId {
        self.with(SimDevice::create_event)
    }

    /// The device's time.
    pub fn now(&self) -> Nanos {
        self.with(|d| d.now())
    }

    /// When the device next changes state by itself.
    pub fn next_event_time(&self) -> Nanos {
        self.with(|d| d.next_event_time())
    }

    /// Virtual time: moves the clock and the device to `t`. Real time: brings the device up to
    /// date (time moves by itself).
    pub fn advance_to(&self, t: Nanos) {
        if let Some(m) = &self.shared.manual {
            m.set(t);
        }
        self.with(|d| d.advance_to(t.max(d.now())));
    }
}

/// One simulated stream as an XQueue's hardware queue.
#[derive(Clone)]
pub struct SimQueue {
    sim: Arc<Shared>,
    stream: StreamId,
    /// Whether the queue controls its context's slice, and whether it runs freely and
    /// leads now.
    slice: Option<Arc<std::sync::Mutex<(bool, bool)>>>,
    /// The SMs its kernels keep to while it is preemptible, and whether it is now.
    confine: Option<(u32, Arc<AtomicBool>)>,
}

/// A point in a simulated stream: reached when its first `count` commands completed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimSyncPoint {
    stream: StreamId,
    count: u64,
}

impl SimQueue {
    /// The stream underneath.
    pub fn stream(&self) -> StreamId {
        self.stream
    }

    /// Makes the queue control its context's time slice ([`SimDevice::control_slice`]): the
    /// context yields with `slice` while none of its controlling queues runs freely. The
    /// queue starts suspendable, as an XQueue does.
    #[must_use]
    pub fn yielding(mut self, slice: Nanos) -> SimQueue {
        let s = self.stream;
        self.sim.with(|d| {
            let ctx = d.context_of(s);
            d.control_slice(ctx, slice);
        });
        self.slice = Some(Arc::new(std::sync::Mutex::new((false, false))));
        self
    }

    /// With [`SimQueue::yielding`]: the context's slice is `lead` while this queue runs
    /// freely and outranks other work ([`HwQueue::set_leading`]), as Baton gives a service
    /// beside a job on a GPU.
    #[must_use]
    pub fn leading(self, lead: Nanos) -> SimQueue {
        let s = self.stream;
        self.sim.with(|d| {
            let ctx = d.context_of(s);
            d.lead_slice(ctx, lead);
        });
        self
    }

    /// Updates (runs freely, leads) and tells the device what changed.
    fn set_slice_state(&self, f: impl FnOnce(&mut (bool, bool))) {
        let Some(state) = &self.slice else { return };
        let mut st = state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let was = *st;
        f(&mut st);
        let now = *st;
        drop(st);
        let s = self.stream;
        self.sim.with(|d| {
            let ctx = d.context_of(s);
            if was.0 != now.0 {
                d.set_running_freely(ctx, now.0);
            }
            if (was.0 && was.1) != (now.0 && now.1) {
                d.set_leading_freely(ctx, now.0 && now.1);
            }
        });
    }

    /// Keeps the queue's kernels to `sms` SMs while it is preemptible (a more urgent queue
    /// exists), as `baton run --yield` does under MPS on a GPU: a kernel that asks for more
    /// does the same work on `sms` SMs, for proportionally longer (graphs keep the whole
    /// device, as on a GPU). It starts preemptible, as an XQueue does.
    #[must_use]
    pub fn confining(mut self, sms: u32) -> SimQueue {
        self.confine = Some((sms.max(1), Arc::new(AtomicBool::new(true))));
        self
    }

    fn level_op(
        &self,
        needs: Level,
        f: impl FnOnce(&mut SimDevice, StreamId),
    ) -> Result<(), HwError> {
        let s = self.stream;
        self.sim.with(|d| {
            if d.config().max_level < needs {
                return Err(HwError::Unsupported(needs));
            }
            f(d, s);
            Ok(())
        })
    }
}

impl HwQueue for SimQueue {
    type Command = SimCommand;
    type SyncPoint = SimSyncPoint;

    fn max_level(&self) -> Level {
        self.sim.with(|d| d.config().max_level)
    }

    fn launch(&self, mut cmd: SimCommand) -> Result<(), HwError> {
        if let Some((cap, now)) = &self.confine
            && now.load(Ordering::Acquire)
            && matches!(cmd.kind, CommandKind::Kernel)
            && cmd.sms > *cap
        {
            let work = u128::from(cmd.duration.0) * u128::from(cmd.sms);
            cmd.duration =
                Nanos(u64::try_from(work.div_ceil(u128::from(*cap))).unwrap_or(u64::MAX));
            cmd.sms = *cap;
        }
        let s = self.stream;
        self.sim.with(|d| d.launch(s, cmd));
        Ok(())
    }

    fn sync_point(&self) -> Result<SimSyncPoint, HwError> {
        let s = self.stream;
        Ok(self.sim.with(|d| SimSyncPoint {
            stream: s,
            count: d.launched(s),
        }))
    }

    fn is_reached(&self, sp: &SimSyncPoint) -> Result<bool, HwError> {
        Ok(self.sim.with(|d| d.done(sp.stream) >= sp.count))
    }

    fn query_idle(&self) -> Result<bool, HwError> {
        let s = self.stream;
        Ok(self.sim.with(|d| d.done(s) >= d.launched(s)))
    }

    fn wait(&self, sp: &SimSyncPoint) -> Result<(), HwError> {
        self.sim.wait_done(sp.stream, sp.count)
    }

    fn synchronize(&self) -> Result<(), HwError> {
        let s = self.stream;
        let count = self.sim.with(|d| d.launched(s));
        self.sim.wait_done(s, count)
    }

    fn deactivate(&self) -> Result<(), HwError> {
        self.level_op(Level::L2, SimDevice::deactivate)
    }

    fn reactivate(&self, _inflight: InflightRange) -> Result<(), HwError> {
        // The simulated device keeps launched commands, so nothing needs re-launching.
        self.level_op(Level::L2, SimDevice::reactivate)
    }

    fn set_preemptible(&self, preemptible: bool) {
        if let Some((_, now)) = &self.confine {
            now.store(preemptible, Ordering::Release);
        }
        self.set_slice_state(|st| st.0 = !preemptible);
    }

    fn set_leading(&self, leading: bool) {
        self.set_slice_state(|st| st.1 = leading);
    }

    fn interrupt(&self) -> Result<(), HwError> {
        self.level_op(Level::L3, SimDevice::interrupt)
    }

    fn restore(&self, _inflight: InflightRange) -> Result<(), HwError> {
        self.level_op(Level::L3, SimDevice::restore)
    }
}

#[cfg(test)]
mod tests {
    use baton_core::{Drive, LaunchConfig, SuspendFlags, XQueue};

    use super::*;

    #[test]
    fn an_xqueue_runs_on_the_simulated_device_in_virtual_time() {
        let sim = Sim::new(SimConfig::default(), TimeMode::Virtual);
        let ctx = sim.create_context();
        let q = XQueue::builder(sim.create_stream(ctx, 0))
            .drive(Drive::External)
            .clock(sim.clock())
            .config(LaunchConfig::new(4, 2).unwrap())
            .build()
            .unwrap();
        for _ in 0..10 {
            q.submit(SimCommand::kernel(Nanos::from_micros(100), 132))
                .unwrap();
        }
        assert_eq!(q.status().inflight, 4);
        while q.status().completed < 10 {
            let t = sim.next_event_time();
            assert_ne!(t, Nanos::MAX, "stalled: {:?}", q.status());
            sim.advance_to(t);
            q.poll();
        }
        assert_eq!(sim.now(), Nanos::from_micros(1_025));
        assert_eq!(q.wait_all(), Ok(()));
    }

    #[test]
    fn virtual_time_never_blocks_and_levels_are_checked() {
        let cfg = SimConfig {
            max_level: Level::L2,
            ..SimConfig::default()
        };
        let sim = Sim::new(cfg, TimeMode::Virtual);
        let ctx = sim.create_context();
        let hw = sim.create_stream(ctx, 0);
        hw.launch(SimCommand::kernel(Nanos::from_micros(10), 1))
            .unwrap();
        assert_eq!(hw.synchronize(), Err(HwError::WouldBlock));
        assert_eq!(hw.interrupt(), Err(HwError::Unsupported(Level::L3)));
        assert_eq!(hw.deactivate(), Ok(()));
        let err = XQueue::builder(hw.clone())
            .level(Level::L3)
            .build()
            .err()
            .unwrap();
        assert!(err.to_string().contains("highest level is L2"));
    }

    #[test]
    fn real_time_waits_follow_the_wall_clock() {
        let sim = Sim::new(SimConfig::default(), TimeMode::RealTime);
        let ctx = sim.create_context();
        let q = XQueue::builder(sim.create_stream(ctx, 0))
            .clock(sim.clock())
            .build()
            .unwrap();
        let start = sim.now();
        for _ in 0..20 {
            q.submit(SimCommand::kernel(Nanos::from_micros(500), 132))
                .unwrap();
        }
        q.wait_all().unwrap();
        let elapsed = sim.now() - start;
        // 20 × 500 µs of work (plus a switch) cannot finish sooner than 10 ms of wall time.
        assert!(elapsed >= Nanos::from_millis(10), "{elapsed}");
        q.suspend(SuspendFlags { sync_hw: true }).unwrap();
    }
}
