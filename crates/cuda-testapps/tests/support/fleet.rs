//! Fleets of interposed `mix` programs under a real `baton daemon`, for the soak and chaos
//! tests: starting and killing daemons, starting programs with the interposer preloaded over
//! the fake driver, and checking each one's result and driver log when it ends.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use baton_cuda_testapps::mix::{Plan, check::Checked, check::check, check::parse_log};

use super::{baton_binary, driver_dir, interposer_library};

#[path = "../../../daemon/tests/support/client.rs"]
mod client;
pub use client::*;

/// The program: `runtime-like` of this build, or `$BATON_RUNTIME_LIKE` (a copy, so that a
/// long run is not disturbed by rebuilding).
fn runtime_like() -> PathBuf {
    std::env::var_os("BATON_RUNTIME_LIKE").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_runtime-like")),
        PathBuf::from,
    )
}

/// How long anything the tests wait for may take on a loaded 2-CPU machine.
pub const LIMIT: Duration = Duration::from_secs(120);

/// A `baton daemon` process.
pub struct Daemon {
    pub child: Child,
}

impl Daemon {
    /// Starts `baton daemon --socket socket args…` (its log appended to `socket`'s directory's
    /// `daemon.log`) and waits until it answers.
    pub fn start(socket: &Path, args: &[&str]) -> Daemon {
        let log = File::options()
            .create(true)
            .append(true)
            .open(socket.with_file_name("daemon.log"))
            .expect("the daemon's log");
        let child = Command::new(baton_binary())
            .args(["daemon", "--socket"])
            .arg(socket)
            .args(args)
            .env("BATON_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start baton daemon");
        let mut d = Daemon { child };
        let deadline = Instant::now() + LIMIT;
        while cli(socket).is_err() {
            if let Ok(Some(status)) = d.child.try_wait() {
                panic!("the daemon exited at start: {status}");
            }
            assert!(Instant::now() < deadline, "the daemon never answered");
            std::thread::sleep(Duration::from_millis(2));
        }
        d
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `kill -9`, and reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What one program runs.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub seed: u64,
    pub steps: usize,
    pub think_us: u64,
    pub priority: i32,
    /// `FAKE_CUDA_KERNEL_US`: how long each kernel takes.
    pub kernel_us: u64,
}

/// `runtime-like scenario` with the interposer preloaded over the fake driver (its log at
/// `log`), scheduled at `priority` by the daemon on `socket`.
pub fn interposed(socket: &Path, scenario: &str, priority: i32, log: &Path) -> Command {
    let mut c = Command::new(runtime_like());
    c.arg(scenario)
        .env("LD_PRELOAD", interposer_library())
        .env("LD_LIBRARY_PATH", driver_dir())
        .env("FAKE_CUDA_LOG", log)
        .env("BATON_SCHEDULER", "global")
        .env("BATON_SOCKET", socket)
        .env("BATON_PRIORITY", priority.to_string())
        .stdin(Stdio::null());
    c
}

/// A running `runtime-like mix` under the interposer, scheduled by the daemon on a socket.
pub struct App {
    pub child: Child,
    pub spec: Spec,
    dir: PathBuf,
}

impl App {
    /// Starts `spec` with its own driver log under a fresh directory in `parent`.
    pub fn start(socket: &Path, spec: Spec, parent: &Path) -> App {
        let dir = parent.join(format!("app-{}", spec.seed));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("an app directory");
        let stderr = File::create(dir.join("stderr")).expect("the app's stderr");
        let child = interposed(socket, "mix", spec.priority, &dir.join("driver.log"))
            .env("FAKE_CUDA_KERNEL_US", spec.kernel_us.to_string())
            .env("BATON_TEST_SEED", spec.seed.to_string())
            .env("BATON_TEST_STEPS", spec.steps.to_string())
            .env("BATON_TEST_THINK_US", spec.think_us.to_string())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("start runtime-like mix");
        App { child, spec, dir }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// How long its driver log is now.
    pub fn log_len(&self) -> u64 {
        std::fs::metadata(self.dir.join("driver.log")).map_or(0, |m| m.len())
    }

    /// Whether a kernel executed (its driver log has a kernel line) past byte `offset`.
    pub fn kernel_since(&self, offset: u64) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = File::open(self.dir.join("driver.log")) else {
            return false;
        };
        let mut text = String::new();
        f.seek(SeekFrom::Start(offset)).is_ok()
            && f.read_to_string(&mut text).is_ok()
            && text.contains(r#""op":"kernel""#)
    }

    /// Its exit status, if it has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("poll an app")
    }

    /// Waits for it to exit, then checks its result line and its driver log against its
    /// plan, and removes its files.
    pub fn verify(self) -> Checked {
        let what = format!("mix {:?}", self.spec);
        let out = self.child.wait_with_output().expect("wait for an app");
        let stderr = std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.starts_with("mix ok"),
            "{what}: {}; stdout {stdout}; stderr {stderr}",
            out.status
        );
        let text = std::fs::read_to_string(self.dir.join("driver.log")).expect("a driver log");
        let lines = parse_log(&text).unwrap_or_else(|e| panic!("{what}: {e}"));
        let plan = Plan::new(self.spec.seed, self.spec.steps);
        let checked = check(&plan, &lines)
            .unwrap_or_else(|e| panic!("{what}: the driver log breaks the plan: {e}"));
        let _ = std::fs::remove_dir_all(&self.dir);
        checked
    }
}

/// Totals over verified programs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tally {
    pub programs: u64,
    pub kernels: u64,
    pub copies: u64,
    pub dependencies: u64,
}

impl Tally {
    pub fn add(&mut self, c: Checked) {
        self.programs += 1;
        self.kernels += c.kernels as u64;
        self.copies += c.copies as u64;
        self.dependencies += c.dependencies as u64;
    }
}
