//! Running the test apps against the fake driver, and reading its log.
//!
//! # Finding the fake driver
//!
//! `libfake_cuda.so` is a cdylib, which Cargo cannot build as a dependency of this package.
//! The tests derive the target directory from their own executable
//! (`<target>/<profile>/deps/<test>`) and run `cargo build -p baton-fake-cuda` into it once per
//! test binary (a no-op when up to date, so the library is never stale), then take
//! `<target>/<profile>/libfake_cuda.so` (or the copy in `deps/`). `BATON_FAKE_CUDA_LIB=<path>`
//! skips the build and uses that file. The library is exposed as `libcuda.so.1` and
//! `libcuda.so` (symlinks) in a fresh directory that becomes the apps' `LD_LIBRARY_PATH`.

#![allow(dead_code)] // Each test binary uses a different part.

pub mod fleet;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::Value;

/// The scenarios whose result must not change under Baton, alone or under contention:
/// everything an application does with streams.
pub fn scenarios() -> Vec<&'static str> {
    baton_cuda_testapps::scenarios::transparency().collect()
}

/// How long one app may run before the test kills it and fails (a deadlock, not slowness).
const APP_LIMIT: Duration = Duration::from_secs(120);

/// A fresh directory under Cargo's temporary directory for integration tests.
pub fn temp_dir(tag: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("fake-cuda-{}-{n}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

/// `<target>/<profile>` of this test executable.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable's directory");
    deps.parent().expect("the profile directory").to_path_buf()
}

/// Builds (or finds) `libfake_cuda.so`; see the module documentation.
pub fn fake_library() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        if let Some(path) = std::env::var_os("BATON_FAKE_CUDA_LIB") {
            return PathBuf::from(path);
        }
        build_cdylib("baton-fake-cuda", "libfake_cuda.so")
    })
}

/// Builds (or finds) Baton's `libbaton_interposer.so` the same way as the fake driver;
/// `BATON_INTERPOSER_LIB=<path>` skips the build.
pub fn interposer_library() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        if let Some(path) = std::env::var_os("BATON_INTERPOSER_LIB") {
            return PathBuf::from(path);
        }
        build_cdylib("baton-interposer", "libbaton_interposer.so")
    })
}

/// Builds (or finds) `libbaton.so`, the library programs link Baton's C ABI from;
/// `BATON_LIBBATON=<path>` skips the build.
pub fn libbaton_library() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        if let Some(path) = std::env::var_os("BATON_LIBBATON") {
            return PathBuf::from(path);
        }
        build_cdylib("baton-libbaton", "libbaton.so")
    })
}

/// Builds (or finds) the `baton` executable; `BATON_BIN=<path>` skips the build.
pub fn baton_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(path) = std::env::var_os("BATON_BIN") {
            return PathBuf::from(path);
        }
        build_cdylib("baton-cli", "baton")
    })
}

/// Runs `cargo build -p package` into this test's target directory and profile; the path of
/// the artifact `file` it produced (a cdylib or an executable).
fn build_cdylib(package: &str, file: &str) -> PathBuf {
    let profile = profile_dir();
    let target = profile.parent().expect("the target directory");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--quiet", "-p", package])
        .env("CARGO_TARGET_DIR", target);
    match profile.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            build.arg("--release");
        }
        Some(other) => {
            build.args(["--profile", other]);
        }
    }
    build.current_dir(env!("CARGO_MANIFEST_DIR"));
    let status = build
        .status()
        .unwrap_or_else(|e| panic!("run cargo to build {package}: {e}"));
    assert!(
        status.success(),
        "cargo build -p {package} failed: {status}"
    );
    [profile.join(file), profile.join("deps").join(file)]
        .into_iter()
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("{file} not found in {}", profile.display()))
}

/// A directory holding the fake driver as `libcuda.so.1` and `libcuda.so`.
pub fn driver_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = temp_dir("driver");
        for name in ["libcuda.so.1", "libcuda.so"] {
            std::os::unix::fs::symlink(fake_library(), dir.join(name))
                .expect("link the fake driver");
        }
        dir
    })
}

