//! What the daemon measures of the service its decisions give, for `/metrics`: how long jobs
//! take and how much device time each priority gets, how often queues are suspended, and how
//! long an agent takes to apply a suspension.
//!
//! The core feeds it from what it learns anyway: a queue's readiness periods (each Ready→Idle
//! is a **job**, its latency release to completion, as `baton_scheduler` counts them), agents'
//! counter reports (busy device time, completed commands), the suspensions it sends, and the
//! agents' `Applied` answers. Times come from the core's clock; nothing here reads one.
//!
//! Series are labelled by the queue's priority in force when the thing happened (its own, or its
//! process's). The label set is bounded: the first [`MAX_PRIORITY_SERIES`] priorities seen have
//! series of their own for the daemon's life, later ones share `priority="other"`, so every
//! series only grows and `rate()` reads them right.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::AtomicU64;

use baton_core::Nanos;
use baton_protocol::ClientId;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

/// How many priorities have series of their own; later ones are labelled `other`.
pub(crate) const MAX_PRIORITY_SERIES: usize = 16;

/// How many suspending frames per agent wait for their `Applied` at most; an agent that never
/// answers costs no more than this.
const MAX_UNANSWERED: usize = 64;

/// The label of the by-priority series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct PriorityLabels {
    /// The priority's value (`-100` to `100`), or `other`.
    pub(crate) priority: String,
}

/// A histogram constructor, so a family of histograms has its buckets.
pub(crate) type NewHistogram = fn() -> Histogram;

/// Job latencies: 10 µs to ~21 s.
fn job_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-5, 2.0, 22))
}

/// Preemption latencies: 10 µs to ~1.3 s.
fn preemption_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-5, 2.0, 18))
}

/// The measurements; handles on them share their counts (see [`ServiceStats::handles`]).
pub(crate) struct ServiceStats {
    /// The priorities that have series of their own.
    labelled: BTreeSet<i32>,
    handles: ServiceHandles,
    /// Per agent, the frames carrying suspensions not yet answered: sequence number, when sent.
    unanswered: HashMap<ClientId, VecDeque<(u64, Nanos)>>,
}

/// Handles on the measurements, for one snapshot (clones share the counts).
#[derive(Clone)]
pub(crate) struct ServiceHandles {
    /// Job latencies (readiness periods), seconds.
    pub(crate) job_latency: Family<PriorityLabels, Histogram, NewHistogram>,
    /// Device time agents measured busy, seconds.
    pub(crate) busy: Family<PriorityLabels, Counter<f64, AtomicU64>>,
    /// Commands agents completed.
    pub(crate) completed: Family<PriorityLabels, Counter>,
    /// Queue suspensions sent.
    pub(crate) suspensions: Family<PriorityLabels, Counter>,
    /// From a suspending frame's hand-off to its agent's `Applied` arriving, seconds.
    pub(crate) preemption_latency: Histogram,
}

impl ServiceStats {
    pub(crate) fn new() -> ServiceStats {
        ServiceStats {
            labelled: BTreeSet::new(),
            handles: ServiceHandles {
                job_latency: Family::new_with_constructor(job_histogram as NewHistogram),
                busy: Family::default(),
                completed: Family::default(),
                suspensions: Family::default(),
                preemption_latency: preemption_histogram(),
            },
            unanswered: HashMap::new(),
        }
    }

    /// Handles for a snapshot.
    pub(crate) fn handles(&self) -> ServiceHandles {
        self.handles.clone()
    }

    /// The label of `priority`: its own while fewer than the bound have one, else `other`.
    fn label(&mut self, priority: i32) -> PriorityLabels {
        if self.labelled.contains(&priority) || self.labelled.len() < MAX_PRIORITY_SERIES {
            self.labelled.insert(priority);
            PriorityLabels {
                priority: priority.to_string(),
            }
        } else {
            PriorityLabels {
                priority: "other".to_string(),
            }
        }
    }

    /// A job of a queue at `priority` completed after `latency`.
    pub(crate) fn job(&mut self, priority: i32, latency: Nanos) {
        let l = self.label(priority);
        self.handles
            .job_latency
            .get_or_create(&l)
            .observe(latency.as_secs_f64());
    }

