//! `/metrics` of a real daemon scheduling simulated client processes (`baton-sim-client`),
//! scraped over HTTP and read by a strict OpenMetrics parser: names, types, labels, the values
//! a known preemption leaves, and the bound on per-queue series.

mod support;

use std::io::{Read, Write};

use baton_daemon::DaemonConfig;
use openmetrics_parser::OpenMetricsType;
use support::scrape::Scrape;
use support::*;

/// How many queues have series of their own (`metrics::bound::MAX_QUEUE_SERIES`).
const MAX_QUEUE_SERIES: usize = 64;

fn daemon_with_metrics(tag: &str) -> InProcess {
    let mut cfg = DaemonConfig::new(temp_dir(tag).join("baton.sock"));
    cfg.metrics = Some("127.0.0.1:0".parse().unwrap());
    cfg.policy = "hpf".into();
    InProcess::start(cfg)
}

/// One `GET /metrics`: the content type and the body.
fn get_metrics(d: &InProcess) -> (String, String) {
    let mut s = std::net::TcpStream::connect(d.metrics.unwrap()).unwrap();
    s.set_read_timeout(Some(LIMIT)).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").expect("a head and a body");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let ctype = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Type: "))
        .expect("a content type");
    (ctype.to_string(), body.to_string())
}

fn scrape(d: &InProcess) -> Scrape {
    Scrape::parse(&get_metrics(d).1)
}

#[test]
fn a_scrape_parses_and_counts_a_known_preemption() {
    let d = daemon_with_metrics("metrics-preemption");
    let mut be = Sim::start(&d.socket, 1, 0);
    let mut hp = Sim::start(&d.socket, 1, 10);
    wait_until("both registered", || {
        registered(&d.socket, hp.pid(), 1) && registered(&d.socket, be.pid(), 1)
    });
    let (hp_pid, be_pid) = (hp.pid().to_string(), be.pid().to_string());
    be.send("ready 0");
    assert!(!settled(&d.socket, be.pid(), 0, true));
    be.none_so_far("suspend");
    hp.send("ready 0");
    be.expect("suspend 0");
    // The agent answers once it applied the suspension; the daemon measures that answer.
    wait_until("the preemption measured", || {
        scrape(&d).observations("baton_preemption_latency_seconds", &[]) == 1
    });
    hp.send("idle 0");
    be.expect("resume 0");
    // HP's job (ready to idle) completed: one latency at priority 10.
    wait_until("HP's job measured", || {
        scrape(&d)
            .families
            .get("baton_job_latency_seconds")
            .is_some_and(|f| !f.series.is_empty())
    });
    let (ctype, body) = get_metrics(&d);
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    let m = Scrape::parse(&body);
    for (name, kind) in [
        ("baton_queues", OpenMetricsType::Gauge),
        ("baton_decisions", OpenMetricsType::Counter),
        ("baton_suspensions", OpenMetricsType::Counter),
        ("baton_queue_suspensions", OpenMetricsType::Counter),
        ("baton_queue_busy_seconds", OpenMetricsType::Counter),
        ("baton_job_latency_seconds", OpenMetricsType::Histogram),
        (
            "baton_preemption_latency_seconds",
            OpenMetricsType::Histogram,
        ),
        ("baton_decision_latency_seconds", OpenMetricsType::Histogram),
    ] {
        assert_eq!(m.family(name).kind, kind, "{name}");
    }
    // The parser lists label names in order of name.
    assert_eq!(
        m.family("baton_queue_ready").labels,
        ["device", "pid", "queue"]
    );
    assert_eq!(m.family("baton_suspensions").labels, ["priority"]);
    assert_eq!(m.value("baton_queues", &[]), 2.0);
    assert_eq!(m.value("baton_processes", &[]), 2.0);
    assert_eq!(m.value("baton_queues_suspended", &[]), 0.0, "BE resumed");
    assert_eq!(
        m.family("baton_queue_ready").series.len(),
        2,
        "no fold below the bound"
    );
    let be_q = [("pid", be_pid.as_str()), ("queue", "q1")];
    let hp_q = [("pid", hp_pid.as_str()), ("queue", "q1")];
    assert_eq!(m.value("baton_queue_suspensions", &be_q), 1.0);
    assert_eq!(m.value("baton_queue_suspensions", &hp_q), 0.0);
    assert_eq!(m.value("baton_queue_suspended", &be_q), 0.0);
    assert_eq!(m.value("baton_queue_priority", &hp_q), 10.0);
    assert_eq!(m.value("baton_queue_priority", &be_q), 0.0);
    assert_eq!(m.value("baton_suspensions", &[("priority", "0")]), 1.0);
    assert_eq!(m.family("baton_suspensions").series.len(), 1, "HP never");
    assert_eq!(m.observations("baton_preemption_latency_seconds", &[]), 1);
    assert_eq!(
        m.observations("baton_job_latency_seconds", &[("priority", "10")]),
        1
    );
    assert!(m.value("baton_decisions", &[]) >= 2.0);
}

#[test]
fn queue_series_are_bounded_with_more_queues_than_the_cap() {
    let d = daemon_with_metrics("metrics-bound");
    // BE's queues outrank LOW's, so HPF wants their transitions: a BE queue that becomes ready
    // is reported, and is then the most active.
    let low = Sim::start(&d.socket, 1, -5);
    wait_until("LOW registered", || registered(&d.socket, low.pid(), 1));
    let n = MAX_QUEUE_SERIES + 6;
    let mut be = Sim::start(&d.socket, n, 0);
    wait_until("BE registered", || registered(&d.socket, be.pid(), n));
    let be_pid = be.pid().to_string();
    let newest = format!("q{n}");
    // By age alone the newest BE queue would be folded into `other`.
    be.send(&format!("ready {}", n - 1));
    wait_until("the newest queue ready in the metrics", || {
        let m = scrape(&d);
        m.get("baton_queues_ready", &[]) == Some(1.0)
            && m.get("baton_suspensions", &[("priority", "-5")]) == Some(1.0)
    });
    let (_, body) = get_metrics(&d);
    let m = Scrape::parse(&body);
    assert_eq!(m.value("baton_queues", &[]), (n + 1) as f64);
    for (name, f) in &m.families {
        if f.labels.iter().any(|l| l == "queue") {
            let others = usize::from(name != "baton_queue_priority");
            assert_eq!(f.series.len(), MAX_QUEUE_SERIES + others, "{name}");
        }
    }
    let be_newest = [("pid", be_pid.as_str()), ("queue", newest.as_str())];
    assert_eq!(m.value("baton_queue_ready", &be_newest), 1.0);
    let other = [("pid", "other"), ("queue", "other"), ("device", "other")];
    assert_eq!(m.value("baton_queue_ready", &other), 0.0);
    assert_eq!(m.value("baton_queue_suspended", &other), 0.0);
    // LOW, the oldest queue, keeps its series; it was suspended once.
    let low_pid = low.pid().to_string();
    let low_q = [("pid", low_pid.as_str()), ("queue", "q1")];
    assert_eq!(m.value("baton_queue_suspended", &low_q), 1.0);
    assert_eq!(m.value("baton_queue_suspensions", &low_q), 1.0);
    assert!(
        body.contains("at most 64 queues have series of their own"),
        "the help states the bound"
    );
}
