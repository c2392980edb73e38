//! `baton daemon`: the global scheduler service.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use baton_daemon::{Daemon, DaemonConfig};
use baton_protocol::Request;
use clap::Args;

use crate::client::Client;

#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// The policy to start with (see `baton policy list`); switch later with `baton policy`.
    #[arg(long, value_name = "NAME", default_value = baton_policies::DEFAULT_POLICY)]
    policy: String,
    /// Serve the machine: socket /run/baton/baton.sock, mode 0660 for --group; only root may
    /// change the policy.
    #[arg(long)]
    system: bool,
    /// The group allowed to use a system daemon [default: baton if it exists, else the
    /// daemon's group].
    #[arg(long, value_name = "NAME", requires = "system")]
    group: Option<String>,
    /// Serve Prometheus /metrics and JSON /status on this address (e.g. 127.0.0.1:9464).
    /// Nothing listens on the network otherwise.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// How long a process holding others back may stay silent (stopped, hung) before its
    /// queues stop holding anyone back, in milliseconds; 0: never.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    lease_ms: u64,
    /// How long a queue that holds others back may have work in flight of which nothing
    /// completes (a hung kernel) before it stops holding anyone back, in milliseconds; it
    /// holds them again once it completes work. Seen through the agents' reports (every
    /// second). 0: never.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    stall_ms: u64,
    /// The highest priority (−100 to 100) processes of users other than root may give
    /// themselves or ask for with `baton priority`/`baton hint` [default: no cap].
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    max_priority: Option<i32>,
    /// Take priorities from the cluster: a process's pod (from its cgroup) gives its default
    /// priority and its ceiling, root in a pod included (see docs/CLUSTER.md). Needs the
    /// node's name (NODE_NAME or --kubernetes-node) and a service account that may list and
    /// watch pods.
    #[arg(long)]
    kubernetes: bool,
    /// The node this daemon serves [default: $NODE_NAME].
    #[arg(long, value_name = "NAME", requires = "kubernetes")]
    kubernetes_node: Option<String>,
    /// The Baton priority of a PriorityClass, instead of its value clamped to −100..=100;
    /// repeat for each class.
    #[arg(long, value_name = "CLASS=N", requires = "kubernetes")]
    kubernetes_class: Vec<String>,
    /// Take priorities from Slurm: the priority the SPANK plugin (deploy/slurm/spank_baton.c)
    /// recorded in DIR for a process's job step (found from its cgroup, else its ancestry)
    /// is the default and ceiling of the step's processes, root in a job included, whatever
    /// they set in BATON_PRIORITY (see docs/CLUSTER.md). DIR must be root's and writable by
    /// no one else, as the plugin makes it [default: /run/baton/slurm].
    #[arg(long, value_name = "DIR", num_args = 0..=1,
          default_missing_value = baton_daemon::SlurmConfig::DEFAULT_RECORDS,
          conflicts_with = "kubernetes")]
    slurm_steps: Option<PathBuf>,
    /// How the ranks of one multi-GPU job (a gang: same BATON_GANG, Slurm job step or torchrun
    /// rendezvous) are treated: `independent` decides each device alone; `together` holds all
    /// of a held gang's queues back, on every device, whenever the policy holds back one of
    /// them, and resumes them together (ranks that yield by time slice or SMs, the default,
    /// are never held). Measured on two GPUs, `together` cost a held job and the service
    /// beside it more than it freed (see docs/MULTI_GPU.md).
    #[arg(long, value_name = "MODE", default_value = "independent", value_parser = ["independent", "together"])]
    gang: String,
    /// Commands measured shorter than this many µs are short: HPF does not hold a program's
    /// stream of short commands back for other programs (0: none is short, every stream is
    /// held back as any other) [default: $BATON_SHORT_COMMAND_US, else 0].
    #[arg(long, value_name = "US")]
    short_command_us: Option<u64>,
    /// How long (µs) a program's queue that finished its work still holds less urgent work
    /// back, so that the next request or token of a burst does not wait behind work started
    /// in the gap (0: not at all) [default: 500].
    #[arg(long, value_name = "US")]
    linger_us: Option<u64>,
    /// Show every process's name and command line in the metrics endpoint's `/status`. Off by
    /// default: whoever can reach the endpoint (any local user, on loopback) would read them.
    #[arg(long, requires = "metrics", conflicts_with = "metrics_no_commands")]
    metrics_commands: bool,
    /// Leave names and command lines out of `/status` (the default; kept for scripts that
    /// asked for it before it was).
    #[arg(long, hide = true)]
    metrics_no_commands: bool,
    /// Own an MPS server for the programs `baton run` starts against this daemon, so that they
    /// share one hardware context (no context switch between them): started with the daemon,
    /// its pipe and log folders beside the socket (SOCKET.mps/), checked every 5 s and started
    /// again if it died, adopted by the next daemon if this one is killed, and asked to quit at
    /// exit unless programs still run on it. `baton run` points programs at it unless they
    /// name an MPS of their own (CUDA_MPS_PIPE_DIRECTORY). Off by default: measured so far,
    /// it protects a GPU-bound service that keeps the GPU busy better than time-slicing does,
    /// and a decoder worse (README, "How it protects a service").
    #[arg(long)]
    mps_server: bool,
    /// The MPS control program for --mps-server [default: nvidia-cuda-mps-control on PATH].
    #[arg(long, value_name = "PATH", requires = "mps_server")]
    mps_control: Option<PathBuf>,
    /// Exit once no program has been scheduled for this many seconds (how `baton run`
    /// starts the daemon it needs).
    #[arg(long, value_name = "S", hide = true)]
    idle_exit: Option<u64>,
    /// Stop the daemon running on the socket instead: scheduled programs go on unscheduled.
    #[arg(long, conflicts_with_all = ["policy", "system", "metrics", "max_priority", "kubernetes", "slurm_steps"])]
    stop: bool,
}

