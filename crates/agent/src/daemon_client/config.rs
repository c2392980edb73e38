//! How a daemon client connects and introduces its process, and how it describes a queue.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use baton_core::Clock;
use baton_protocol::{DeviceRef, Hint};

use crate::AgentConfig;

/// How a queue is described to the daemon, besides what its
/// [`QueueControl`](baton_core::QueueControl) reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueInfo {
    /// A short description for `baton list` (`stream 0x7f3a…`); may be empty.
    pub label: String,
    /// The device it runs on (the daemon groups queues by `device.id`).
    pub device: DeviceRef,
    /// Queue-scope hints given at creation (a CUDA stream priority, say); process-wide
    /// settings belong in [`ClientConfig::hints`].
    pub hints: Vec<Hint>,
}

/// How a [`DaemonClient`](crate::DaemonClient) connects and introduces its process.
#[derive(Clone)]
pub struct ClientConfig {
    /// The daemon sockets to try, in order.
    pub sockets: Vec<PathBuf>,
    /// The process's short name.
    pub name: String,
    /// Its command line.
    pub argv: Vec<String>,
    /// Process-wide hints (from `BATON_PRIORITY`, `BATON_UTILIZATION`, …).
    pub hints: Vec<Hint>,
    /// The software named in the hello.
    pub software: String,
    /// The clock stamping events and stats.
    pub clock: Arc<dyn Clock>,
    /// The first wait before reconnecting; doubles up to `max_backoff`.
    pub min_backoff: Duration,
    /// The longest wait between connection attempts.
    pub max_backoff: Duration,
    /// How long connecting and the handshake may take before the daemon counts as absent.
    pub handshake_timeout: Duration,
}

impl ClientConfig {
    /// A configuration for this process (name and command line from `/proc/self`) with the
    /// given sockets and the default timings: reconnect after 20 ms, doubling to 500 ms;
    /// handshake within 1 s.
    pub fn new(sockets: Vec<PathBuf>, clock: Arc<dyn Clock>) -> ClientConfig {
        let argv: Vec<String> = std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let name = std::fs::read_to_string("/proc/self/comm")
            .map(|s| s.trim_end().to_string())
            .ok()
            .filter(|s| !s.is_empty())
            .or_else(|| argv.first().cloned())
            .unwrap_or_else(|| "?".into());
        ClientConfig {
            sockets,
            name,
            argv,
            hints: Vec::new(),
            software: format!("baton-agent {}", env!("CARGO_PKG_VERSION")),
            clock,
            min_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(500),
            handshake_timeout: Duration::from_secs(1),
        }
    }

    /// The configuration `cfg` (the process's `BATON_*` settings) asks for.
    pub fn from_agent_config(cfg: &AgentConfig, clock: Arc<dyn Clock>) -> ClientConfig {
        let mut c = ClientConfig::new(crate::socket_candidates(cfg.socket.as_deref()), clock);
        c.hints = cfg.process_hints();
        c
    }
}
