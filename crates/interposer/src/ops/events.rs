//! Events: records and waits keep CUDA's cross-stream order (a wait follows the event's last
//! record; a new record follows the earlier waits on it); queries and waits on the host see a
//! held-back record as not yet done.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use baton_cuda::core::{CommandState, Dependency};
use baton_cuda::sys::{CUevent, CUresult, CUstream};
use baton_cuda::{CudaCommand, Launch, Op};

use super::Count;
use crate::registry::Api;
use crate::runtime::Runtime;

impl Runtime {
    /// `cuEventRecord[WithFlags]`; `None` where Baton does not schedule `stream` (the hook
    /// calls the driver itself).
    pub(crate) fn event_record(
        &self,
        event: CUevent,
        stream: CUstream,
        api: Api,
        flags: Option<u32>,
    ) -> Option<CUresult> {
        let op = Op::Command(&CudaCommand::EventRecord { event, flags });
        self.recording(&[event], stream, api, Count::Marker, op)
    }

    /// A stream operation that records `events` at its place in the stream: an event record,
    /// or a kernel launch whose attributes name events. Waits on the events issued before it
    /// reach the driver first (CUDA binds a wait to the record current when it was issued), and
    /// the operation becomes each event's last record, which later waits and queries follow.
    /// `None` where Baton does not schedule `stream`: the hook calls the driver itself.
    pub(crate) fn recording(
        &self,
        events: &[CUevent],
        stream: CUstream,
        api: Api,
        count: Count,
        op: Op<'_>,
    ) -> Option<CUresult> {
        let Some(e) = self.scheduled_entry(stream, api) else {
            // Recorded where Baton does not schedule: an earlier record no longer says when
            // the event completes. (Disabled, Baton never tracks a record: nothing to forget,
            // and the record path stays the driver's.)
            if self.hot.enabled {
                self.events.forget_records(events);
            }
            return None;
        };
        if self.capturing(&e, Self::handle_for(&e, stream)) {
            // SAFETY: the stream as Baton maps it, from the application's thread, with the
            // application's arguments, valid during its call.
            let launch = unsafe { Launch::new(Self::handle_for(&e, stream), op, false) };
            let r = launch.outside_queue(self.driver);
            self.events.recorded_in_capture(events);
            return Some(r);
        }
        let waits = self.events.take_waits(events);
        let deps: Vec<Dependency> = waits
            .iter()
            .filter(|(q, _)| !Arc::ptr_eq(q, &e))
            .filter_map(|(q, seq)| q.xq.dependency_on(*seq))
            .collect();
        let (r, seq) = self.scheduled_on(&e, stream, count, deps, op);
        if let Some(seq) = seq {
            self.events.recorded(events, &(e.clone(), seq));
        }
        Some(r)
    }

    /// `cuStreamWaitEvent`; `None` where Baton does not schedule `stream` (the hook calls the
    /// driver itself).
    pub(crate) fn stream_wait_event(
        &self,
        stream: CUstream,
        api: Api,
        event: CUevent,
        flags: u32,
    ) -> Option<CUresult> {
        let e = self.scheduled_entry(stream, api)?;
        let handle = Self::handle_for(&e, stream);
        let (record, captured) = self.events.last_record(event);
        let op = Op::Command(&CudaCommand::WaitEvent { event, flags });
        if captured && self.gate.active() {
            // Waiting on captured work joins this stream to the capture: from now on its calls
            // go to the capture.
            self.before_recording(&e);
            self.stats.bypassed.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the stream as Baton maps it, from the application's thread.
            let launch = unsafe { Launch::new(handle, op, false) };
            return Some(self.start_recording(&e, || launch.outside_queue(self.driver)));
        }
        let deps: Vec<Dependency> = record
            .iter()
            .filter(|(q, _)| !Arc::ptr_eq(q, &e))
            .filter_map(|(q, seq)| q.xq.dependency_on(*seq))
            .collect();
        let (r, seq) = self.scheduled_on(&e, stream, Count::Other, deps, op);
        if let Some(seq) = seq {
            if e.xq.query(seq) == Ok(CommandState::Pending) {
                self.events.waited(event, (e.clone(), seq));
            }
        }
        Some(r)
    }

    /// `cuEventQuery`: not ready while its record is still buffered.
    pub(crate) fn event_query(&self, event: CUevent, real: impl FnOnce() -> CUresult) -> CUresult {
        if let Some((q, seq)) = self.events.last_record(event).0 {
            if q.xq.query(seq) == Ok(CommandState::Pending) {
                return CUresult::NOT_READY;
            }
        }
        real()
    }

    /// `cuEventSynchronize`: its record launched, then the driver's wait; once it is done,
    /// its queue knows every command up to the record is complete, and a wait that blocked is
    /// a sample of the queue's command time (a loop that keeps a few steps in flight by waiting
    /// on its own events is measured this way: it never fills the queue's window).
    pub(crate) fn event_synchronize(
        &self,
        event: CUevent,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        let Some((q, seq)) = self.events.last_record(event).0 else {
            return real();
        };
        let _ = q.xq.wait_launched(seq);
        let asked = baton_cuda::core::Clock::now(&*self.clock);
        let r = real();
        if r == CUresult::SUCCESS {
            q.xq.saw_complete(seq, asked);
        }
        r
    }

    /// `cuEventElapsedTime`: not ready while either record is buffered.
    pub(crate) fn event_elapsed(
        &self,
        a: CUevent,
        b: CUevent,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        for ev in [a, b] {
            if let Some((q, seq)) = self.events.last_record(ev).0 {
                if q.xq.query(seq) == Ok(CommandState::Pending) {
                    return CUresult::NOT_READY;
                }
            }
        }
        real()
    }

    /// `cuEventDestroy`: the driver must not lose an event a buffered command still names, so
    /// while one is buffered the destruction waits in the background (the call returns at once,
    /// as the driver's does).
    pub(crate) fn event_destroy(
        &self,
        event: CUevent,
        real: impl FnOnce() -> CUresult + Send + 'static,
    ) -> CUresult {
        let pending = self.events.destroyed(event);
        if pending.is_empty() {
            return real();
        }
        let driver = self.driver;
        let spawned = std::thread::Builder::new()
            .name("baton-retire".into())
            .spawn(move || {
                driver.relax_capture_mode();
                for (q, seq) in pending {
                    let _ = q.xq.wait_launched(seq);
                }
                real()
            });
        match spawned {
            Ok(_) => CUresult::SUCCESS,
            Err(_) => CUresult::OUT_OF_MEMORY,
        }
    }

    /// `cuCtxRecordEvent`/`cuGreenCtxRecordEvent`: an event after everything submitted to the
    /// context, so everything submitted reaches the driver first; the event's last record is
    /// then in the driver, not in a queue.
    pub(crate) fn context_event_record(
        &self,
        event: CUevent,
        real: impl FnOnce() -> CUresult,
    ) -> CUresult {
        let r = self.after_submitted(crate::report::Release::Context, real);
        if r.is_success() {
            self.events.recorded_by_driver(event);
        }
        r
    }
}
