//! The metrics endpoint (`--metrics ADDR`): Prometheus text at `/metrics`, the daemon's status
//! and process list as JSON at `/status`.
//!
//! A deliberately tiny HTTP/1.1 responder: `GET` only, one request per connection, headers
//! read up to 8 KiB within 5 s, `Connection: close`. Each request takes one snapshot from the
//! core, so a scrape sees one consistent moment.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use crate::core::views::Snapshot;
use crate::event::Event;

const MAX_REQUEST: usize = 8 * 1024;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// The version of `/status`'s shape.
const STATUS_SCHEMA: &str = "baton.daemon-status/1";

/// What `/status` answers: the daemon's state and every scheduled process.
#[derive(serde::Serialize)]
struct StatusDocument<'a> {
    schema: &'static str,
    status: &'a baton_protocol::DaemonStatus,
    processes: &'a baton_protocol::ProcessList,
}

/// Serves the endpoint until the task is aborted.
pub(crate) async fn serve(listener: TcpListener, core: mpsc::UnboundedSender<Event>) {
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                tokio::spawn(respond(s, core.clone()));
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// The path of a `GET` request's first line, if that is what `head` starts with.
pub(crate) fn get_path(head: &str) -> Option<&str> {
    let line = head.lines().next()?;
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next(), parts.next()) {
        (Some("GET"), Some(path), Some(v)) if v.starts_with("HTTP/1.") => {
            Some(path.split('?').next().unwrap_or(path))
        }
        _ => None,
    }
}

async fn respond(mut s: TcpStream, core: mpsc::UnboundedSender<Event>) {
    let mut head = Vec::with_capacity(512);
    let read = tokio::time::timeout(REQUEST_TIMEOUT, async {
        let mut chunk = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
            match s.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
        true
    })
    .await;
    if !matches!(read, Ok(true)) {
        return;
    }
    let head = String::from_utf8_lossy(&head);
    let (status, ctype, body) = match get_path(&head) {
        None => (
            "405 Method Not Allowed",
            "text/plain",
            "only GET\n".to_string(),
        ),
        Some(path @ ("/metrics" | "/status" | "/status.json" | "/")) => {
            let (tx, rx) = oneshot::channel();
            if core.send(Event::Snapshot { reply: tx }).is_err() {
                return;
            }
            let Ok(snap) = rx.await else { return };
            if path == "/metrics" {
                (
                    "200 OK",
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    render(&snap),
                )
            } else {
                let doc = StatusDocument {
                    schema: STATUS_SCHEMA,
                    status: &snap.status,
                    processes: &snap.list,
                };
                let body = serde_json::to_string(&doc).unwrap_or_default() + "\n";
                ("200 OK", "application/json", body)
            }
        }
        Some(_) => (
            "404 Not Found",
            "text/plain",
            "try /metrics or /status\n".to_string(),
        ),
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = s.write_all(reply.as_bytes()).await;
    let _ = s.shutdown().await;
}

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

/// The snapshot as Prometheus (OpenMetrics) text.
pub(crate) fn render(snap: &Snapshot) -> String {
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
    let ready = Family::<QueueLabels, Gauge>::default();
    let suspended = Family::<QueueLabels, Gauge>::default();
    let in_flight = Family::<QueueLabels, Gauge>::default();
    let launched = Family::<QueueLabels, Counter>::default();
    let share = Family::<QueueLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    let rate = Family::<QueueLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    for p in &snap.list.processes {
        for q in &p.queues {
            let l = QueueLabels {
                pid: p.pid.to_string(),
                queue: q.queue.to_string(),
                device: q.device.id.clone(),
            };
            ready.get_or_create(&l).set(i64::from(q.ready));
            suspended.get_or_create(&l).set(i64::from(q.suspended));
            in_flight.get_or_create(&l).set(i64::from(q.in_flight));
            launched.get_or_create(&l).inc_by(q.launched);
            share.get_or_create(&l).set(q.device_share);
            rate.get_or_create(&l).set(q.commands_per_sec);
        }
    }
    let suspended_secs =
        Family::<QueueLabels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
    for (pid, queue, device, secs) in &snap.suspended_seconds {
        let l = QueueLabels {
            pid: pid.to_string(),
            queue: queue.clone(),
            device: device.clone(),
        };
        suspended_secs.get_or_create(&l).inc_by(*secs);
    }
    reg.register("queue_ready", "1 if the queue has unfinished work", ready);
    reg.register(
        "queue_suspended",
        "1 if the queue is held suspended",
        suspended,
    );
    reg.register("queue_in_flight", "Commands in flight", in_flight);
    reg.register("queue_commands_launched", "Commands launched", launched);
    reg.register(
        "queue_suspended_seconds",
        "Time the queue spent suspended",
        suspended_secs,
    );
    reg.register(
        "queue_device_share_percent",
        "The queue's recent share of its device's time",
        share,
    );
    reg.register(
        "queue_commands_per_second",
        "Commands completed per second, recently",
        rate,
    );
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
mod tests {
    use super::*;

    #[test]
    fn only_get_requests_have_a_path() {
        assert_eq!(
            get_path("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Some("/metrics")
        );
        assert_eq!(
            get_path("GET /status?x=1 HTTP/1.0\r\n\r\n"),
            Some("/status")
        );
        assert_eq!(get_path("POST /metrics HTTP/1.1\r\n\r\n"), None);
        assert_eq!(get_path("GET /metrics\r\n\r\n"), None);
        assert_eq!(get_path(""), None);
    }
}
