//! Baton's C ABI and Python package from a program's own code, against the fake driver: a C
//! program compiled against `include/baton.h` and linked with `-lbaton`, and a Python program
//! using the `baton` package, each run without Baton (every call: "not loaded"), under the
//! interposer with a scheduler in the process, with the application scheduling its own queues,
//! with Baton switched off, and (C) under `baton run` with a daemon, whose listing must show
//! the priority and hints the program gave.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    baton_binary, compile_c, driver_dir, interposer_library, libbaton_library, run, temp_dir,
};

/// `capi.c`, compiled against the generated header and linked with `-lbaton` and `-lcuda`.
fn program() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../include");
        let libbaton = libbaton_library()
            .parent()
            .expect("libbaton's directory")
            .to_str()
            .expect("a UTF-8 path")
            .to_owned();
        let driver = driver_dir().to_str().expect("a UTF-8 path").to_owned();
        let include = include.to_str().expect("a UTF-8 path").to_owned();
        let rpath = format!("-Wl,-rpath,{libbaton}");
        compile_c(
            "capi.c",
            "capi",
            &[
                "-I", &include, "-L", &libbaton, &rpath, "-lbaton", "-L", &driver, "-lcuda",
            ],
        )
    })
}

fn preload() -> String {
    interposer_library()
        .to_str()
        .expect("a UTF-8 path")
        .to_owned()
}

fn c_run(mode: &str, env: &[(&str, &str)]) -> String {
    let exe = program().to_str().expect("a UTF-8 path").to_owned();
    let r = run(&exe, &[mode], env);
    assert_eq!(r.code, Some(0), "capi {mode}: stderr {}", r.stderr);
    r.stdout.trim().to_owned()
}

#[test]
fn without_baton_every_c_call_says_baton_is_not_loaded() {
    assert_eq!(c_run("absent", &[]), "absent ok");
}

#[test]
fn under_the_interposer_c_priorities_hints_and_status_work() {
    let p = preload();
    assert_eq!(c_run("local", &[("LD_PRELOAD", &p)]), "local ok");
}

#[test]
fn an_application_that_schedules_itself_suspends_and_resumes_its_stream_from_c() {
    let p = preload();
    assert_eq!(
        c_run("app", &[("LD_PRELOAD", &p), ("BATON_SCHEDULER", "app")]),
        "app ok"
    );
}

#[test]
fn with_baton_switched_off_c_calls_say_so() {
    let p = preload();
    assert_eq!(
        c_run("disabled", &[("LD_PRELOAD", &p), ("BATON_ENABLE", "off")]),
        "disabled ok"
    );
}

/// The process `pid`'s queues in the daemon's listing.
fn listed_queues(socket: &Path, pid: u32) -> Vec<Value> {
    let out = Command::new(baton_binary())
        .args(["list", "--json", "--socket"])
        .arg(socket)
        .output()
        .expect("run baton list");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["pid"] == pid)
        .flat_map(|p| p["queues"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn under_baton_run_the_daemon_gets_the_priorities_and_hints_given_from_c() {
    let dir = temp_dir("capi-global");
    let socket = dir.join("baton.sock");
    let go = dir.join("go");
    let mut child = Command::new(baton_binary())
        .args(["run", "--interposer"])
        .arg(interposer_library())
        .arg("--")
        .arg(program())
        .arg("global")
        .env("LD_LIBRARY_PATH", driver_dir())
        .env("FAKE_CUDA_LOG", dir.join("fake.log"))
        .env("BATON_SOCKET", &socket)
        .env("BATON_TEST_GO", &go)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start baton run");
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    // Both streams listed: the one with a priority of its own (10) and hints, the other at
    // the process's priority (3), which the process gave as a process hint.
    let hinted = loop {
        let queues = listed_queues(&socket, pid);
        let text: Vec<String> = queues.iter().map(|q| q["hints"].to_string()).collect();
        if text
            .iter()
            .any(|h| h.contains("\"priority\":10") && h.contains("deadline"))
        {
            break text;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "the daemon never listed the hints; last {text:?}; stderr {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        hinted.iter().any(|h| h.contains("laxity")),
        "laxity: {hinted:?}"
    );
    std::fs::write(&go, b"go").expect("write the go file");
    let out = child.wait_with_output().expect("wait for the program");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}: {stdout} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.trim(), "ready\nglobal ok");
    let _ = Command::new(baton_binary())
        .args(["daemon", "--stop", "--socket"])
        .arg(&socket)
        .output();
}

/// The interpreter for the Python tests, and the search path it needs: `BATON_PYTHON` (a
/// virtual environment with the package installed by pip, as `scripts/test.sh` makes) or
/// `python3` with the package's source on `PYTHONPATH`.
fn python() -> (String, Option<PathBuf>) {
    match std::env::var("BATON_PYTHON") {
        Ok(p) => (p, None),
        Err(_) => (
            "python3".into(),
            Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/src")),
        ),
    }
}

fn py_run(mode: &str, env: &[(&str, &str)]) -> String {
    let (python, path) = python();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/capi.py");
    let script = script.to_str().expect("a UTF-8 path").to_owned();
    let path = path.map(|p| p.to_str().expect("a UTF-8 path").to_owned());
    let mut all: Vec<(&str, &str)> = env.to_vec();
    if let Some(p) = &path {
        all.push(("PYTHONPATH", p));
    }
    let r = run(&python, &[&script, mode], &all);
    assert_eq!(r.code, Some(0), "capi.py {mode}: stderr {}", r.stderr);
    r.stdout.trim().to_owned()
}

#[test]
fn python_without_baton_raises_not_loaded() {
    assert_eq!(py_run("absent", &[]), "absent ok");
}

#[test]
fn python_priorities_scopes_hints_and_status_under_the_interposer() {
    let p = preload();
    assert_eq!(py_run("local", &[("LD_PRELOAD", &p)]), "local ok");
}

#[test]
fn python_torch_helpers_give_each_thread_a_stream_per_priority() {
    let p = preload();
    assert_eq!(py_run("torch", &[("LD_PRELOAD", &p)]), "torch ok");
}
