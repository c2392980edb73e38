//! The Chrome trace event format (what Perfetto and `chrome://tracing` open): the one writer
//! Baton's timelines go through — the demo's phases ([`Trace`](crate::Trace)) and the daemon's
//! recordings (`baton trace`).
//!
//! A [`ChromeTrace`] is a list of [`TraceEvent`]s: metadata naming a process or a thread
//! (track), complete events (a span with a duration) and instant events. Each user picks its
//! own event arguments `A` (an untagged enum of the argument objects it writes), which must
//! include the names metadata events carry ([`NameArgs`]). Times are in microseconds.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// A trace document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChromeTrace<A> {
    /// [`TRACE_SCHEMA`]; trace viewers ignore it.
    pub schema: String,
    /// The events, in any order.
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<TraceEvent<A>>,
    /// The unit the viewer shows times in: `"ms"`.
    #[serde(rename = "displayTimeUnit")]
    pub display_time_unit: String,
    /// How the recording went, for traces recorded with a limit.
    #[serde(rename = "otherData", default, skip_serializing_if = "Option::is_none")]
    pub other_data: Option<RecordCounts>,
}

/// The schema of every trace Baton writes.
pub const TRACE_SCHEMA: &str = "baton.trace/1";

/// What a limited recording kept and dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordCounts {
    /// Records in the trace.
    pub records: u64,
    /// Records dropped at the limit.
    pub dropped: u64,
}

/// What an event is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// Names a process or thread (`"M"`).
    #[serde(rename = "M")]
    Metadata,
    /// A span with a start and a duration (`"X"`).
    #[serde(rename = "X")]
    Complete,
    /// A moment (`"i"`).
    #[serde(rename = "i")]
    Instant,
}

/// How far an instant event's mark reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InstantScope {
    /// Its thread's track (`"t"`).
    #[serde(rename = "t")]
    Thread,
    /// Its whole process (`"p"`).
    #[serde(rename = "p")]
    Process,
}

/// The arguments of a metadata event: the name of a process or a thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameArgs {
    /// The name shown on the track.
    pub name: String,
}

/// One event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent<A> {
    /// What it is.
    pub ph: EventKind,
    /// Its name (for metadata, what it names: `process_name`, `thread_name`).
    pub name: String,
    /// Its category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cat: Option<String>,
    /// Its process track.
    pub pid: u64,
    /// Its thread track.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tid: Option<u64>,
    /// When, in µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<f64>,
    /// How long (complete events), in µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    /// The reach of an instant event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s: Option<InstantScope>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<A>,
}

impl<A: From<NameArgs>> TraceEvent<A> {
    /// Names process `pid`'s track.
    pub fn process_name(pid: u64, name: impl Into<String>) -> TraceEvent<A> {
        TraceEvent::metadata("process_name", pid, None, name.into())
    }

    /// Names thread `tid` of process `pid`.
    pub fn thread_name(pid: u64, tid: u64, name: impl Into<String>) -> TraceEvent<A> {
        TraceEvent::metadata("thread_name", pid, Some(tid), name.into())
    }

    fn metadata(what: &str, pid: u64, tid: Option<u64>, name: String) -> TraceEvent<A> {
        TraceEvent {
            ph: EventKind::Metadata,
            name: what.into(),
            cat: None,
            pid,
            tid,
            ts: None,
            dur: None,
            s: None,
            args: Some(NameArgs { name }.into()),
        }
    }
}

impl<A> TraceEvent<A> {
    /// A span `name` of category `cat` on thread `tid` of process `pid`, from `ts` for `dur`
    /// µs.
    pub fn complete(
        cat: &str,
        name: impl Into<String>,
        (pid, tid): (u64, u64),
        ts: f64,
        dur: f64,
    ) -> TraceEvent<A> {
        TraceEvent {
            ph: EventKind::Complete,
            name: name.into(),
            cat: Some(cat.into()),
            pid,
            tid: Some(tid),
            ts: Some(ts),
            dur: Some(dur),
            s: None,
            args: None,
        }
    }

