//! `/metrics` of realistic snapshots, read back by a strict OpenMetrics parser; the Grafana
//! dashboard checked against it.

use std::collections::BTreeSet;

use baton_core::{Nanos, XQueueId};
use baton_protocol::{ClientId, DaemonStatus, LatencySummary, ProcessList, QueueId};
use openmetrics_parser::OpenMetricsType::{Counter, Gauge, Histogram};

use super::*;
use crate::core::views::QueueSample;
use crate::latency::Latencies;
use crate::service::ServiceStats;

#[path = "../../../tests/support/scrape.rs"]
mod scrape;
use scrape::Scrape;

/// A queue of process `pid`, device `sim-0`.
fn queue(id: u64, pid: u32, priority: i32) -> QueueSample {
    QueueSample {
        id: XQueueId(id),
        pid,
        queue: QueueId(id),
        device: "sim-0".into(),
        priority,
        ready: false,
        suspended: false,
        in_flight: 0,
        device_share: 0.0,
        commands_per_sec: 0.0,
        counts: QueueCounts::default(),
    }
}

fn snapshot(queues: Vec<QueueSample>, service: &ServiceStats) -> Snapshot {
    let n = |x: usize| u32::try_from(x).unwrap();
    let pids: BTreeSet<u32> = queues.iter().map(|q| q.pid).collect();
    Snapshot {
        status: DaemonStatus {
            software: "test".into(),
            protocol: baton_protocol::PROTOCOL_VERSION,
            pid: 1,
            policy: "hpf".into(),
            uptime_ns: 1,
            agents: n(pids.len()),
            clis: 0,
            processes: n(pids.len()),
            queues: n(queues.len()),
            ready_queues: n(queues.iter().filter(|q| q.ready).count()),
            suspended_queues: n(queues.iter().filter(|q| q.suspended).count()),
            devices: 1,
            decisions: 7,
            decision_latency: LatencySummary::default(),
            operations_sent: 3,
            tracing: false,
            socket: "/tmp/baton.sock".into(),
            metrics: None,
        },
        list: ProcessList {
            processes: Vec::new(),
            truncated: false,
            others: vec![],
        },
        queues,
        latency: {
            let mut l = Latencies::new();
            l.record(std::time::Duration::from_micros(40));
            l.histogram()
        },
        service: service.handles(),
        policy: ("guard", vec![("free_devices", 1), ("probes", 4)]),
        stalls: (1, 3),
    }
}

/// A service (pid 100, one queue at priority 10) beside two best-effort processes (pid 200 and
/// 300, two queues each, at 0 and −5); one best-effort queue was suspended twice.
fn realistic() -> Snapshot {
    let mut service = ServiceStats::new();
    for us in [800, 900, 1000] {
        service.job(10, Nanos::from_micros(us));
    }
    service.job(0, Nanos::from_millis(50));
    service.served(10, Nanos::from_millis(3), 30);
    service.served(0, Nanos::from_millis(1500), 100);
    service.suspended(0);
    service.suspended(0);
    service.suspending_frame_sent(ClientId(2), 1, Nanos::from_micros(10));
    service.applied(ClientId(2), 1, Nanos::from_micros(130));
    let mut hp = queue(1, 100, 10);
    hp.ready = true;
    hp.in_flight = 2;
    hp.device_share = 0.25;
    let mut be = queue(2, 200, 0);
    (be.ready, be.suspended) = (true, true);
    be.device_share = 0.75;
    be.counts = QueueCounts {
        launched: 120,
        completed: 100,
        busy_secs: 1.5,
        suspended_secs: 0.25,
        suspensions: 2,
    };
    let queues = vec![
        hp,
        be,
        queue(3, 200, 0),
        queue(4, 300, -5),
        queue(5, 300, -5),
    ];
    snapshot(queues, &service)
}