    /// An agent reported `busy` more device time and `completed` more commands for a queue at
    /// `priority`.
    pub(crate) fn served(&mut self, priority: i32, busy: Nanos, completed: u64) {
        let l = self.label(priority);
        self.handles
            .busy
            .get_or_create(&l)
            .inc_by(busy.as_secs_f64());
        self.handles.completed.get_or_create(&l).inc_by(completed);
    }

    /// A queue at `priority` was told to suspend.
    pub(crate) fn suspended(&mut self, priority: i32) {
        let l = self.label(priority);
        self.handles.suspensions.get_or_create(&l).inc();
    }

    /// Frame `seq`, carrying suspensions, was handed to `client`'s writer at `at`.
    pub(crate) fn suspending_frame_sent(&mut self, client: ClientId, seq: u64, at: Nanos) {
        let q = self.unanswered.entry(client).or_default();
        if q.len() == MAX_UNANSWERED {
            q.pop_front();
        }
        q.push_back((seq, at));
    }

    /// `client` applied every frame up to `seq`; its answer arrived at `at`. A frame that
    /// carried suspensions counts its latency.
    pub(crate) fn applied(&mut self, client: ClientId, seq: u64, at: Nanos) {
        let Some(q) = self.unanswered.get_mut(&client) else {
            return;
        };
        while let Some(&(s, sent)) = q.front() {
            if s > seq {
                break;
            }
            q.pop_front();
            if s == seq {
                self.handles
                    .preemption_latency
                    .observe(at.saturating_sub(sent).as_secs_f64());
            }
        }
    }

    /// Forgets what `client` owes (its connection is gone).
    pub(crate) fn forget(&mut self, client: ClientId) {
        self.unanswered.remove(&client);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(h: &Histogram) -> u64 {
        h.count()
    }

    #[test]
    fn priorities_past_the_bound_share_one_series() {
        let mut s = ServiceStats::new();
        for p in 0..=i32::try_from(MAX_PRIORITY_SERIES).unwrap() + 3 {
            s.suspended(p);
        }
        s.suspended(0);
        let h = s.handles();
        let own = |p: &str| {
            h.suspensions
                .get(&PriorityLabels {
                    priority: p.to_string(),
                })
                .map(|c| c.get())
        };
        assert_eq!(own("0"), Some(2), "a labelled priority keeps its series");
        assert_eq!(own("15"), Some(1));
        assert_eq!(
            own("16"),
            None,
            "the 17th priority has no series of its own"
        );
        assert_eq!(own("other"), Some(4), "priorities 16 to 19");
    }

    #[test]
    fn preemption_latency_counts_answered_suspending_frames_only() {
        let mut s = ServiceStats::new();
        let (a, b) = (ClientId(1), ClientId(2));
        s.suspending_frame_sent(a, 3, Nanos::from_micros(100));
        s.suspending_frame_sent(a, 5, Nanos::from_micros(200));
        s.suspending_frame_sent(b, 1, Nanos::from_micros(200));
        // Frame 4 (a resume) answered: nothing measured, nothing dropped but frame 3.
        s.applied(a, 4, Nanos::from_micros(300));
        assert_eq!(count(&s.handles().preemption_latency), 0);
        s.applied(a, 5, Nanos::from_micros(250));
        let h = s.handles().preemption_latency;
        assert_eq!(h.count(), 1);
        assert!((h.sum() - 50e-6).abs() < 1e-12, "{}", h.sum());
        // A second answer to the same frame counts nothing.
        s.applied(a, 5, Nanos::from_micros(400));
        assert_eq!(count(&s.handles().preemption_latency), 1);
        s.forget(b);
        s.applied(b, 1, Nanos::from_micros(300));
        assert_eq!(
            count(&s.handles().preemption_latency),
            1,
            "a forgotten agent"
        );
    }

    #[test]
    fn an_agent_that_never_answers_is_bounded() {
        let mut s = ServiceStats::new();
        let c = ClientId(1);
        for seq in 1..=1000 {
            s.suspending_frame_sent(c, seq, Nanos(seq));
        }
        assert_eq!(s.unanswered[&c].len(), MAX_UNANSWERED);
        s.applied(c, 1000, Nanos(1500));
        assert_eq!(count(&s.handles().preemption_latency), 1);
        assert!(s.unanswered[&c].is_empty());
    }
}
