//! What Baton knows of the application's events: where each was last recorded (a command of a
//! queue, which may still be held back) and the waits on it not yet launched. CUDA binds a
//! wait to the record current when the wait was issued, and a new record must follow the
//! earlier waits; `ops/events.rs` keeps that order with what this table answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use baton_cuda::core::locks;
use baton_cuda::core::{CommandSeq, CommandState};
use baton_cuda::sys::CUevent;

use crate::registry::StreamEntry;

/// A command of a queue: where a record or a wait sits.
pub(crate) type Place = (Arc<StreamEntry>, CommandSeq);

/// Where an event was last recorded, and the waits on it not yet launched.
#[derive(Default)]
struct EventTrack {
    record: Option<Place>,
    waits: Vec<Place>,
    /// Recorded on a stream being captured (a wait on it joins the capture).
    captured: bool,
}

/// Every event Baton saw recorded or waited on, by handle.
#[derive(Default)]
pub(crate) struct EventTable {
    events: Mutex<HashMap<usize, EventTrack>>,
}

impl EventTable {
    /// `events` were recorded where Baton does not schedule (or by the driver directly): an
    /// earlier record no longer says when they complete.
    pub(crate) fn forget_records(&self, events: &[CUevent]) {
        let mut ev = locks::lock(&self.events);
        for event in events {
            if let Some(t) = ev.get_mut(&(*event as usize)) {
                t.record = None;
            }
        }
    }

    /// `events` were recorded into a graph being captured: a wait on one joins the capture.
    pub(crate) fn recorded_in_capture(&self, events: &[CUevent]) {
        let mut ev = locks::lock(&self.events);
        for event in events {
            let t = ev.entry(*event as usize).or_default();
            t.record = None;
            t.captured = true;
        }
    }

    /// The waits issued on `events` so far, which a new record of them must follow.
    pub(crate) fn take_waits(&self, events: &[CUevent]) -> Vec<Place> {
        let mut waits = Vec::new();
        let mut ev = locks::lock(&self.events);
        for event in events {
            if let Some(t) = ev.get_mut(&(*event as usize)) {
                waits.append(&mut t.waits);
            }
        }
        waits
    }

    /// `events` were recorded at `at`: their last record from now on.
    pub(crate) fn recorded(&self, events: &[CUevent], at: &Place) {
        let mut ev = locks::lock(&self.events);
        for event in events {
            let t = ev.entry(*event as usize).or_default();
            t.record = Some(at.clone());
            t.captured = false;
        }
    }

    /// `event` was recorded after everything submitted (a context-wide record): its record is
    /// in the driver, and no wait is pending.
    pub(crate) fn recorded_by_driver(&self, event: CUevent) {
        let mut ev = locks::lock(&self.events);
        let t = ev.entry(event as usize).or_default();
        t.record = None;
        t.waits.clear();
        t.captured = false;
    }

    /// `event`'s last record, if Baton knows it, and whether it was recorded into a capture.
    pub(crate) fn last_record(&self, event: CUevent) -> (Option<Place>, bool) {
        let ev = locks::lock(&self.events);
        ev.get(&(event as usize))
            .map(|t| (t.record.clone(), t.captured))
            .unwrap_or((None, false))
    }

    /// A wait on `event` at `at`, still held back: a later record must follow it. Waits that
    /// have been launched since are dropped.
    pub(crate) fn waited(&self, event: CUevent, at: Place) {
        let mut ev = locks::lock(&self.events);
        let t = ev.entry(event as usize).or_default();
        t.waits
            .retain(|(q, s)| q.xq.query(*s) == Ok(CommandState::Pending));
        t.waits.push(at);
    }

    /// `event` is destroyed: forgets it, and returns its record and waits still held back.
    pub(crate) fn destroyed(&self, event: CUevent) -> Vec<Place> {
        let t = locks::lock(&self.events).remove(&(event as usize));
        t.map(|t| t.waits.into_iter().chain(t.record).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|(q, s)| q.xq.query(*s) == Ok(CommandState::Pending))
            .collect()
    }
}