/// Every family the daemon serves, its type and labels.
const FAMILIES: &[(&str, openmetrics_parser::OpenMetricsType, &[&str])] = &[
    ("baton_agents", Gauge, &[]),
    ("baton_processes", Gauge, &[]),
    ("baton_queues", Gauge, &[]),
    ("baton_queues_ready", Gauge, &[]),
    ("baton_queues_suspended", Gauge, &[]),
    ("baton_queues_stalled", Gauge, &[]),
    ("baton_stalls", Counter, &[]),
    ("baton_devices", Gauge, &[]),
    ("baton_decisions", Counter, &[]),
    ("baton_operations_sent", Counter, &[]),
    ("baton_decision_latency_seconds", Histogram, &[]),
    ("baton_job_latency_seconds", Histogram, &["priority"]),
    ("baton_busy_seconds", Counter, &["priority"]),
    ("baton_commands_completed", Counter, &["priority"]),
    ("baton_suspensions", Counter, &["priority"]),
    ("baton_preemption_latency_seconds", Histogram, &[]),
    ("baton_queue_ready", Gauge, &["pid", "queue", "device"]),
    ("baton_queue_suspended", Gauge, &["pid", "queue", "device"]),
    ("baton_queue_in_flight", Gauge, &["pid", "queue", "device"]),
    ("baton_queue_priority", Gauge, &["pid", "queue", "device"]),
    (
        "baton_queue_device_share_ratio",
        Gauge,
        &["pid", "queue", "device"],
    ),
    (
        "baton_queue_commands_launched",
        Counter,
        &["pid", "queue", "device"],
    ),
    (
        "baton_queue_commands_completed",
        Counter,
        &["pid", "queue", "device"],
    ),
    (
        "baton_queue_busy_seconds",
        Counter,
        &["pid", "queue", "device"],
    ),
    (
        "baton_queue_suspended_seconds",
        Counter,
        &["pid", "queue", "device"],
    ),
    (
        "baton_queue_suspensions",
        Counter,
        &["pid", "queue", "device"],
    ),
    ("baton_policy_state", Gauge, &["policy", "name"]),
];

#[test]
fn every_family_parses_with_its_type_labels_and_values() {
    let text = render(&realistic(), &mut Bound::default());
    let m = Scrape::parse(&text);
    let want: BTreeSet<&str> = FAMILIES.iter().map(|f| f.0).collect();
    let got: BTreeSet<&str> = m.families.keys().map(String::as_str).collect();
    assert_eq!(got, want, "the families served");
    for (name, kind, labels) in FAMILIES {
        let f = m.family(name);
        assert_eq!(f.kind, *kind, "{name}'s type");
        let mut have = f.labels.clone();
        have.retain(|l| l != "le");
        have.sort();
        let mut expected: Vec<String> = labels.iter().map(|l| (*l).to_string()).collect();
        expected.sort();
        assert_eq!(have, expected, "{name}'s labels");
        assert!(!f.series.is_empty(), "{name} has a series");
    }
    assert_eq!(m.value("baton_queues", &[]), 5.0);
    assert_eq!(m.value("baton_queues_suspended", &[]), 1.0);
    assert_eq!(m.value("baton_queues_stalled", &[]), 1.0);
    assert_eq!(m.value("baton_stalls", &[]), 3.0);
    assert_eq!(m.value("baton_processes", &[]), 3.0);
    assert_eq!(m.family("baton_queue_ready").series.len(), 5, "no fold");
    let be = [("pid", "200"), ("queue", "q2"), ("device", "sim-0")];
    assert_eq!(m.value("baton_queue_suspensions", &be), 2.0);
    assert_eq!(m.value("baton_queue_busy_seconds", &be), 1.5);
    assert_eq!(m.value("baton_queue_commands_completed", &be), 100.0);
    assert_eq!(m.value("baton_queue_device_share_ratio", &be), 0.75);
    assert_eq!(m.value("baton_queue_suspended", &be), 1.0);
    assert_eq!(
        m.value("baton_queue_priority", &[("pid", "300"), ("queue", "q4")]),
        -5.0
    );
    assert_eq!(m.value("baton_suspensions", &[("priority", "0")]), 2.0);
    assert_eq!(m.value("baton_busy_seconds", &[("priority", "0")]), 1.5);
    assert_eq!(
        m.value("baton_commands_completed", &[("priority", "10")]),
        30.0
    );
    assert_eq!(
        m.observations("baton_job_latency_seconds", &[("priority", "10")]),
        3
    );
    assert_eq!(
        m.observations("baton_job_latency_seconds", &[("priority", "0")]),
        1
    );
    assert_eq!(m.observations("baton_preemption_latency_seconds", &[]), 1);
    assert_eq!(m.observations("baton_decision_latency_seconds", &[]), 1);
    assert_eq!(
        m.value(
            "baton_policy_state",
            &[("policy", "guard"), ("name", "probes")]
        ),
        4.0
    );
    // The help says what the bound is.
    assert!(
        text.contains("at most 64 queues have series of their own"),
        "{text}"
    );
}

