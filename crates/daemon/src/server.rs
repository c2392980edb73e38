//! The daemon's tasks: accept connections, run the core, stop cleanly.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use baton_core::{Clock, MonotonicClock, Nanos};
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::auth::Authority;
use crate::cluster::{ApiServer, Cluster, PodTable, SlurmSteps};
use crate::conn::{self, Shared};
use crate::core::{Core, Identity};
use crate::event::Event;
use crate::listen::{self, Bound};
use crate::mps::{MpsDirs, MpsServer};
use crate::timer::Timer;
use crate::{DaemonConfig, DaemonError};

/// Events handled per round at most, so a flood from one side cannot starve the others'
/// decisions for long.
const MAX_ROUND: usize = 1024;

/// A daemon with its socket bound, ready to run.
pub struct Daemon {
    cfg: DaemonConfig,
    bound: Bound,
    metrics: Option<std::net::TcpListener>,
    policy: Box<dyn baton_policies::Policy>,
    /// The settings the policy reads as scheduler-wide hints (`--short-command-us`,
    /// `--linger-us`), checked.
    global: Vec<baton_policies::GlobalHint>,
    /// The API server to take pods' priorities from (`--kubernetes`).
    pods: Option<ApiServer>,
    /// Its MPS server (`--mps-server`), started once the socket is bound.
    mps: Option<MpsServer>,
}

impl Daemon {
    /// Checks the settings and binds the socket (and the metrics address), so every start-up
    /// error is reported before anything runs.
    pub fn bind(cfg: DaemonConfig) -> Result<Daemon, DaemonError> {
        let policy = cfg.gang.policy(&cfg.policy)?;
        let short = cfg
            .short_command
            .map(|t| baton_policies::GlobalHint::short_command(Nanos::from(t)))
            .transpose()
            .map_err(|e| DaemonError::BadSetting(format!("--short-command-us: {e}")))?;
        let linger = Some(cfg.linger.unwrap_or(crate::DEFAULT_LINGER))
            .filter(|t| !t.is_zero())
            .map(|t| baton_policies::GlobalHint::linger(Nanos::from(t)))
            .transpose()
            .map_err(|e| DaemonError::BadSetting(format!("--linger-us: {e}")))?;
        let global = short.into_iter().chain(linger).collect();
        if let Some(p) = cfg.max_priority {
            if baton_core::Priority::try_from(baton_protocol::WirePriority(p)).is_err() {
                return Err(DaemonError::BadSetting(format!(
                    "the priority cap {p} is out of range: give one from -100 to 100"
                )));
            }
        }
        if cfg.kubernetes.is_some() && cfg.slurm.is_some() {
            return Err(DaemonError::BadSetting(
                "--kubernetes and --slurm-steps: a node's priorities come from one cluster \
                 engine; give one of them"
                    .into(),
            ));
        }
        let pods = match &cfg.kubernetes {
            None => None,
            Some(k) => {
                k.check()?;
                Some(
                    ApiServer::new(k.clone())
                        .map_err(|e| DaemonError::BadSetting(format!("--kubernetes: {e}")))?,
                )
            }
        };
        let bound = listen::bind(&cfg)?;
        // After the socket: its folders are the socket's, and a second daemon, refused the
        // socket, must not touch the first one's server.
        let mps = match &cfg.mps_server {
            None => None,
            Some(program) => Some(MpsServer::start(program, MpsDirs::for_socket(&bound.path))?),
        };
        let metrics = match cfg.metrics {
            None => None,
            Some(addr) => {
                if !addr.ip().is_loopback() {
                    return Err(DaemonError::MetricsNotLoopback { addr });
                }
                let l = std::net::TcpListener::bind(addr)
                    .map_err(|source| DaemonError::Metrics { addr, source })?;
                Some(l)
            }
        };
        Ok(Daemon {
            cfg,
            bound,
            metrics,
            policy,
            global,
            pods,
            mps,
        })
    }

    /// The socket it listens on.
    pub fn socket(&self) -> &Path {
        &self.bound.path
    }

    /// Its MPS server, if it owns one.
    pub fn mps(&self) -> Option<&MpsServer> {
        self.mps.as_ref()
    }

