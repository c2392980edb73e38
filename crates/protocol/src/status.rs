//! The daemon's state, for `baton doctor` and the header of `baton top`.

use serde::{Deserialize, Serialize};

use crate::{MAX_DURATION_NS, MAX_LABEL_LEN, MAX_POLICY_NAME_LEN, ProtocolError, check};

/// The longest socket path (`sun_path` holds 108 bytes with the terminating zero).
pub const MAX_SOCKET_PATH_LEN: usize = 107;

/// The daemon's state (answer to [`Request::Status`](crate::Request::Status)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DaemonStatus {
    /// The daemon's software and version.
    pub software: String,
    /// Its protocol version.
    pub protocol: u16,
    /// Its process id.
    pub pid: u32,
    /// The policy in force.
    pub policy: String,
    /// How long it has run, in nanoseconds.
    pub uptime_ns: u64,
    /// Agents connected.
    pub agents: u32,
    /// CLI connections open (this one included).
    pub clis: u32,
    /// Processes scheduled.
    pub processes: u32,
    /// Queues scheduled.
    pub queues: u32,
    /// Queues with unfinished work; at most `queues`.
    pub ready_queues: u32,
    /// Queues held suspended; at most `queues`.
    pub suspended_queues: u32,
    /// Devices with at least one queue.
    pub devices: u32,
    /// Policy decisions taken since start.
    pub decisions: u64,
    /// How long decisions took, recently.
    pub decision_latency: LatencySummary,
    /// Operations frames sent to agents since start.
    pub operations_sent: u64,
    /// Whether a trace is recording.
    pub tracing: bool,
    /// The path of the socket it listens on.
    pub socket: String,
    /// The loopback address of its metrics endpoint, if enabled (`127.0.0.1:9464`).
    pub metrics: Option<String>,
}

/// Percentiles of a duration, in nanoseconds: `p50 <= p99 <= max <= 1 hour`. All zero when
/// nothing was measured yet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// The median.
    pub p50_ns: u64,
    /// The 99th percentile.
    pub p99_ns: u64,
    /// The largest.
    pub max_ns: u64,
}

impl LatencySummary {
    fn validate(&self) -> Result<(), ProtocolError> {
        check::range("max_ns", self.max_ns, 0, MAX_DURATION_NS)?;
        check::range("p99_ns", self.p99_ns, 0, self.max_ns)?;
        check::range("p50_ns", self.p50_ns, 0, self.p99_ns)
    }
}

impl DaemonStatus {
    pub(crate) fn validate(&self) -> Result<(), ProtocolError> {
        check::text("software", &self.software, MAX_LABEL_LEN)?;
        check::pid("pid", self.pid)?;
        check::token("policy", &self.policy, MAX_POLICY_NAME_LEN)?;
        check::range("ready_queues", self.ready_queues, 0, self.queues)?;
        check::range("suspended_queues", self.suspended_queues, 0, self.queues)?;
        self.decision_latency
            .validate()
            .map_err(|e| e.within("decision_latency"))?;
        check::text("socket", &self.socket, MAX_SOCKET_PATH_LEN)?;
        if let Some(m) = &self.metrics {
            check::ident("metrics", m, MAX_LABEL_LEN)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status() -> DaemonStatus {
        DaemonStatus {
            software: "batond 0.1.0".into(),
            protocol: 1,
            pid: 10,
            policy: "hpf".into(),
            uptime_ns: 5,
            agents: 2,
            clis: 1,
            processes: 2,
            queues: 3,
            ready_queues: 2,
            suspended_queues: 1,
            devices: 1,
            decisions: 9,
            decision_latency: LatencySummary {
                p50_ns: 1,
                p99_ns: 2,
                max_ns: 3,
            },
            operations_sent: 4,
            tracing: false,
            socket: "/run/baton/baton.sock".into(),
            metrics: Some("127.0.0.1:9464".into()),
        }
    }

    fn field(s: DaemonStatus) -> String {
        s.validate().unwrap_err().field().unwrap().to_string()
    }

    #[test]
    fn valid_status_passes() {
        assert!(status().validate().is_ok());
    }

    #[test]
    fn ready_and_suspended_within_queues() {
        let mut s = status();
        s.ready_queues = 4;
        assert_eq!(field(s), "ready_queues");
        let mut s = status();
        s.suspended_queues = 4;
        assert_eq!(field(s), "suspended_queues");
    }

    #[test]
    fn latency_percentiles_ordered_and_bounded() {
        let mut s = status();
        s.decision_latency.p50_ns = 3;
        assert_eq!(field(s), "decision_latency.p50_ns");
        let mut s = status();
        s.decision_latency.p99_ns = 4;
        assert_eq!(field(s), "decision_latency.p99_ns");
        let mut s = status();
        s.decision_latency.max_ns = MAX_DURATION_NS + 1;
        assert_eq!(field(s), "decision_latency.max_ns");
    }

    #[test]
    fn names_and_paths_checked() {
        let mut s = status();
        s.policy = "Bad Name".into();
        assert_eq!(field(s), "policy");
        let mut s = status();
        s.socket = "/".repeat(MAX_SOCKET_PATH_LEN + 1);
        assert_eq!(field(s), "socket");
        let mut s = status();
        s.metrics = Some("0.0.0.0 :80".into());
        assert_eq!(field(s), "metrics");
        let mut s = status();
        s.software.clear();
        assert_eq!(field(s), "software");
        let mut s = status();
        s.pid = 0;
        assert_eq!(field(s), "pid");
    }
}
