//! What a daemon is told on its command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How often agents report their counters, in milliseconds (for `baton top` and `/metrics`).
pub const DEFAULT_STATS_INTERVAL_MS: u32 = 1000;

/// How long an agent whose ready queues hold others back may stay silent (no message, no
/// answer to a ping) before its queues stop holding anyone back: 1 s.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(1);

/// How long a ready queue's work in flight may complete nothing, while it holds others back,
/// before it stops holding them back: 10 s.
pub const DEFAULT_STALL: Duration = Duration::from_secs(10);

/// How long a queue that finished its work still holds less urgent work back: 500 µs. A
/// decoder's next token, or the next request of a burst, usually follows within it; work let
/// run in such a gap is what the next one waits behind (a graph-replayed decoder beside a
/// held GEMM flood under MPS: ×1.32 of alone at p99 with it, against ×1.49 confined without
/// a hold). A service idle longer gives the device back.
pub const DEFAULT_LINGER: Duration = Duration::from_micros(500);

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
    /// Whether the endpoint's `/status` shows each process's name and command line (whoever
    /// can reach the endpoint sees every process: it is node-local, loopback only); off
    /// unless asked for.
    pub metrics_commands: bool,
    /// How often agents send their counters, in milliseconds (0: never).
    pub stats_interval_ms: u32,
    /// Exit once no agent has been connected for this long (daemons `baton run` starts).
    pub idle_exit: Option<Duration>,
    /// The lease of a process whose ready queues hold others back: silent for this long
    /// (stopped, hung, swapped out), it is pinged at half of it and, still silent at the end,
    /// no longer holds anyone back until it speaks again. `None`: no lease (a stopped
    /// high-priority process then holds lower ones back until it continues or exits).
    pub lease: Option<Duration>,
    /// The stall limit of a queue that holds others back: ready and running, with work in
    /// flight of which nothing completed for this long (a hung kernel; its agent's reports
    /// show it), it no longer holds anyone back until it completes work again. `None`: no
    /// limit (a process whose GPU work hangs then holds lower ones back until it exits).
    pub stall: Option<Duration>,
    /// The highest priority a process of another user than root may give itself or its
    /// queues (through its environment, the C API or `baton priority`); higher priorities
    /// from agents are lowered to it, and such requests from the CLI are refused. `None`: no
    /// cap (the protocol's own range, −100 to 100).
    pub max_priority: Option<i32>,
    /// Take processes' priorities from their pods (`--kubernetes`): a pod's priority is its
    /// processes' default and ceiling. `None`: no cluster.
    pub kubernetes: Option<crate::KubernetesConfig>,
    /// Take processes' priorities from their Slurm job steps (`--slurm-steps`): a step's
    /// recorded priority is its processes' default and ceiling. `None`: not on Slurm.
    pub slurm: Option<crate::SlurmConfig>,
    /// Whether the processes of one gang (a multi-GPU job's ranks) are held back together.
    pub gang: GangMode,
    /// Commands measured shorter than this are short: HPF does not hold their queues back
    /// for other processes. `None`: HPF's own bound
    /// ([`SHORT_COMMAND`](baton_policies::SHORT_COMMAND)); zero: no command is short.
    pub short_command: Option<Duration>,
    /// How long a queue that finished its work still holds lower work back
    /// ([`GlobalHint::Linger`](baton_policies::GlobalHint::Linger)). `None`:
    /// [`DEFAULT_LINGER`](crate::DEFAULT_LINGER); zero: none.
    pub linger: Option<Duration>,
    /// Own an MPS server for the programs `baton run` starts against this daemon
    /// ([`MpsServer`](crate::MpsServer)), through this control program
    /// (`nvidia-cuda-mps-control`). `None`: none (programs share the GPU as the machine is set
    /// up).
    pub mps_server: Option<PathBuf>,
}

/// How the daemon treats gangs: the processes of one multi-process job (same `BATON_GANG`,
/// Slurm job step or rendezvous; see docs/MULTI_GPU.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GangMode {
    /// Each queue as the policy decides it, device by device: a rank held back on one device
    /// leaves the others to wait for it in their collectives.
    #[default]
    Independent,
    /// When the policy holds back any queue of a gang while the gang has work, every queue of
    /// the gang, on every device, is held back with it, and all resume together.
    Together,
}

impl GangMode {
    /// `together` or `independent`.
    pub fn name(self) -> &'static str {
        match self {
            GangMode::Independent => "independent",
            GangMode::Together => "together",
        }
    }

    /// The mode called `name`.
    pub fn parse(name: &str) -> Option<GangMode> {
        match name.trim().to_ascii_lowercase().as_str() {
            "independent" => Some(GangMode::Independent),
            "together" => Some(GangMode::Together),
            _ => None,
        }
    }

    /// The policy `name` under this mode: wrapped in the gang policy when `Together` (and not
    /// already asked for as `gang:…`).
    pub fn policy(
        self,
        name: &str,
    ) -> Result<Box<dyn baton_policies::Policy>, baton_policies::UnknownPolicy> {
        let wrapped = name
            .trim()
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("gang:"));
        match self {
            GangMode::Together if !wrapped => baton_policies::by_name(&format!("gang:{name}")),
            _ => baton_policies::by_name(name),
        }
    }
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
            metrics_commands: false,
            stats_interval_ms: DEFAULT_STATS_INTERVAL_MS,
            idle_exit: None,
            lease: Some(DEFAULT_LEASE),
            stall: Some(DEFAULT_STALL),
            max_priority: None,
            kubernetes: None,
            slurm: None,
            gang: GangMode::Independent,
            short_command: None,
            linger: None,
            mps_server: None,
        }
    }
}
