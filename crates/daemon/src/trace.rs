//! Traces: what `baton trace` records between start and stop.
//!
//! While recording, every queue has one open span (running or suspended, as the daemon last
//! told its agent); a change closes it and opens the next. Queue states, decisions and hints
//! are point records. Tracks are named (`Process`, `Queue` records) before their first use.
//! Past `capacity` records, new ones are counted as dropped.

use std::collections::HashMap;

use baton_core::XQueueId;
use baton_protocol::{
    DecisionCause, Hint, MAX_TRACE_CHUNK, QueueId, SpanState, Target, TraceChunk, TraceRecord,
};

/// A queue as a trace names it.
#[derive(Clone, Debug)]
pub(crate) struct TrackInfo {
    pub(crate) pid: u32,
    pub(crate) process: String,
    pub(crate) queue: QueueId,
    pub(crate) device: String,
    pub(crate) label: String,
    pub(crate) suspended: bool,
}

struct Open {
    pid: u32,
    queue: QueueId,
    state: SpanState,
    start_ns: u64,
}

/// A trace being recorded.
pub(crate) struct Recorder {
    records: Vec<TraceRecord>,
    capacity: usize,
    dropped: u64,
    open: HashMap<XQueueId, Open>,
    named: std::collections::HashSet<u32>,
}

/// The daemon's trace, if any.
#[derive(Default)]
pub(crate) enum Trace {
    /// Nothing recorded.
    #[default]
    Idle,
    /// Recording.
    Recording(Recorder),
    /// Stopped; readable.
    Stopped { records: Vec<TraceRecord> },
}

fn span_state(suspended: bool) -> SpanState {
    if suspended {
        SpanState::Suspended
    } else {
        SpanState::Running
    }
}

impl Recorder {
    /// A recording of at most `capacity` records, starting at `now_ns` with `queues`.
    pub(crate) fn start(
        capacity: usize,
        now_ns: u64,
        queues: impl IntoIterator<Item = (XQueueId, TrackInfo)>,
    ) -> Recorder {
        let mut r = Recorder {
            records: Vec::new(),
            capacity,
            dropped: 0,
            open: HashMap::new(),
            named: Default::default(),
        };
        for (id, info) in queues {
            r.queue_added(id, &info, now_ns);
        }
        r
    }

    fn push(&mut self, rec: TraceRecord) {
        if self.records.len() < self.capacity {
            self.records.push(rec);
        } else {
            self.dropped += 1;
        }
    }

    /// A queue appeared: its track is named and its first span opens.
    pub(crate) fn queue_added(&mut self, id: XQueueId, info: &TrackInfo, now_ns: u64) {
        if self.named.insert(info.pid) {
            self.push(TraceRecord::Process {
                pid: info.pid,
                name: info.process.clone(),
            });
        }
        self.push(TraceRecord::Queue {
            pid: info.pid,
            queue: info.queue,
            device: info.device.clone(),
            label: info.label.clone(),
        });
        self.open.insert(
            id,
            Open {
                pid: info.pid,
                queue: info.queue,
                state: span_state(info.suspended),
                start_ns: now_ns,
            },
        );
    }

    /// The queue is now `suspended` or running.
    pub(crate) fn span(&mut self, id: XQueueId, suspended: bool, now_ns: u64) {
        let state = span_state(suspended);
        let Some(o) = self.open.get_mut(&id) else {
            return;
        };
        if o.state == state {
            return;
        }
        let rec = TraceRecord::Span {
            pid: o.pid,
            queue: o.queue,
            state: o.state,
            start_ns: o.start_ns,
            end_ns: now_ns.max(o.start_ns),
        };
        o.state = state;
        o.start_ns = now_ns;
        self.push(rec);
    }

    /// The queue is gone: its span closes.
    pub(crate) fn queue_removed(&mut self, id: XQueueId, now_ns: u64) {
        if let Some(o) = self.open.remove(&id) {
            self.push(TraceRecord::Span {
                pid: o.pid,
                queue: o.queue,
                state: o.state,
                start_ns: o.start_ns,
                end_ns: now_ns.max(o.start_ns),
            });
        }
    }

    pub(crate) fn queue_state(&mut self, pid: u32, queue: QueueId, ready: bool, at_ns: u64) {
        self.push(TraceRecord::QueueState {
            pid,
            queue,
            ready,
            at_ns,
        });
    }

    pub(crate) fn decision(
        &mut self,
        at_ns: u64,
        latency_ns: u64,
        cause: DecisionCause,
        suspended: u32,
        resumed: u32,
    ) {
        self.push(TraceRecord::Decision {
            at_ns,
            latency_ns: latency_ns.min(baton_protocol::MAX_DURATION_NS),
            cause,
            suspended,
            resumed,
        });
    }

    pub(crate) fn hint(&mut self, at_ns: u64, target: Target, hint: Hint) {
        self.push(TraceRecord::Hint {
            at_ns,
            target,
            hint,
        });
    }

    /// Ends the recording: open spans close at `now_ns`.
    pub(crate) fn stop(mut self, now_ns: u64) -> (Vec<TraceRecord>, u64) {
        let ids: Vec<XQueueId> = self.open.keys().copied().collect();
        for id in ids {
            self.queue_removed(id, now_ns);
        }
        (self.records, self.dropped)
    }
}

/// Records `cursor..` of a stopped trace, at most one chunk.
pub(crate) fn chunk(records: &[TraceRecord], cursor: u64) -> TraceChunk {
    let start = usize::try_from(cursor)
        .unwrap_or(usize::MAX)
        .min(records.len());
    let end = (start + MAX_TRACE_CHUNK).min(records.len());
    TraceChunk {
        records: records[start..end].to_vec(),
        next: end as u64,
        complete: end == records.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(suspended: bool) -> TrackInfo {
        TrackInfo {
            pid: 5,
            process: "p".into(),
            queue: QueueId(1),
            device: "sim-0".into(),
            label: String::new(),
            suspended,
        }
    }

    #[test]
    fn spans_follow_changes_and_close_at_stop() {
        let mut r = Recorder::start(100, 10, [(XQueueId(1), info(false))]);
        r.span(XQueueId(1), true, 20);
        r.span(XQueueId(1), true, 25);
        r.span(XQueueId(1), false, 30);
        let (recs, dropped) = r.stop(40);
        assert_eq!(dropped, 0);
        let spans: Vec<_> = recs
            .iter()
            .filter_map(|r| match r {
                TraceRecord::Span {
                    state,
                    start_ns,
                    end_ns,
                    ..
                } => Some((*state, *start_ns, *end_ns)),
                _ => None,
            })
            .collect();
        assert_eq!(
            spans,
            vec![
                (SpanState::Running, 10, 20),
                (SpanState::Suspended, 20, 30),
                (SpanState::Running, 30, 40)
            ]
        );
        assert!(matches!(recs[0], TraceRecord::Process { pid: 5, .. }));
    }

    #[test]
    fn capacity_drops_and_chunks_end() {
        let mut r = Recorder::start(2, 0, [(XQueueId(1), info(false))]);
        r.queue_state(5, QueueId(1), true, 1);
        r.queue_state(5, QueueId(1), false, 2);
        let (recs, dropped) = r.stop(3);
        assert_eq!(
            (recs.len(), dropped),
            (2, 3),
            "two states and the closing span"
        );
        let c = chunk(&recs, 0);
        assert!(c.complete && c.next == 2);
        let c = chunk(&recs, 99);
        assert!(c.complete && c.records.is_empty());
    }
}
