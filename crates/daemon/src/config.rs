//! What a daemon is told on its command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How often agents report their counters, in milliseconds (for `baton top` and `/metrics`).
pub const DEFAULT_STATS_INTERVAL_MS: u32 = 1000;

/// A daemon's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DaemonConfig {
    /// The socket to listen on.
    pub socket: PathBuf,
    /// A system daemon: socket mode 0660 for `group`; only root may change the policy.
    pub system: bool,
    /// The group allowed to use a system daemon (default: `baton` if it exists, else the
    /// daemon's own group).
    pub group: Option<String>,
    /// The policy to start with.
    pub policy: String,
    /// Where to serve Prometheus metrics and JSON status, if anywhere.
    pub metrics: Option<SocketAddr>,
    /// How often agents send their counters, in milliseconds (0: never).
    pub stats_interval_ms: u32,
    /// Exit once no agent has been connected for this long (daemons `baton run` starts).
    pub idle_exit: Option<Duration>,
}

impl DaemonConfig {
    /// A per-user daemon on `socket` running the default policy, without metrics.
    pub fn new(socket: PathBuf) -> DaemonConfig {
        DaemonConfig {
            socket,
            system: false,
            group: None,
            policy: baton_policies::DEFAULT_POLICY.into(),
            metrics: None,
            stats_interval_ms: DEFAULT_STATS_INTERVAL_MS,
            idle_exit: None,
        }
    }
}