#[test]
fn queue_series_are_bounded_and_the_rest_summed_as_other() {
    let service = ServiceStats::new();
    let n = MAX_QUEUE_SERIES + 36;
    let mut queues: Vec<QueueSample> = (1..=n)
        .map(|i| {
            queue(
                u64::try_from(i).unwrap(),
                100 + u32::try_from(i).unwrap(),
                0,
            )
        })
        .collect();
    // The two newest queues are the only active ones; three old ones are suspended.
    for q in &mut queues[n - 2..] {
        q.ready = true;
    }
    for q in &mut queues[..3] {
        q.suspended = true;
        q.counts.suspensions = 1;
    }
    for q in &mut queues[MAX_QUEUE_SERIES..] {
        q.counts.launched = 10;
    }
    let text = render(&snapshot(queues, &service), &mut Bound::default());
    let m = Scrape::parse(&text);
    for (name, _, labels) in FAMILIES {
        if labels.contains(&"queue") {
            let f = m.family(name);
            // `other` has no priority of its own.
            let most = MAX_QUEUE_SERIES + usize::from(*name != "baton_queue_priority");
            assert_eq!(f.series.len(), most, "{name}");
        }
    }
    let newest = (n).to_string();
    assert_eq!(
        m.value("baton_queue_ready", &[("queue", &format!("q{newest}"))]),
        1.0,
        "the most active queue has its own series"
    );
    let other = [("pid", "other"), ("queue", "other"), ("device", "other")];
    // Folded: q63 to q98, between the 62 oldest and the two active ones.
    assert_eq!(m.value("baton_queue_ready", &other), 0.0);
    assert_eq!(m.value("baton_queue_suspended", &other), 0.0);
    assert_eq!(
        m.value("baton_queue_commands_launched", &other),
        34.0 * 10.0,
        "the folded queues with launches: 65th to 98th"
    );
    assert_eq!(m.value("baton_queue_suspensions", &[("queue", "q1")]), 1.0);
}

#[test]
fn the_dashboard_reads_only_metrics_the_daemon_serves() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/grafana/baton-dashboard.json"
    );
    let json = std::fs::read_to_string(path).expect("the dashboard");
    let d: serde_json::Value = serde_json::from_str(&json).expect("the dashboard is JSON");
    let served = Scrape::parse(&render(&realistic(), &mut Bound::default())).sample_names();
    assert_eq!(d["__inputs"][0]["name"], "DS_PROMETHEUS");
    let ds = serde_json::json!({"type": "prometheus", "uid": "${DS_PROMETHEUS}"});
    // Every PromQL expression: panels' targets and template variables' queries.
    let mut exprs = Vec::new();
    let panels = d["panels"].as_array().expect("panels");
    for p in panels {
        assert_eq!(p["datasource"], ds, "panel {}", p["title"]);
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "panel {} has a query", p["title"]);
        for t in targets {
            assert_eq!(t["datasource"], ds, "panel {}", p["title"]);
            exprs.push(t["expr"].as_str().expect("an expr").to_string());
        }
    }
    for v in d["templating"]["list"].as_array().expect("variables") {
        assert_eq!(v["datasource"], ds, "variable {}", v["name"]);
        exprs.push(v["definition"].as_str().expect("a query").to_string());
    }
    let mut used = BTreeSet::new();
    for e in &exprs {
        let names = metric_names(e);
        assert!(!names.is_empty(), "{e} reads no Baton metric");
        for n in names {
            assert!(
                served.contains(&n),
                "the dashboard reads {n}, which the daemon does not serve ({e})"
            );
            used.insert(n);
        }
    }
    // The panels an operator needs are there.
    for need in [
        "baton_job_latency_seconds_bucket",
        "baton_busy_seconds_total",
        "baton_suspensions_total",
        "baton_preemption_latency_seconds_bucket",
        "baton_queues_ready",
        "baton_queues_suspended",
        "baton_decision_latency_seconds_bucket",
    ] {
        assert!(used.contains(need), "no panel reads {need}");
    }
}

/// The `baton_…` identifiers in a PromQL expression (outside string literals).
fn metric_names(expr: &str) -> Vec<String> {
    let mut code = String::new();
    for (i, part) in expr.split('"').enumerate() {
        // Even parts are outside quotes (PromQL label values hold no escaped quotes here).
        code.push_str(if i % 2 == 0 { part } else { " " });
    }
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("baton_") {
        let boundary = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
        let tail = &rest[i..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        if boundary {
            out.push(tail[..len].to_string());
        }
        rest = &tail[len..];
    }
    out
}

#[test]
fn metric_names_are_found_in_promql() {
    assert_eq!(
        metric_names("sum(rate(baton_a_total{x=\"baton_no\"}[1m])) / xbaton_b + baton_c"),
        vec!["baton_a_total", "baton_c"]
    );
}