/// Compiles the C file `tests/data/<name>` with `cc` (or `$CC`) and `args`; the output path.
pub fn compile_c(name: &str, output: &str, args: &[&str]) -> PathBuf {
    let exe = temp_dir("cc").join(output);
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&compiler)
        .args(["-std=c99", "-Wall", "-Werror", "-O1"])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("run the C compiler {compiler:?} (these tests need one): {e}"));
    assert!(status.success(), "compiling {name} failed: {status}");
    exe
}

/// `linked.c`, linked with `-lcuda` against the fake driver.
pub fn linked_program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let dir = driver_dir().to_str().expect("a UTF-8 path").to_owned();
        compile_c("linked.c", "linked", &["-L", &dir, "-lcuda"])
    })
}

fn utf8(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// The fake cuBLAS (`tests/data/fake_cublas.c`) as `libcublas.so.13` and `libcublas.so`, and
/// the fake cuBLASLt it is built on (`tests/data/fake_cublaslt.c`) as `libcublasLt.so.13` and
/// `libcublasLt.so`, in a directory of their own.
pub fn cublas_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let lt = compile_c(
            "fake_cublaslt.c",
            "libcublasLt.so.13",
            &[
                "-O2",
                "-shared",
                "-fPIC",
                "-Wl,-soname,libcublasLt.so.13",
                "-L",
                utf8(driver_dir()),
                "-lcuda",
            ],
        );
        let lt_dir = utf8(lt.parent().expect("its directory")).to_owned();
        let lib = compile_c(
            "fake_cublas.c",
            "libcublas.so.13",
            &[
                "-O2",
                "-shared",
                "-fPIC",
                "-Wl,-soname,libcublas.so.13",
                "-L",
                &lt_dir,
                "-l:libcublasLt.so.13",
                "-L",
                utf8(driver_dir()),
                "-lcuda",
            ],
        );
        let dir = lib.parent().expect("its directory").to_path_buf();
        let link = |from: &Path, name: &str| {
            std::os::unix::fs::symlink(from, dir.join(name))
                .unwrap_or_else(|e| panic!("link {name}: {e}"));
        };
        link(&lib, "libcublas.so");
        link(&lt, "libcublasLt.so.13");
        link(&lt, "libcublasLt.so");
        dir
    })
}

/// `gemm_app.c`, linked with `-lcublas -lcublasLt` or (`linked` false) looking cuBLAS and
/// cuBLASLt up with `dlsym`.
pub fn gemm_app(linked: bool) -> PathBuf {
    static APPS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    let (l, d) = APPS.get_or_init(|| {
        let driver = utf8(driver_dir()).to_owned();
        let cublas = utf8(cublas_dir()).to_owned();
        let linked = compile_c(
            "gemm_app.c",
            "gemm_app_linked",
            &[
                "-DLINKED",
                "-L",
                &cublas,
                "-lcublas",
                "-lcublasLt",
                "-L",
                &driver,
                "-lcuda",
            ],
        );
        let looked_up = compile_c("gemm_app.c", "gemm_app", &["-L", &driver, "-lcuda", "-ldl"]);
        (linked, looked_up)
    });
    if linked { l.clone() } else { d.clone() }
}

/// One finished run of an app.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub log: Log,
}

impl Run {
    /// The one line the app printed, after checking it exited 0.
    pub fn line(&self) -> &str {
        assert_eq!(self.code, Some(0), "exit code; stderr:\n{}", self.stderr);
        self.stdout.trim_end()
    }
}

/// Runs `exe args…` against the fake driver with a fresh log, extra environment `env`.
pub fn run(exe: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
    let dir = temp_dir("run");
    let log_path = dir.join("fake-cuda.log");
    let mut command = Command::new(exe);
    command
        .args(args)
        .env("LD_LIBRARY_PATH", driver_dir())
        .env("FAKE_CUDA_LOG", &log_path)
        .env_remove("FAKE_CUDA_KERNEL_US")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {exe}: {e}"));
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    let output = match finished.recv_timeout(APP_LIMIT) {
        Ok(output) => output.expect("wait for the app"),
        Err(_) => {
            // SAFETY: `pid` is our own child, which has not been reaped (the waiting thread
            // still waits for it).
            unsafe { libc::kill(libc::pid_t::try_from(pid).expect("a pid"), libc::SIGKILL) };
            panic!("{exe} {args:?} did not finish within {APP_LIMIT:?} (deadlock?)");
        }
    };
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    // A final fragment without its newline is a line one of the app's threads was writing when
    // the process exited (see fake-cuda's `log.rs`): not an event, dropped. Every complete
    // line must parse.
    let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
    let lines = complete
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON log line"))
        .collect();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        log: Log { lines },
    }
}

