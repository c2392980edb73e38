//! A snapshot as OpenMetrics text: names follow Prometheus conventions (base units in the name,
//! `_total` on counters, which the encoder adds), and label sets are bounded (per queue by
//! [`super::bound`], per priority by [`crate::service`]).

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::bound::{Bound, MAX_QUEUE_SERIES};
use crate::core::views::{QueueCounts, Snapshot};
use crate::service::MAX_PRIORITY_SERIES;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PolicyLabels {
    policy: String,
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    pid: String,
    queue: String,
    device: String,
}

impl QueueLabels {
    /// The labels of the aggregate of queues without series of their own.
    fn other() -> QueueLabels {
        let o = || "other".to_string();
        QueueLabels {
            pid: o(),
            queue: o(),
            device: o(),
        }
    }
}

type FloatGauge = Gauge<f64, AtomicU64>;
type FloatCounter = Counter<f64, AtomicU64>;

/// The per-queue families, filled series by series.
#[derive(Default)]
struct QueueFamilies {
    ready: Family<QueueLabels, Gauge>,
    suspended: Family<QueueLabels, Gauge>,
    in_flight: Family<QueueLabels, Gauge>,
    priority: Family<QueueLabels, Gauge>,
    device_share: Family<QueueLabels, FloatGauge>,
    launched: Family<QueueLabels, Counter>,
    completed: Family<QueueLabels, Counter>,
    busy: Family<QueueLabels, FloatCounter>,
    suspended_secs: Family<QueueLabels, FloatCounter>,
    suspensions: Family<QueueLabels, Counter>,
}

impl QueueFamilies {
    fn counts(&self, l: &QueueLabels, c: &QueueCounts) {
        self.launched.get_or_create(l).inc_by(c.launched);
        self.completed.get_or_create(l).inc_by(c.completed);
        self.busy.get_or_create(l).inc_by(c.busy_secs);
        self.suspended_secs
            .get_or_create(l)
            .inc_by(c.suspended_secs);
        self.suspensions.get_or_create(l).inc_by(c.suspensions);
    }

    fn register(self, reg: &mut Registry) {
        let help = |what: &str| {
            format!(
                "{what}; at most {MAX_QUEUE_SERIES} queues have series of their own, the most \
                 active first, the rest are summed into pid, queue and device \"other\""
            )
        };
        reg.register(
            "queue_ready",
            help("1 if the queue has unfinished work"),
            self.ready,
        );
        reg.register(
            "queue_suspended",
            help("1 if the queue is held suspended"),
            self.suspended,
        );
        reg.register(
            "queue_in_flight",
            help("Commands in flight"),
            self.in_flight,
        );
        reg.register(
            "queue_priority",
            help("The priority in force for the queue (its own, else its process's)"),
            self.priority,
        );
        reg.register(
            "queue_device_share_ratio",
            help("The queue's recent share of its device's time, 0 to 1"),
            self.device_share,
        );
        reg.register(
            "queue_commands_launched",
            help("Commands launched"),
            self.launched,
        );
        reg.register(
            "queue_commands_completed",
            help("Commands completed"),
            self.completed,
        );
        reg.register(
            "queue_busy_seconds",
            help("Time with a command in flight, as the queue's agent measured it"),
            self.busy,
        );
        reg.register(
            "queue_suspended_seconds",
            help("Time the queue spent suspended"),
            self.suspended_secs,
        );
        reg.register(
            "queue_suspensions",
            help("Times the queue was told to suspend"),
            self.suspensions,
        );
    }
}