    /// A moment `name` of category `cat` on thread `tid` of process `pid` at `ts` µs, marked
    /// across `scope`.
    pub fn instant(
        cat: &str,
        name: impl Into<String>,
        (pid, tid): (u64, u64),
        ts: f64,
        scope: InstantScope,
    ) -> TraceEvent<A> {
        TraceEvent {
            ph: EventKind::Instant,
            name: name.into(),
            cat: Some(cat.into()),
            pid,
            tid: Some(tid),
            ts: Some(ts),
            dur: None,
            s: Some(scope),
            args: None,
        }
    }

    /// With `args`.
    pub fn with_args(mut self, args: impl Into<A>) -> TraceEvent<A> {
        self.args = Some(args.into());
        self
    }
}

impl<A> ChromeTrace<A> {
    /// A trace of `events`, shown in milliseconds.
    pub fn new(events: Vec<TraceEvent<A>>) -> ChromeTrace<A> {
        ChromeTrace {
            schema: TRACE_SCHEMA.into(),
            trace_events: events,
            display_time_unit: "ms".into(),
            other_data: None,
        }
    }

    /// With the counts of a limited recording.
    pub fn with_counts(mut self, counts: RecordCounts) -> ChromeTrace<A> {
        self.other_data = Some(counts);
        self
    }
}

impl<A: Serialize> ChromeTrace<A> {
    /// The trace as compact JSON.
    pub fn to_vec(&self) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(self)
    }

    /// Writes the trace to `path`.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.to_vec().map_err(io::Error::other)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(untagged)]
    enum Args {
        Name(NameArgs),
        Count { count: u32 },
    }

    impl From<NameArgs> for Args {
        fn from(n: NameArgs) -> Args {
            Args::Name(n)
        }
    }

    #[test]
    fn events_have_the_fields_their_kind_needs() {
        let trace = ChromeTrace::new(vec![
            TraceEvent::<Args>::process_name(1, "HP alone"),
            TraceEvent::thread_name(1, 2, "HP queue"),
            TraceEvent::complete("command", "k", (1, 2), 25.0, 62.5)
                .with_args(Args::Count { count: 3 }),
            TraceEvent::instant("state", "ready", (1, 2), 3.0, InstantScope::Thread),
        ])
        .with_counts(RecordCounts {
            records: 4,
            dropped: 0,
        });
        let v = serde_json::to_value(&trace).unwrap();
        assert_eq!(
            v,
            serde_json::json!({
                "schema": "baton.trace/1",
                "displayTimeUnit": "ms",
                "otherData": {"records": 4, "dropped": 0},
                "traceEvents": [
                    {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "HP alone"}},
                    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2,
                     "args": {"name": "HP queue"}},
                    {"ph": "X", "name": "k", "cat": "command", "pid": 1, "tid": 2, "ts": 25.0,
                     "dur": 62.5, "args": {"count": 3}},
                    {"ph": "i", "name": "ready", "cat": "state", "pid": 1, "tid": 2, "ts": 3.0,
                     "s": "t"},
                ],
            })
        );
        let back: ChromeTrace<Args> = serde_json::from_value(v).unwrap();
        assert_eq!(back, trace);
        let plain = serde_json::to_value(ChromeTrace::<Args>::new(Vec::new())).unwrap();
        assert!(plain.get("otherData").is_none());
    }

    #[test]
    fn traces_are_written_to_files() {
        let dir = std::env::temp_dir().join(format!("baton-chrome-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        let trace = ChromeTrace::new(vec![TraceEvent::<Args>::process_name(0, "x")]);
        trace.write(&path).unwrap();
        let back: ChromeTrace<Args> =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(back, trace);
        assert!(trace.write(&dir.join("missing/t.json")).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
