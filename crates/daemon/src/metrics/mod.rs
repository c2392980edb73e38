//! The metrics endpoint (`--metrics ADDR`): Prometheus text at `/metrics`, the daemon's status
//! and process list as JSON at `/status`.
//!
//! A deliberately tiny HTTP/1.1 responder: `GET` only, one request per connection, headers
//! read up to 8 KiB within 5 s, `Connection: close`. Each request takes one snapshot from the
//! core, so a scrape sees one consistent moment; `render` writes it as OpenMetrics text, with
//! per-queue series bounded by `bound`, whose state (which queues have series, what the folded
//! ones added) lives here, between scrapes, not in the core.

mod bound;
mod render;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

use crate::event::Event;
use bound::Bound;
use render::render;

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
    // Which queues have series of their own, kept between scrapes (see `bound`).
    let bound = Arc::new(Mutex::new(Bound::default()));
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                tokio::spawn(respond(s, core.clone(), Arc::clone(&bound)));
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

async fn respond(mut s: TcpStream, core: mpsc::UnboundedSender<Event>, bound: Arc<Mutex<Bound>>) {
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
                let body = render(&snap, &mut baton_core::locks::lock(&bound));
                (
                    "200 OK",
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    body,
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