/// The snapshot as OpenMetrics text; `bound` picks the queues with series of their own.
pub(crate) fn render(snap: &Snapshot, bound: &mut Bound) -> String {
    let mut reg = Registry::with_prefix("baton");
    let st = &snap.status;
    let gauge = |reg: &mut Registry, name: &str, help: &str, v: u32| {
        let g: Gauge = Gauge::default();
        g.set(i64::from(v));
        reg.register(name, help, g);
    };
    gauge(&mut reg, "agents", "Agent connections", st.agents);
    gauge(&mut reg, "processes", "Scheduled processes", st.processes);
    gauge(&mut reg, "queues", "Scheduled queues", st.queues);
    gauge(
        &mut reg,
        "queues_ready",
        "Queues with unfinished work",
        st.ready_queues,
    );
    gauge(
        &mut reg,
        "queues_suspended",
        "Queues held suspended",
        st.suspended_queues,
    );
    gauge(&mut reg, "devices", "Devices with a queue", st.devices);
    let counter = |reg: &mut Registry, name: &str, help: &str, v: u64| {
        let c: Counter = Counter::default();
        c.inc_by(v);
        reg.register(name, help, c);
    };
    gauge(
        &mut reg,
        "queues_stalled",
        "Queues whose work in flight completed nothing for the stall limit (--stall-ms) while \
         they held others back: they hold nobody back until they complete work again",
        snap.stalls.0,
    );
    counter(
        &mut reg,
        "stalls",
        "Times a queue was found stalled (see baton_queues_stalled)",
        snap.stalls.1,
    );
    counter(
        &mut reg,
        "decisions",
        "Policy decisions taken",
        st.decisions,
    );
    counter(
        &mut reg,
        "operations_sent",
        "Operations frames sent to agents",
        st.operations_sent,
    );
    reg.register(
        "decision_latency_seconds",
        "From a decision round's first event arriving to its operations being handed to the agents' writers",
        snap.latency.clone(),
    );
    let by_priority = format!(
        "; by the priority in force for the queue, the first {MAX_PRIORITY_SERIES} priorities \
         seen with series of their own, later ones as \"other\""
    );
    let svc = &snap.service;
    reg.register(
        "job_latency_seconds",
        format!(
            "How long a queue's jobs took, from becoming ready to becoming idle again{by_priority}"
        ),
        svc.job_latency.clone(),
    );
    reg.register(
        "busy_seconds",
        format!("Time queues had a command in flight, as their agents measured it{by_priority}"),
        svc.busy.clone(),
    );
    reg.register(
        "commands_completed",
        format!("Commands queues completed, as their agents counted them{by_priority}"),
        svc.completed.clone(),
    );
    reg.register(
        "suspensions",
        format!("Times queues were told to suspend{by_priority}"),
        svc.suspensions.clone(),
    );
    reg.register(
        "preemption_latency_seconds",
        "From an operations frame that suspends queues being handed to the agent's writer to the \
         agent's answer that it applied the frame arriving",
        svc.preemption_latency.clone(),
    );
    let fam = QueueFamilies::default();
    let shown = bound.apply(&snap.queues);
    for q in &shown.own {
        let l = QueueLabels {
            pid: q.pid.to_string(),
            queue: q.queue.to_string(),
            device: q.device.clone(),
        };
        fam.ready.get_or_create(&l).set(i64::from(q.ready));
        fam.suspended.get_or_create(&l).set(i64::from(q.suspended));
        fam.in_flight.get_or_create(&l).set(i64::from(q.in_flight));
        fam.priority.get_or_create(&l).set(i64::from(q.priority));
        fam.device_share.get_or_create(&l).set(q.device_share);
        fam.counts(&l, &q.counts);
    }
    if let Some(o) = &shown.other {
        let l = QueueLabels::other();
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        fam.ready.get_or_create(&l).set(n(o.ready));
        fam.suspended.get_or_create(&l).set(n(o.suspended));
        fam.in_flight.get_or_create(&l).set(n(o.in_flight));
        fam.device_share.get_or_create(&l).set(o.device_share);
        fam.counts(&l, &o.counts);
    }
    fam.register(&mut reg);
    let state = Family::<PolicyLabels, Gauge>::default();
    let (policy, counters) = &snap.policy;
    for (name, v) in counters {
        let l = PolicyLabels {
            policy: (*policy).to_string(),
            name: (*name).to_string(),
        };
        state
            .get_or_create(&l)
            .set(i64::try_from(*v).unwrap_or(i64::MAX));
    }
    reg.register(
        "policy_state",
        "The running policy's own figures (guard: free_devices, probes, flips, slowdown_permille)",
        state,
    );
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &reg) {
        tracing::error!(error = %e, "metrics encoding failed");
    }
    out
}

#[cfg(test)]
mod tests;
