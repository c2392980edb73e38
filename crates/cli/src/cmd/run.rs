//! `baton run`: runs an unmodified program with its GPU work scheduled by Baton.
//!
//! The program is started with the interposer preloaded (`LD_PRELOAD`), and the settings given
//! here passed as `BATON_*` variables; `baton run` then *becomes* the program (exec), so its
//! exit status, signals and process id are the program's own.
//!
//! Unless `--local` is given, the program is scheduled by the daemon (`BATON_SCHEDULER=global`):
//! if none answers on the socket, one is started in the background first (it exits on its own
//! a minute after the last scheduled program is gone) and `baton run` waits until it answers.
//! If it cannot be started, the program is scheduled inside its own process, with a warning.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use baton_core::{LaunchConfig, Level, Priority};
use clap::Args;

use super::Exit;

/// The interposer's file name.
pub const INTERPOSER: &str = "libbaton_interposer.so";

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Priority of the program's GPU work, −100 to 100; higher runs first.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    priority: Option<i64>,
    /// Preemption level: 1 (progressive launch), 2 (a gate in the stream before every
    /// command: the device stops within one command) or 3 (on NVIDIA GPUs: the program's time
    /// slice is shortened while more urgent work exists); a level the device does not support
    /// is capped at the highest one it supports (`baton doctor` lists them).
    #[arg(long, value_name = "L", value_parser = super::parse_level)]
    level: Option<Level>,
    /// Commands in flight per queue (default 16).
    #[arg(long, value_name = "N")]
    threshold: Option<u32>,
    /// Commands between sync points (default 8, smaller than the threshold).
    #[arg(long, value_name = "N")]
    batch: Option<u32>,
    /// Keep the launch window even while no other work could make Baton suspend the program:
    /// launches then cost a little more, but a higher-priority program that starts later
    /// waits for at most a window of this one's work instead of everything it queued ahead.
    #[arg(long)]
    keep_window: bool,
    /// Share of the device's time to reserve for the program, 1–100 % (for utilization
    /// policies).
    #[arg(long, value_name = "PCT")]
    utilization: Option<u8>,
    /// Each piece of the program's GPU work should finish within this many µs of becoming
    /// ready (for deadline policies).
    #[arg(long, value_name = "D")]
    deadline_us: Option<u64>,
    /// Run the kernels of the program's normal-priority streams (CUDA priority 0) on this many
    /// SMs only (a green context), so kernels of more urgent work, in this program's
    /// high-priority streams or in another program under MPS, always find free SMs. Streams
    /// created with a higher CUDA priority keep the whole GPU. Cooperative kernels and graphs
    /// are not confined. The driver rounds up (to 8 SMs on Hopper).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    sms: Option<u32>,
    /// Give way to more urgent programs through the GPU instead of being held back. Without
    /// MPS, the program's context gives the GPU up within its slice (100 µs,
    /// BATON_YIELD_SLICE_US) whenever a more urgent program exists, is held back while that
    /// program's work keeps the GPU busy (through the pauses of its requests, not for a program
    /// bound by its own launching), and otherwise keeps running in that program's idle gaps;
    /// each hand-over costs +0.14–0.32 ms of GPU time on an H200 (docs/benchmarks/matrix).
    /// Several such programs with work on one GPU take turns (HPF, 200 ms each) rather than
    /// alternate their short slices. Without MPS this is the default.
    /// Under MPS, the kernels of its normal-priority streams keep to 85 % of the SMs
    /// (BATON_YIELD_SMS) while a more urgent program exists, and use the whole GPU otherwise.
    #[arg(long = "yield", conflicts_with = "hold")]
    yield_by_slice: bool,
    /// Be held back for more urgent programs (launches wait) instead of giving way through the
    /// GPU, under MPS too (BATON_YIELD=off). Under MPS, what is already launched keeps running
    /// on every SM meanwhile.
    #[arg(long)]
    hold: bool,
    /// Schedule inside the process only (stream priorities become queue priorities), without
    /// the daemon.
    #[arg(long)]
    local: bool,
    /// The local policy (see `baton policy list`).
    #[arg(long, value_name = "NAME")]
    policy: Option<String>,
    /// The real CUDA driver library (an absolute path), if it is not found by the usual search.
    #[arg(long, value_name = "PATH")]
    cuda_lib: Option<PathBuf>,
    /// The interposer library [default: next to the baton executable, or $BATON_INTERPOSER].
    #[arg(long, value_name = "PATH")]
    interposer: Option<PathBuf>,
    /// The program and its arguments.
    /// (An option before it is Baton's: a misspelt one is refused, not taken for the program.)
    #[arg(required = true, trailing_var_arg = true, value_name = "CMD")]
    command: Vec<OsString>,
}

