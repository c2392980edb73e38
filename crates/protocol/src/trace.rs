//! Traces: what the daemon records between `baton trace start` and `stop`, read back in
//! chunks and turned by the CLI into a Perfetto / `chrome://tracing` timeline.
//!
//! Times are the daemon's monotonic clock in nanoseconds. `Process` and `Queue` records name
//! the tracks before the first record that uses them.

use serde::{Deserialize, Serialize};

use crate::{
    Hint, MAX_DURATION_NS, MAX_LABEL_LEN, MAX_NAME_LEN, MAX_TRACE_CHUNK, ProtocolError, QueueId,
    Target, check,
};

/// Part of a stopped trace (answer to [`Request::TraceRead`](crate::Request::TraceRead)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceChunk {
    /// Records in time order, at most [`MAX_TRACE_CHUNK`]; non-empty unless `complete`.
    pub records: Vec<TraceRecord>,
    /// The cursor to read the next chunk from.
    pub next: u64,
    /// Whether this chunk ends the trace.
    pub complete: bool,
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceRecord {
    /// Names a process track.
    Process {
        /// Its pid.
        pid: u32,
        /// Its short name.
        name: String,
    },
    /// Names a queue track.
    Queue {
        /// Its process.
        pid: u32,
        /// The queue.
        queue: QueueId,
        /// Its device's id.
        device: String,
        /// Its label; may be empty.
        label: String,
    },
    /// A queue was running or suspended from `start_ns` to `end_ns`.
    Span {
        /// Its process.
        pid: u32,
        /// The queue.
        queue: QueueId,
        /// Running or suspended.
        state: SpanState,
        /// Start.
        start_ns: u64,
        /// End; not before the start.
        end_ns: u64,
    },
    /// A queue became ready or idle (as the daemon heard it).
    QueueState {
        /// Its process.
        pid: u32,
        /// The queue.
        queue: QueueId,
        /// Ready or idle.
        ready: bool,
        /// When the daemon received it.
        at_ns: u64,
    },
    /// The policy decided.
    Decision {
        /// When the decision started.
        at_ns: u64,
        /// How long it took, at most 1 hour.
        latency_ns: u64,
        /// What prompted it.
        cause: DecisionCause,
        /// Queues it suspended.
        suspended: u32,
        /// Queues it resumed.
        resumed: u32,
    },
    /// A hint was given (by an agent or the CLI).
    Hint {
        /// When the daemon received it.
        at_ns: u64,
        /// What it was about.
        target: Target,
        /// The hint.
        hint: Hint,
    },
}

/// What a queue was doing during a span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanState {
    /// Allowed to run.
    Running,
    /// Held back by the scheduler.
    Suspended,
}

/// What prompted a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionCause {
    /// A queue became ready or idle.
    QueueState,
    /// A hint arrived.
    Hint,
    /// The policy's wake-up time came.
    Timer,
    /// A queue was created, destroyed or reconfigured.
    Queue,
    /// The policy was switched.
    Policy,
    /// A client connected or went away.
    Client,
}

impl TraceChunk {
    pub(crate) fn validate(&self) -> Result<(), ProtocolError> {
        check::list_len("records", self.records.len(), MAX_TRACE_CHUNK)?;
        if self.records.is_empty() && !self.complete {
            return Err(ProtocolError::invalid(
                "records",
                "an empty chunk must be the last one (complete), or reading never ends",
            ));
        }
        for (i, r) in self.records.iter().enumerate() {
            r.validate()
                .map_err(|e| e.within(&check::at("records", i)))?;
        }
        Ok(())
    }
}

impl TraceRecord {
    fn validate(&self) -> Result<(), ProtocolError> {
        match self {
            TraceRecord::Process { pid, name } => {
                check::pid("pid", *pid)?;
                check::text("name", name, MAX_NAME_LEN)
            }
            TraceRecord::Queue {
                pid, device, label, ..
            } => {
                check::pid("pid", *pid)?;
                check::ident("device", device, MAX_LABEL_LEN)?;
                check::text_or_empty("label", label, MAX_LABEL_LEN)
            }
            TraceRecord::Span {
                pid,
                start_ns,
                end_ns,
                ..
            } => {
                check::pid("pid", *pid)?;
                check::range("end_ns", *end_ns, *start_ns, u64::MAX)
            }
            TraceRecord::QueueState { pid, .. } => check::pid("pid", *pid),
            TraceRecord::Decision { latency_ns, .. } => {
                check::range("latency_ns", *latency_ns, 0, MAX_DURATION_NS)
            }
            TraceRecord::Hint { target, hint, .. } => {
                target.validate().map_err(|e| e.within("target"))?;
                hint.validate().map_err(|e| e.within("hint"))?;
                hint.check_scope(target.scope())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{QueueRef, WirePriority};

    fn chunk(r: TraceRecord) -> TraceChunk {
        TraceChunk {
            records: vec![r],
            next: 1,
            complete: false,
        }
    }

    fn field(r: TraceRecord) -> String {
        chunk(r)
            .validate()
            .unwrap_err()
            .field()
            .unwrap()
            .to_string()
    }

    #[test]
    fn empty_chunk_must_be_complete() {
        let mut c = TraceChunk {
            records: vec![],
            next: 0,
            complete: false,
        };
        assert_eq!(c.validate().unwrap_err().field(), Some("records"));
        c.complete = true;
        assert!(c.validate().is_ok());
    }

    #[test]
    fn chunk_is_bounded() {
        let r = TraceRecord::QueueState {
            pid: 1,
            queue: QueueId(1),
            ready: true,
            at_ns: 0,
        };
        let c = TraceChunk {
            records: vec![r; MAX_TRACE_CHUNK + 1],
            next: 0,
            complete: true,
        };
        assert_eq!(c.validate().unwrap_err().field(), Some("records"));
    }

    #[test]
    fn span_must_not_end_before_it_starts() {
        let r = TraceRecord::Span {
            pid: 1,
            queue: QueueId(1),
            state: SpanState::Suspended,
            start_ns: 10,
            end_ns: 9,
        };
        assert_eq!(field(r), "records[0].end_ns");
    }

    #[test]
    fn decision_latency_bounded() {
        let r = TraceRecord::Decision {
            at_ns: 0,
            latency_ns: MAX_DURATION_NS + 1,
            cause: DecisionCause::Timer,
            suspended: 0,
            resumed: 0,
        };
        assert_eq!(field(r), "records[0].latency_ns");
    }

    #[test]
    fn track_names_checked() {
        let r = TraceRecord::Process {
            pid: 1,
            name: String::new(),
        };
        assert_eq!(field(r), "records[0].name");
        let r = TraceRecord::Queue {
            pid: 0,
            queue: QueueId(1),
            device: "sim-0".into(),
            label: String::new(),
        };
        assert_eq!(field(r), "records[0].pid");
        let r = TraceRecord::Queue {
            pid: 1,
            queue: QueueId(1),
            device: "sim 0".into(),
            label: String::new(),
        };
        assert_eq!(field(r), "records[0].device");
    }

    #[test]
    fn traced_hints_checked() {
        let r = TraceRecord::Hint {
            at_ns: 0,
            target: Target::Queue(QueueRef {
                pid: 1,
                queue: QueueId(1),
            }),
            hint: Hint::Priority(WirePriority(500)),
        };
        assert_eq!(field(r), "records[0].hint.priority");
        let r = TraceRecord::Hint {
            at_ns: 0,
            target: Target::All,
            hint: Hint::Priority(WirePriority(5)),
        };
        assert_eq!(field(r), "records[0].target");
    }
}