/// The fake driver's log of one run.
pub struct Log {
    pub lines: Vec<Value>,
}

/// The `u64` field `key` of a log line.
pub fn num(line: &Value, key: &str) -> u64 {
    line[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {line}"))
}

impl Log {
    /// The symbols entered, in order.
    pub fn calls(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter(|l| l["ev"] == "call")
            .filter_map(|l| l["fn"].as_str())
            .collect()
    }

    /// Whether `symbol` was entered.
    pub fn called(&self, symbol: &str) -> bool {
        self.calls().contains(&symbol)
    }

    /// Executed commands (graph nodes included).
    pub fn execs(&self) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["ev"] == "exec").collect()
    }

    /// Executed kernels named `name`.
    pub fn kernels(&self, name: &str) -> Vec<&Value> {
        self.execs()
            .into_iter()
            .filter(|l| l["op"] == "kernel" && l["name"] == name)
            .collect()
    }

    /// The one executed `append_tag` with tag `tag`.
    pub fn tag(&self, tag: i64) -> &Value {
        let found: Vec<_> = self
            .kernels("append_tag")
            .into_iter()
            .filter(|l| l["args"][2] == tag)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "append_tag {tag} executed {} times",
            found.len()
        );
        found[0]
    }

    /// Every stream's commands executed exactly once each, in submission order, one at a time:
    /// per (pid, stream), the non-node exec lines have `cmd` 0, 1, 2, … and do not overlap.
    pub fn assert_streams_fifo(&self) {
        let mut streams: std::collections::BTreeMap<(u64, u64), Vec<&Value>> = Default::default();
        for line in self.execs().into_iter().filter(|l| l.get("node").is_none()) {
            streams
                .entry((num(line, "pid"), num(line, "stream")))
                .or_default()
                .push(line);
        }
        for ((pid, stream), lines) in streams {
            for (index, line) in lines.iter().enumerate() {
                assert_eq!(
                    num(line, "cmd"),
                    index as u64,
                    "pid {pid} stream {stream}: command order at {line}"
                );
                assert!(num(line, "start_ns") <= num(line, "end_ns"), "{line}");
                if index > 0 {
                    assert!(
                        num(line, "start_ns") >= num(lines[index - 1], "end_ns"),
                        "overlap at {line}"
                    );
                }
            }
        }
    }

    /// Every launch call of the run executed exactly one kernel (no capture involved).
    pub fn assert_launches_executed(&self) {
        let launches = self
            .calls()
            .iter()
            .filter(|c| c.starts_with("cuLaunchKernel") || c.starts_with("cuLaunchCooperative"))
            .count();
        let kernels = self.execs().iter().filter(|l| l["op"] == "kernel").count();
        assert_eq!(kernels, launches, "kernels executed vs launch calls");
    }

    /// No line carries an error.
    pub fn assert_no_errors(&self) {
        for line in self.execs() {
            assert!(line.get("error").is_none(), "command failed: {line}");
        }
    }
}

