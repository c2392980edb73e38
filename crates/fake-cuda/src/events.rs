//! Events: a record is a command on a stream; queries, waits and elapsed times refer to the
//! latest record made before the call, as in CUDA.
//!
//! Recording bumps the event's generation and submits an `event_record` command while holding
//! the event's lock, so the record is known before the worker can execute it; the worker stamps
//! the time only if no newer record superseded it. An event never recorded is complete. The
//! entry points are in `events_api.rs`.

use std::sync::{Arc, Mutex};

use baton_cuda_sys::CUresult;

use crate::capture::Shared;
use crate::handle::Handle;
use crate::ops::{Op, RecordedEvent};
use crate::result::CuResult;
use crate::stream::{Dep, Stream, Submitted};
use crate::sync::lock;

/// The latest record of an event.
struct Record {
    generation: u64,
    done: Dep,
    time_ns: Option<u64>,
}

#[derive(Default)]
struct EventState {
    generation: u64,
    record: Option<Record>,
    /// Last recorded in this capture (it stands for no work that runs while the capture lasts;
    /// a stream that waits on it joins the capture).
    captured: Option<Shared>,
}

impl EventState {
    /// The capture the event was last recorded in, while it lasts.
    fn capture(&self) -> Option<Shared> {
        self.captured.as_ref().filter(|c| !lock(c).ended).cloned()
    }
}

/// An event.
pub(crate) struct Event {
    pub handle: Handle,
    /// Creation flags (`CU_EVENT_DISABLE_TIMING`, …).
    pub flags: u32,
    state: Mutex<EventState>,
}

impl Event {
    /// A new event, never recorded.
    pub fn new(handle: Handle, flags: u32) -> Arc<Event> {
        Arc::new(Event {
            handle,
            flags,
            state: Mutex::default(),
        })
    }

    /// The completion of the latest record, if the event was recorded.
    pub fn latest(&self) -> Option<Dep> {
        lock(&self.state)
            .record
            .as_ref()
            .map(|record| record.done.clone())
    }

    /// The capture the event was last recorded in, while it lasts.
    pub fn capture(&self) -> Option<Shared> {
        lock(&self.state).capture()
    }

    /// Invalidates the capture the event was last recorded in, if it lasts (under the event's
    /// lock); whether there was one.
    pub fn invalidate_capture(&self) -> bool {
        if let Some(capture) = lock(&self.state).capture() {
            lock(&capture).invalidated = true;
            return true;
        }
        false
    }

    /// When the latest record executed: `CUDA_ERROR_INVALID_HANDLE` if the event was never
    /// recorded, `CUDA_ERROR_NOT_READY` before its latest record executed.
    pub fn time_ns(&self) -> CuResult<u64> {
        let state = lock(&self.state);
        let record = state.record.as_ref().ok_or(CUresult::INVALID_HANDLE)?;
        record.time_ns.ok_or(CUresult::NOT_READY)
    }

    /// Records the event on `stream` (or, while it captures, in its capture).
    pub fn record_on(self: &Arc<Self>, stream: &Arc<Stream>) -> CuResult<()> {
        let mut state = lock(&self.state);
        if let Some(capture) = stream.capture() {
            // A node of the graph (not modelled: the linear graph needs none); a stream that
            // waits on the event joins the capture.
            state.captured = Some(capture);
            return Ok(());
        }
        state.captured = None;
        let generation = state.generation + 1;
        let op = Op::EventRecord {
            event: Arc::<Event>::clone(self),
            generation,
        };
        if let Submitted::Queued(done) = stream.submit(op, Vec::new())? {
            state.generation = generation;
            state.record = Some(Record {
                generation,
                done,
                time_ns: None,
            });
        }
        Ok(())
    }
}

impl RecordedEvent for Event {
    fn short(&self) -> u64 {
        self.handle.short
    }

    fn complete(&self, generation: u64, time_ns: u64) {
        if let Some(record) = lock(&self.state)
            .record
            .as_mut()
            .filter(|r| r.generation == generation)
        {
            record.time_ns = Some(time_ns);
        }
    }
}