    /// The metrics endpoint's address, if it serves one.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Runs on a single-threaded runtime of its own until SIGINT or SIGTERM, a shutdown
    /// request, or (with `idle_exit`) no agent for that long.
    pub fn run(self) -> Result<(), DaemonError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(DaemonError::Runtime)?;
        rt.block_on(async move {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate()).map_err(DaemonError::Runtime)?;
            let mut int = signal(SignalKind::interrupt()).map_err(DaemonError::Runtime)?;
            let stop = async move {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            };
            self.serve(stop).await
        })
    }

    /// Serves until `stop` resolves (or a shutdown request, or idle exit). Must run on a
    /// tokio runtime with I/O and time enabled.
    pub async fn serve(self, stop: impl Future<Output = ()>) -> Result<(), DaemonError> {
        let Daemon {
            cfg,
            bound,
            metrics,
            policy,
            global,
            pods,
            mut mps,
        } = self;
        if let Some(m) = &mut mps {
            m.watch(crate::HEALTH_EVERY)?;
        }
        bound
            .listener
            .set_nonblocking(true)
            .map_err(DaemonError::Runtime)?;
        let listener = tokio::net::UnixListener::from_std(
            bound.listener.try_clone().map_err(DaemonError::Runtime)?,
        )
        .map_err(DaemonError::Runtime)?;
        let auth = Authority {
            daemon_uid: rustix::process::geteuid().as_raw(),
            system: cfg.system,
        };
        let metrics_addr = metrics.as_ref().and_then(|l| l.local_addr().ok());
        let ident = Identity {
            pid: std::process::id(),
            software: format!("baton-daemon {}", env!("CARGO_PKG_VERSION")),
            socket: bound.path.clone(),
            metrics: metrics_addr.map(|a| a.to_string()),
            metrics_commands: cfg.metrics_commands,
            stats_interval_ms: cfg.stats_interval_ms,
            auth,
            lease: cfg.lease.map(Nanos::from),
            stall: cfg.stall.map(Nanos::from),
            max_priority: cfg.max_priority,
            gang: cfg.gang,
        };
        let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::new());
        let mut core = Core::new(ident, policy, Arc::clone(&clock));
        for hint in global {
            core.set_global_hint(hint);
        }
        let (tx, mut rx) = mpsc::unbounded_channel::<Event>();
        if let Some(s) = &cfg.slurm {
            core.set_cluster(Cluster::slurm(SlurmSteps::new(
                s.records.clone(),
                s.proc_root.clone(),
                auth.daemon_uid,
            )));
        }
        if let (Some(api), Some(k)) = (pods, &cfg.kubernetes) {
            core.set_cluster(Cluster::kubernetes(PodTable::new(k.proc_root.clone())));
            let tx = tx.clone();
            std::thread::Builder::new()
                .name("baton-pods".into())
                .spawn(move || api.run(&mut |u| tx.send(Event::Pods(u)).is_ok()))
                .map_err(DaemonError::Runtime)?;
        }
        let shared = Arc::new(Shared::new(auth, Arc::clone(&clock)));
        let accept = tokio::spawn(accept_loop(listener, tx.clone(), Arc::clone(&shared)));
        let metrics_task = match metrics {
            Some(l) => {
                l.set_nonblocking(true).map_err(DaemonError::Runtime)?;
                let l = tokio::net::TcpListener::from_std(l).map_err(DaemonError::Runtime)?;
                Some(tokio::spawn(crate::metrics::serve(l, tx.clone())))
            }
            None => None,
        };
        drop(tx);
        tracing::info!(socket = %bound.path.display(), policy = %cfg.policy, metrics = ?metrics_addr, "Baton daemon ready");
        tokio::pin!(stop);
        let far = Instant::now() + Duration::from_secs(86_400 * 365);
        // The core's times: its wake-ups on a timer to the microsecond (a linger is hundreds
        // of µs), the idle exit on tokio's.
        let at = |t: Nanos| Instant::now() + Duration::from(t - clock.now());
        let mut timer = Timer::new().map_err(DaemonError::Runtime)?;
        loop {
            let wake = core.next_wake().map(|t| Duration::from(t - clock.now()));
            timer.set(wake).map_err(DaemonError::Runtime)?;
            let idle = cfg
                .idle_exit
                .zip(core.idle_since)
                .map(|(d, since)| at(since + Nanos::from(d)));
            tokio::select! {
                biased;
                () = &mut stop => break,
                ev = rx.recv() => {
                    let Some(ev) = ev else { break };
                    ev.apply(&mut core);
                    for _ in 1..MAX_ROUND {
                        match rx.try_recv() {
                            Ok(ev) => ev.apply(&mut core),
                            Err(_) => break,
                        }
                    }
                    core.end_round();
                }
                fired = timer.fired(), if timer.armed() => {
                    fired.map_err(DaemonError::Runtime)?;
                    core.on_timer();
                    core.end_round();
                }
                () = tokio::time::sleep_until(idle.unwrap_or(far)), if idle.is_some() => {
                    tracing::info!("no agent for a while; the daemon exits (it was started on demand)");
                    break;
                }
            }
            if core.stopping {
                break;
            }
        }
        accept.abort();
        if let Some(m) = metrics_task {
            m.abort();
        }
        core.stopping = true;
        core.release_all("the Baton daemon is stopping; the process runs unscheduled");
        drop(core);
        // Let writers deliver the releases (and the shutdown's reply) before the runtime ends.
        shared.drain(Duration::from_secs(1)).await;
        if let Some(m) = mps {
            // Before the socket goes: a daemon started meanwhile finds this one still running.
            m.stop();
        }
        tracing::info!("Baton daemon stopped");
        drop(bound);
        Ok(())
    }
}

/// Accepts connections and starts a task for each.
async fn accept_loop(
    listener: tokio::net::UnixListener,
    tx: mpsc::UnboundedSender<Event>,
    shared: Arc<Shared>,
) {
    static NEXT_CLIENT: AtomicU64 = AtomicU64::new(1);
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let id = baton_protocol::ClientId(NEXT_CLIENT.fetch_add(1, Ordering::Relaxed));
                tokio::spawn(conn::connection(
                    stream,
                    id,
                    tx.clone(),
                    Arc::clone(&shared),
                ));
            }
            Err(e) => {
                // Out of descriptors, say: wait a little instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}