impl RunArgs {
    /// The `BATON_*` variables these settings become.
    fn env(&self) -> anyhow::Result<Vec<(&'static str, OsString)>> {
        let mut env: Vec<(&'static str, OsString)> = Vec::new();
        if let Some(p) = self.priority {
            let p = Priority::new(p).map_err(|e| Exit::usage(format!("--priority: {e}")))?;
            env.push(("BATON_PRIORITY", p.to_string().into()));
        }
        if self.keep_window {
            env.push(("BATON_KEEP_WINDOW", "on".into()));
        }
        if let Some(n) = self.sms {
            env.push(("BATON_SMS", n.to_string().into()));
        }
        if self.yield_by_slice {
            env.push(("BATON_YIELD", "on".into()));
        }
        if self.hold {
            env.push(("BATON_YIELD", "off".into()));
        }
        if let Some(l) = self.level {
            env.push(("BATON_LEVEL", l.number().to_string().into()));
        }
        if self.threshold.is_some() || self.batch.is_some() {
            let t = self.threshold.unwrap_or(LaunchConfig::DEFAULT_THRESHOLD);
            let b = self
                .batch
                .unwrap_or(LaunchConfig::DEFAULT_BATCH.min(t.saturating_sub(1).max(1)));
            let c = LaunchConfig::new(t, b)
                .map_err(|e| Exit::usage(format!("--threshold/--batch: {e}")))?;
            env.push(("BATON_THRESHOLD", c.threshold().to_string().into()));
            env.push(("BATON_BATCH", c.batch().to_string().into()));
        }
        if let Some(u) = self.utilization {
            if !(1..=100).contains(&u) {
                return Err(Exit::usage(format!(
                    "invalid --utilization {u}: give a whole percentage from 1 to 100"
                )));
            }
            env.push(("BATON_UTILIZATION", u.to_string().into()));
        }
        if let Some(d) = self.deadline_us {
            let max = baton_protocol::MAX_DURATION_NS / 1000;
            if !(1..=max).contains(&d) {
                return Err(Exit::usage(format!(
                    "invalid --deadline-us {d}: give microseconds from 1 to {max}"
                )));
            }
            env.push(("BATON_DEADLINE_US", d.to_string().into()));
        }
        if self.local {
            env.push(("BATON_SCHEDULER", "local".into()));
        }
        if let Some(p) = &self.policy {
            let policy =
                baton_policies::by_name(p).map_err(|e| Exit::usage(format!("--policy: {e}")))?;
            env.push(("BATON_POLICY", policy.name().into()));
        }
        if let Some(lib) = &self.cuda_lib {
            if !lib.is_absolute() {
                return Err(Exit::usage(format!(
                    "--cuda-lib must be an absolute path, not {}",
                    lib.display()
                )));
            }
            if !lib.exists() {
                return Err(Exit::usage(format!(
                    "--cuda-lib {} does not exist",
                    lib.display()
                )));
            }
            env.push(("BATON_CUDA_LIB", lib.clone().into()));
        }
        Ok(env)
    }
}

/// Where the interposer is: `--interposer`, `$BATON_INTERPOSER`, next to this executable, or in
/// `../lib` or `../lib/baton` from it.
pub fn find_interposer(flag: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = flag
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("BATON_INTERPOSER").map(PathBuf::from))
    {
        if p.is_file() {
            return Ok(std::fs::canonicalize(&p).unwrap_or(p));
        }
        bail!("the interposer {} does not exist", p.display());
    }
    let exe = std::env::current_exe().context("cannot locate the baton executable")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let candidates = [
        dir.join(INTERPOSER),
        dir.join("../lib").join(INTERPOSER),
        dir.join("../lib/baton").join(INTERPOSER),
    ];
    for c in &candidates {
        if c.is_file() {
            return Ok(std::fs::canonicalize(c).unwrap_or_else(|_| c.clone()));
        }
    }
    bail!(
        "cannot find {INTERPOSER} next to {} (looked in {}); build it with \
         `cargo build --release -p baton-interposer`, or point --interposer or $BATON_INTERPOSER at it",
        exe.display(),
        candidates
            .iter()
            .map(|c| c.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// `LD_PRELOAD` with the interposer first and anything already there after it.
fn preload_value(interposer: &Path, existing: Option<OsString>) -> OsString {
    let mut v = OsString::from(interposer);
    if let Some(e) = existing.filter(|e| !e.is_empty()) {
        v.push(":");
        v.push(e);
    }
    v
}

/// How long an auto-started daemon stays without any scheduled program.
const AUTO_IDLE_EXIT_S: u64 = 60;

/// The socket of a daemon that answers, starting one if none does.
fn ensure_daemon(socket: Option<&Path>) -> anyhow::Result<PathBuf> {
    let explicit = socket
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("BATON_SOCKET").map(PathBuf::from));
    for c in baton_agent::socket_candidates(explicit.as_deref()) {
        if crate::client::Client::connect_to(&c).is_ok() {
            return Ok(c);
        }
    }
    let path = super::daemon::socket_for(explicit.as_deref(), false);
    let exe = std::env::current_exe().context("cannot locate the baton executable")?;
    let dir = path.parent().unwrap_or(Path::new("/tmp"));
    let log_path = dir.join("baton-daemon.log");
    let log = std::fs::create_dir_all(dir)
        .and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_path)
        })
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null());
    let mut cmd = Command::new(exe);
    cmd.arg("--socket")
        .arg(&path)
        .args(["daemon", "--idle-exit", &AUTO_IDLE_EXIT_S.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .env_remove("LD_PRELOAD");
    // SAFETY: setsid is async-signal-safe and touches nothing of this process's state.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().context("cannot start `baton daemon`")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if crate::client::Client::connect_to(&path).is_ok() {
            // The daemon lives on after this process becomes the program; it is reaped by
            // the program or, once that exits, by init.
            return Ok(path);
        }
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let last = log.lines().last().unwrap_or("").to_string();
            bail!(
                "`baton daemon` exited ({status}) before answering on {}: {last}",
                path.display()
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!(
                "`baton daemon` did not answer on {} within 10 s; see {}",
                path.display(),
                log_path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The environment that points a program at the MPS server of the daemon on `socket`
/// (`baton daemon --mps-server`), when it runs one and the program names no MPS of its own
/// (`named`: its environment has `CUDA_MPS_PIPE_DIRECTORY`).
fn daemon_mps(socket: &Path, named: bool) -> Vec<(&'static str, OsString)> {
    let dirs = baton_daemon::MpsDirs::for_socket(socket);
    if named || !dirs.control().exists() {
        return Vec::new();
    }
    vec![
        ("CUDA_MPS_PIPE_DIRECTORY", dirs.pipe.into()),
        ("CUDA_MPS_LOG_DIRECTORY", dirs.log.into()),
    ]
}

/// The MPS client priority level a program gets when its environment names none.
const MPS_CLIENT_PRIORITY: &str = "CUDA_MPS_CLIENT_PRIORITY";

/// The MPS client priority level for a program of Baton priority `priority` (the flag, else
/// `inherited`, the `BATON_PRIORITY` it inherits, else 0): below normal (`1`) at 0 and under,
/// none (normal) above. Under MPS the driver then favours a normal client's kernels over a
/// below-normal one's when SMs free up, which Baton cannot do from outside (measured beside
/// training: docs/BENCHMARKS.md, "How the protection mechanisms were chosen"). The level is
/// fixed when CUDA starts in the program: a priority changed later does not change it.
fn mps_client_priority(
    priority: Option<i64>,
    inherited: Option<&std::ffi::OsStr>,
) -> Option<&'static str> {
    let p = priority
        .or_else(|| inherited.and_then(|v| v.to_str()?.trim().parse().ok()))
        .unwrap_or(0);
    (p <= 0).then_some("1")
}

pub fn run(args: RunArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    let mut env = args.env()?;
    if std::env::var_os(MPS_CLIENT_PRIORITY).is_none()
        && let Some(level) =
            mps_client_priority(args.priority, std::env::var_os("BATON_PRIORITY").as_deref())
    {
        env.push((MPS_CLIENT_PRIORITY, level.into()));
    }
    let interposer = find_interposer(args.interposer.as_deref())?;
    let (program, rest) = args
        .command
        .split_first()
        .context("no command given: use `baton run [OPTIONS] -- CMD [ARGS...]`")?;
    let scheduler_set = std::env::var("BATON_SCHEDULER").is_ok_and(|v| !v.trim().is_empty());
    if !args.local && !scheduler_set {
        match ensure_daemon(socket) {
            Ok(path) => {
                env.extend(daemon_mps(
                    &path,
                    std::env::var_os("CUDA_MPS_PIPE_DIRECTORY").is_some(),
                ));
                env.push(("BATON_SCHEDULER", "global".into()));
                env.push(("BATON_SOCKET", path.into()));
            }
            Err(e) => {
                eprintln!(
                    "baton: warning: {e:#}; scheduling inside the program only (as with --local)"
                );
                env.push(("BATON_SCHEDULER", "local".into()));
            }
        }
    }
    let mut cmd = Command::new(program);
    cmd.args(rest);
    cmd.env(
        "LD_PRELOAD",
        preload_value(&interposer, std::env::var_os("LD_PRELOAD")),
    );
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Only returns if the program could not be started.
    let err = cmd.exec();
    Err(Exit::cannot_run(Path::new(program), &err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn env_of(args: &[&str]) -> Vec<(&'static str, OsString)> {
        use clap::Parser;
        let argv = ["baton"].iter().chain(args).chain(&["--", "prog"]);
        Cli::try_parse_from(argv).unwrap().run.env().unwrap()
    }

    #[test]
    fn programs_are_pointed_at_the_daemons_mps_server_unless_they_name_their_own() {
        let dir = std::env::temp_dir().join(format!("baton-run-mps-{}", std::process::id()));
        let socket = dir.join("baton.sock");
        assert!(daemon_mps(&socket, false).is_empty(), "no server");
        let dirs = baton_daemon::MpsDirs::for_socket(&socket);
        std::fs::create_dir_all(&dirs.pipe).unwrap();
        std::fs::write(dirs.control(), "").unwrap();
        let env = daemon_mps(&socket, false);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            env,
            [
                ("CUDA_MPS_PIPE_DIRECTORY", dirs.pipe.clone().into()),
                ("CUDA_MPS_LOG_DIRECTORY", dirs.log.clone().into()),
            ]
        );
    }

    #[test]
    fn programs_at_priority_zero_and_under_are_below_normal_mps_clients() {
        use std::ffi::OsStr;
        assert_eq!(mps_client_priority(Some(0), None), Some("1"));
        assert_eq!(mps_client_priority(Some(-5), None), Some("1"));
        assert_eq!(mps_client_priority(None, None), Some("1"));
        assert_eq!(mps_client_priority(Some(10), None), None);
        // The flag first, then the inherited priority.
        assert_eq!(mps_client_priority(None, Some(OsStr::new(" 7 "))), None);
        assert_eq!(
            mps_client_priority(Some(0), Some(OsStr::new("7"))),
            Some("1")
        );
        assert_eq!(mps_client_priority(None, Some(OsStr::new("-1"))), Some("1"));
        assert_eq!(mps_client_priority(None, Some(OsStr::new("x"))), Some("1"));
    }

    #[test]
    fn yield_asks_for_yielding_by_time_slice() {
        let on = ("BATON_YIELD", OsString::from("on"));
        assert!(env_of(&["--yield", "--priority", "0"]).contains(&on));
        assert!(
            !env_of(&["--priority", "0"])
                .iter()
                .any(|(k, _)| *k == "BATON_YIELD")
        );
        let off = ("BATON_YIELD", OsString::from("off"));
        assert!(env_of(&["--hold", "--priority", "0"]).contains(&off));
        use clap::Parser;
        assert!(
            Cli::try_parse_from(["baton", "--yield", "--hold", "--", "prog"]).is_err(),
            "--yield and --hold together"
        );
    }

    #[test]
    fn preload_keeps_what_was_there() {
        let p = Path::new("/x/libbaton_interposer.so");
        assert_eq!(
            preload_value(p, None),
            OsString::from("/x/libbaton_interposer.so")
        );
        assert_eq!(
            preload_value(p, Some("/y/liba.so".into())),
            OsString::from("/x/libbaton_interposer.so:/y/liba.so")
        );
    }
}