/// The socket a daemon with these settings serves.
pub fn socket_for(socket: Option<&Path>, system: bool) -> PathBuf {
    socket
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("BATON_SOCKET").map(PathBuf::from))
        .unwrap_or_else(|| {
            if system {
                PathBuf::from(baton_agent::SYSTEM_SOCKET)
            } else {
                baton_agent::user_socket_path()
            }
        })
}

pub fn run(args: DaemonArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    let path = socket_for(socket, args.system);
    if args.stop {
        let mut c = Client::connect_to(&path)
            .with_context(|| format!("no Baton daemon answers on {}", path.display()))?;
        c.done(&Request::Shutdown)?;
        eprintln!("baton: the daemon on {} is stopping", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut cfg = DaemonConfig::new(path);
    cfg.policy = args.policy;
    cfg.gang = baton_daemon::GangMode::parse(&args.gang).unwrap_or_default();
    cfg.system = args.system;
    cfg.group = args.group;
    cfg.metrics = args.metrics;
    cfg.metrics_commands = args.metrics_commands;
    cfg.idle_exit = args.idle_exit.map(Duration::from_secs);
    cfg.lease = (args.lease_ms > 0).then(|| Duration::from_millis(args.lease_ms));
    cfg.stall = (args.stall_ms > 0).then(|| Duration::from_millis(args.stall_ms));
    cfg.max_priority = args.max_priority;
    let short = match args.short_command_us {
        Some(us) => Some(us),
        None => match std::env::var("BATON_SHORT_COMMAND_US") {
            Ok(v) => Some(v.trim().parse::<u64>().with_context(|| {
                format!("BATON_SHORT_COMMAND_US={v}: give a whole number of µs")
            })?),
            Err(_) => None,
        },
    };
    cfg.short_command = short.map(Duration::from_micros);
    cfg.linger = args.linger_us.map(Duration::from_micros);
    if args.kubernetes {
        let node = args
            .kubernetes_node
            .or_else(|| std::env::var("NODE_NAME").ok())
            .unwrap_or_default();
        let mut k = baton_daemon::KubernetesConfig::in_cluster(node)?;
        for entry in &args.kubernetes_class {
            let parsed = entry
                .split_once('=')
                .and_then(|(c, p)| Some((c.to_string(), p.trim().parse::<i32>().ok()?)));
            let Some((class, p)) = parsed else {
                return Err(super::Exit::usage(format!(
                    "--kubernetes-class {entry:?}: give CLASS=N, N from -100 to 100"
                )));
            };
            k.classes.insert(class, p);
        }
        cfg.kubernetes = Some(k);
    }
    cfg.slurm = args.slurm_steps.map(baton_daemon::SlurmConfig::new);
    if args.mps_server {
        cfg.mps_server = Some(baton_daemon::find_control(args.mps_control.as_deref())?);
    }
    let d = Daemon::bind(cfg)?;
    eprintln!(
        "baton: daemon listening on {}{}",
        d.socket().display(),
        d.metrics_addr()
            .map(|a| format!(", metrics on http://{a}/metrics"))
            .unwrap_or_default()
    );
    if let Some(m) = d.mps() {
        eprintln!(
            "baton: {} MPS server, pipe {}",
            if m.adopted() {
                "adopted the"
            } else {
                "started an"
            },
            m.dirs().pipe.display()
        );
    }
    d.run()?;
    Ok(ExitCode::SUCCESS)
}
