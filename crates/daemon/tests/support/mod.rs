//! Daemons, simulated client processes and CLI requests for the integration tests.
//!
//! Nothing here sleeps to wait for a condition: waits poll the condition against a deadline,
//! or read a child's output with a timeout.

#![allow(dead_code)] // Each test binary uses a different part.

pub mod client;
pub mod scrape;

pub use client::*;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use baton_daemon::{Daemon, DaemonConfig};

/// How long any single wait may take before the test fails.
pub const LIMIT: Duration = Duration::from_secs(20);

/// A fresh directory (traversable by other users, for the uid test).
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "d{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    // Explicitly: an in-process daemon binding meanwhile narrows the (process-wide) umask.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

/// Polls `f` until it holds; panics after [`LIMIT`].
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        // A pause, not a spin: on a loaded two-core machine a spinning poller (each poll a
        // request to the daemon) takes the CPU from the daemon and the clients it waits for.
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A daemon on a thread of the test process.
pub struct InProcess {
    pub socket: PathBuf,
    pub metrics: Option<std::net::SocketAddr>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InProcess {
    pub fn start(cfg: DaemonConfig) -> InProcess {
        let d = Daemon::bind(cfg).expect("the daemon binds");
        let socket = d.socket().to_path_buf();
        let metrics = d.metrics_addr();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(d.serve(async move {
                let _ = rx.await;
            }))
            .unwrap();
        });
        InProcess {
            socket,
            metrics,
            stop: Some(tx),
            thread: Some(thread),
        }
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The body of each test binary's `daemon_process` test, which [`Separate`] re-runs this
/// binary as: serves a daemon on `BATON_TEST_DAEMON_SOCKET`; without the variable (an ordinary
/// test run) it returns at once.
pub fn serve_daemon_if_asked() {
    let Some(socket) = std::env::var_os("BATON_TEST_DAEMON_SOCKET") else {
        return;
    };
    Daemon::bind(DaemonConfig::new(socket.into()))
        .unwrap()
        .run()
        .unwrap();
}

/// The uid and gid the tests run other users' processes as.
pub const NOBODY: u32 = 65534;

/// The name of the group with [`NOBODY`]'s gid (`nogroup` or `nobody`), to give a system
/// daemon's socket to so that `nobody`'s processes may connect; `None` if there is none.
pub fn nobody_group() -> Option<String> {
    [c"nogroup", c"nobody"].iter().find_map(|g| {
        // SAFETY: a valid C string; the record is read at once.
        let gr = unsafe { libc::getgrnam(g.as_ptr()) };
        // SAFETY: non-null results point to a valid record.
        (!gr.is_null() && unsafe { (*gr).gr_gid } == NOBODY).then(|| g.to_str().unwrap().into())
    })
}

/// The group to give a system daemon's socket to when this test may run processes as another
/// user ([`NOBODY`]): it needs root and [`nobody_group`]. Otherwise the part is skipped, and
/// visibly: see [`skip`].
pub fn as_other_users(what: &str) -> Option<String> {
    let why = if !rustix::process::geteuid().is_root() {
        "needs root"
    } else {
        match nobody_group() {
            Some(group) => return Some(group),
            None => "no group with gid 65534",
        }
    };
    skip(what, why);
    None
}

/// Records that `what` did not run, and `why`: appended to the file `$BATON_SKIP_LOG` names
/// (`scripts/test.sh` lists those lines in its last), and a failure under `BATON_CI_STRICT=1`,
/// which allows no skip.
pub fn skip(what: &str, why: &str) {
    assert!(
        std::env::var_os("BATON_CI_STRICT").is_none_or(|v| v != "1"),
        "{what}: {why}, and BATON_CI_STRICT=1 allows no skip"
    );
    eprintln!("skipped: {what} ({why})");
    if let Some(log) = std::env::var_os("BATON_SKIP_LOG") {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .expect("open $BATON_SKIP_LOG");
        writeln!(f, "{what} ({why})").expect("write $BATON_SKIP_LOG");
    }
}

/// A child process killed (and reaped) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Re-runs this test binary's `test` as [`NOBODY`] with `env`, and returns what follows
/// `tag` on the line of its output that has it (the re-run test prints it).
pub fn rerun_as_nobody(test: &str, env: &[(&str, &std::ffi::OsStr)], tag: &str) -> String {
    rerun_as(NOBODY, test, env, tag)
}

/// [`rerun_as_nobody`] as user `uid` (in `nobody`'s group, which a system daemon's socket
/// lets in).
pub fn rerun_as(uid: u32, test: &str, env: &[(&str, &std::ffi::OsStr)], tag: &str) -> String {
    use std::os::unix::process::CommandExt;
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            test,
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().copied())
        .uid(uid)
        .gid(NOBODY)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.split_once(tag).map(|(_, rest)| rest.to_owned()))
        .unwrap_or_else(|| {
            panic!(
                "no {tag:?} line from {test}: {text} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// A daemon in a process of its own: this test binary re-run as `daemon_process` (see
/// [`serve_daemon_if_asked`]), so it can be killed.
pub struct Separate {
    pub child: Child,
}

impl Separate {
    pub fn start(socket: &Path) -> Separate {
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "daemon_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("BATON_TEST_DAEMON_SOCKET", socket)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        wait_until("the daemon to answer", || cli(socket).is_ok());
        Separate { child }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Separate {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `baton-sim-client` (of `baton-lab`), built into this test's target directory and profile
/// once per test binary (a no-op when up to date); `BATON_SIM_CLIENT=<path>` skips the build.
pub fn sim_client() -> &'static std::path::Path {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(path) = std::env::var_os("BATON_SIM_CLIENT") {
            return path.into();
        }
        let exe = std::env::current_exe().expect("the test executable's path");
        let profile = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("the profile directory")
            .to_path_buf();
        let target = profile.parent().expect("the target directory");
        let mut build = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        build
            .args([
                "build",
                "--quiet",
                "-p",
                "baton-lab",
                "--bin",
                "baton-sim-client",
            ])
            .env("CARGO_TARGET_DIR", target)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if profile.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo to build baton-sim-client");
        assert!(
            status.success(),
            "building baton-sim-client failed: {status}"
        );
        // An in-process daemon binding while cargo ran narrowed the (process-wide) umask
        // cargo inherited: make sure the program can be run.
        let bin = profile.join("baton-sim-client");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        bin
    })
}

/// A `baton-sim-client` process.
pub struct Sim {
    pub child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Sim {
    pub fn start(socket: &Path, queues: usize, priority: i32) -> Sim {
        Sim::start_with(socket, queues, priority, &[])
    }

    pub fn start_with(socket: &Path, queues: usize, priority: i32, extra: &[&str]) -> Sim {
        let mut cmd = Command::new(sim_client());
        cmd.arg("--socket")
            .arg(socket)
            .args(["--queues", &queues.to_string()])
            .args(["--priority", &priority.to_string()])
            .args(extra);
        Sim::spawn(cmd)
    }

    /// A client that connects only once `proc_root/<its pid>/cgroup` exists: for a daemon
    /// reading a recorded `/proc`, whose entry for a process can be written only once its pid
    /// is known (a client connecting first would be taken for one in no cgroup).
    pub fn start_once_recorded(
        socket: &Path,
        queues: usize,
        priority: i32,
        proc_root: &Path,
    ) -> Sim {
        let mut cmd = Command::new("sh");
        cmd.args([
            "-c",
            "while [ ! -e \"$0/$$/cgroup\" ]; do sleep 0.005; done; exec \"$@\"",
        ])
        .arg(proc_root)
        .arg(sim_client())
        .arg("--socket")
        .arg(socket)
        .args(["--queues", &queues.to_string()])
        .args(["--priority", &priority.to_string()]);
        Sim::spawn(cmd)
    }

    fn spawn(mut cmd: Command) -> Sim {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Sim {
            child,
            stdin,
            lines,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a command and waits for its `ok` (lines before it are kept for `expect`).
    pub fn send(&mut self, cmd: &str) -> Vec<String> {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
        let mut seen = Vec::new();
        loop {
            let l = self.next_line(&format!("ok after {cmd}"));
            if l == "ok" {
                return seen;
            }
            seen.push(l);
        }
    }

    fn next_line(&self, what: &str) -> String {
        match self.lines.recv_timeout(LIMIT) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {what}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the client exited waiting for {what}"),
        }
    }

    /// Waits for a line starting with `prefix`; returns it.
    pub fn expect(&self, prefix: &str) -> String {
        loop {
            let l = self.next_line(prefix);
            if l.starts_with(prefix) {
                return l;
            }
        }
    }

    /// Asserts that no line starting with `prefix` has arrived so far (takes the lines that
    /// did). With [`settled`] first, a decision the daemon did not send: no waiting for
    /// silence, which a slow machine would pass anyway.
    pub fn none_so_far(&self, prefix: &str) {
        while let Ok(l) = self.lines.try_recv() {
            assert!(!l.starts_with(prefix), "unexpected {l:?}");
        }
    }

    /// The client's `status` line as key=value pairs.
    pub fn status(&mut self) -> std::collections::HashMap<String, String> {
        writeln!(self.stdin, "status").unwrap();
        self.stdin.flush().unwrap();
        let l = self.expect("status ");
        let _ok = self.expect("ok");
        l.split_whitespace()
            .skip(1)
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Asks the client to end, and waits for it.
    pub fn exit(&mut self) -> std::process::ExitStatus {
        let _ = writeln!(self.stdin, "exit");
        let _ = self.stdin.flush();
        self.child.wait().expect("the client's exit status")
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether process `pid` has `queues` queues registered.
pub fn registered(socket: &Path, pid: u32, queues: usize) -> bool {
    list(socket)
        .processes
        .iter()
        .any(|p| p.pid == pid && p.queues.len() == queues)
}

/// Whether the daemon at `socket` holds queue `queue` of process `pid` suspended, once it has
/// taken in the queue's latest readiness `ready`: listed until it shows that readiness, then
/// listed once more, in a later round of the daemon's loop, which decides on a round's reports
/// and sends its decisions before the next round begins.
pub fn settled(socket: &Path, pid: u32, queue: usize, ready: bool) -> bool {
    let row = |l: &baton_protocol::ProcessList| {
        l.processes
            .iter()
            .find(|p| p.pid == pid)
            .and_then(|p| p.queues.get(queue))
            .map(|q| (q.ready, q.suspended))
    };
    wait_until("the daemon to take in the queue's readiness", || {
        row(&list(socket)).is_some_and(|(r, _)| r == ready)
    });
    row(&list(socket)).expect("the queue is listed").1
}

/// The priority process `pid` is listed with (its priority hint), if any.
pub fn priority_of(socket: &Path, pid: u32) -> Option<i32> {
    list(socket)
        .processes
        .iter()
        .find(|p| p.pid == pid)?
        .hints
        .iter()
        .find_map(|h| match h {
            baton_protocol::Hint::Priority(p) => Some(p.0),
            _ => None,
        })
}