/// The work a run executed: kernels (with their arguments), copies, fills and host functions,
/// as a sorted list. Event records are left out: Baton adds its own sync points.
pub fn executed_work(log: &Log) -> Vec<String> {
    let mut v: Vec<String> = log
        .execs()
        .into_iter()
        .filter(|l| {
            matches!(
                l["op"].as_str(),
                Some("kernel" | "memcpy" | "memset" | "host_func")
            )
        })
        .map(|l| {
            // Addresses differ from run to run; everything else must match.
            let args: Vec<String> = l["args"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| match v.as_u64() {
                            Some(n) if n > u64::from(u32::MAX) => "ptr".to_owned(),
                            _ => v.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!("{} {} {}", l["op"], l["name"], args.join(","))
        })
        .collect();
    v.sort();
    v
}

/// Each stream ran its commands in order, once each, without errors, and the work executed
/// is exactly the native run's.
pub fn check_log(what: &str, log: &Log, native: &Log) {
    assert!(!log.lines.is_empty(), "{what}: empty driver log");
    log.assert_streams_fifo();
    log.assert_no_errors();
    let (mine, theirs) = (executed_work(log), executed_work(native));
    if mine != theirs {
        let extra: Vec<_> = mine
            .iter()
            .filter(|w| !theirs.contains(w))
            .take(5)
            .collect();
        let missing: Vec<_> = theirs
            .iter()
            .filter(|w| !mine.contains(w))
            .take(5)
            .collect();
        panic!(
            "{what}: executed work differs from native ({} vs {} items); extra {extra:?}, missing {missing:?}",
            mine.len(),
            theirs.len()
        );
    }
}

/// The fake driver's log at `path`, a JSON value per line (none if it is missing).
pub fn log_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// When each `cuLaunchKernel` call entered the driver.
pub fn launch_calls(lines: &[Value]) -> Vec<u64> {
    lines
        .iter()
        .filter(|l| l["ev"] == "call" && l["fn"] == "cuLaunchKernel")
        .map(|l| num(l, "t_ns"))
        .collect()
}

/// Polls `f` every 2 ms until it holds, failing the test after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits for a program that must succeed; its trimmed standard output.
pub fn finish(child: std::process::Child, what: &str) -> String {
    finish_with_stderr(child, what).0
}

/// [`finish`], with the program's standard error too.
pub fn finish_with_stderr(child: std::process::Child, what: &str) -> (String, String) {
    let out = child.wait_with_output().expect("wait for the program");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{what}: {:?}\nstdout {stdout}\nstderr {stderr}",
        out.status,
    );
    (stdout.trim().to_owned(), stderr)
}

/// The environment that makes a program under Baton log when the daemon's decisions took
/// effect in it (see [`holds`]).
pub const DECISIONS: (&str, &str) = ("BATON_LOG", "baton::decisions=debug");

/// When a program run with [`DECISIONS`] was held, from its standard error: each interval from
/// a suspension taking effect to the next resumption beginning (`u64::MAX` if none), in
/// `CLOCK_MONOTONIC` nanoseconds like the fake driver's log. A launch call inside one reached
/// the driver although its queue was held.
pub fn holds(stderr: &str) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut open: Option<u64> = None;
    for line in stderr.lines().filter(|l| l.contains("baton::decisions")) {
        let t: u64 = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("t_ns="))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no t_ns in the decision line {line:?}"));
        if line.contains(" suspended ") {
            open.get_or_insert(t);
        } else if line.contains(" resuming ")
            && let Some(from) = open.take()
        {
            out.push((from, t));
        }
    }
    if let Some(from) = open {
        out.push((from, u64::MAX));
    }
    out
}

/// The hold that covered the end of a burst at `end`: it took effect before `end` and lasted
/// past it.
pub fn hold_over(holds: &[(u64, u64)], end: u64) -> Option<(u64, u64)> {
    holds
        .iter()
        .copied()
        .find(|(from, to)| *from < end && *to > end)
}

/// The calls among `calls` made inside one of `holds`.
pub fn during_holds(calls: &[u64], holds: &[(u64, u64)]) -> Vec<u64> {
    calls
        .iter()
        .copied()
        .filter(|t| holds.iter().any(|(from, to)| t > from && t < to))
        .collect()
}

/// A `burst` program's window in its own driver log: its first launch call to its last
/// kernel's end.
pub fn burst_window(log: &Path) -> (u64, u64) {
    let lines = log_lines(log);
    let start = *launch_calls(&lines).first().expect("burst launches");
    let end = lines
        .iter()
        .filter(|l| l["ev"] == "exec" && l["name"] == "append_tag")
        .map(|l| num(l, "end_ns"))
        .max()
        .expect("burst kernels ran");
    (start, end)
}
