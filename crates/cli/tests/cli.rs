//! End-to-end tests of the `baton` binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn baton(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .env("BATON_INTERPOSER", interposer())
        .output()
        .expect("the baton binary runs")
}

/// The interposer `baton run` preloads, built into the profile directory the `baton` binary
/// under test is in (`cargo test` builds the binary but does not place the library there).
fn interposer() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let profile = Path::new(env!("CARGO_BIN_EXE_baton"))
            .parent()
            .expect("the profile directory");
        let target = profile.parent().expect("the target directory");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "--quiet", "-p", "baton-interposer"])
            .env("CARGO_TARGET_DIR", target)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        match profile.file_name().and_then(|name| name.to_str()) {
            Some("debug") | None => {}
            Some("release") => {
                build.arg("--release");
            }
            Some(other) => {
                build.args(["--profile", other]);
            }
        }
        let status = build.status().expect("run cargo to build the interposer");
        assert!(
            status.success(),
            "cargo build -p baton-interposer: {status}"
        );
        let library = profile.join("libbaton_interposer.so");
        assert!(library.exists(), "{} was not built", library.display());
        library
    })
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn demo_json_reports_every_field_and_meets_the_targets() {
    let o = baton(&["demo", "--json", "--duration-s", "2", "--check"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON on stdout");
    for field in [
        "hp_alone_p99_us",
        "hp_native_p99_us",
        "hp_baton_p99_us",
        "be_alone_tput",
        "be_native_tput",
        "be_baton_tput",
        "hp_busy_fraction",
    ] {
        assert!(
            v[field].as_f64().is_some_and(|x| x > 0.0),
            "{field}: {}",
            v[field]
        );
    }
    let f = |k: &str| v[k].as_f64().unwrap();
    assert!(f("hp_baton_p99_us") / f("hp_alone_p99_us") <= 1.05);
    assert!(f("be_baton_tput") >= 0.9 * f("be_alone_tput") * (1.0 - f("hp_busy_fraction")));
    assert!(f("hp_native_p99_us") / f("hp_alone_p99_us") > 1.3);
    assert_eq!(v["time"], "virtual");
}

#[test]
fn demo_table_and_trace() {
    let dir = std::env::temp_dir().join(format!("baton-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("demo-trace.json");
    let o = baton(&[
        "demo",
        "--duration-s",
        "0.5",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8(o.stdout).unwrap();
    for phase in ["HP alone", "BE alone", "HP+BE native", "HP+BE Baton"] {
        assert!(table.contains(phase), "{table}");
    }
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["name"] == "suspended"),
        "no suspended span"
    );
    assert!(events.iter().any(|e| e["cat"] == "command"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_demo_settings_are_refused_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        (&["demo", "--threshold", "0"], "threshold"),
        (&["demo", "--threshold", "8", "--batch", "8"], "batch"),
        (&["demo", "--level", "4"], "level"),
        (&["demo", "--hp-kernel-us", "80-20"], "low end"),
        (&["demo", "--hp-sms", "1000"], "--hp-sms"),
        (&["demo", "--duration-s=-1"], "--duration-s"),
        (&["demo", "--duration-s", "0"], "--duration-s"),
        (&["demo", "--device-level", "1", "--level", "3"], "--level"),
        (&["demo", "--be-depth", "0"], "--be-depth"),
    ];
    for (args, needle) in cases {
        let o = baton(args);
        assert!(!o.status.success(), "{args:?} was accepted");
        let err = stderr(&o);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn policy_list_names_every_policy_on_one_line_each() {
    let o = baton(&["policy", "list"]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    for name in [
        "guard", "hpf", "hhpf", "chpf", "up", "pup", "kedf", "lax", "awf", "cfs", "mlfq", "slo",
    ] {
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing:\n{out}"
        );
    }
    assert_eq!(out.lines().count(), baton_policies::catalog().len());
}

#[test]
fn policy_show_explains_hints_and_unknown_names_are_refused() {
    let o = baton(&["policy", "show", "kedf"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.contains("deadline") && out.contains("1..=1024"),
        "{out}"
    );
    let o = baton(&["policy", "show", "fastest"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown policy"), "{}", stderr(&o));
}

#[test]
fn top_without_a_terminal_says_so_instead_of_panicking() {
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["top", "--socket", "/nonexistent/baton.sock"])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the baton binary runs");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("needs a terminal") && err.contains("baton list"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_misspelt_option_before_the_program_is_refused_with_a_suggestion() {
    for (args, suggestion) in [
        (&["run", "--prority", "10", "--", "true"][..], "--priority"),
        (&["run", "--frobnicate", "--", "true"][..], ""),
    ] {
        let o = baton(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("unexpected argument") && err.contains(suggestion),
            "{args:?}: {err}"
        );
        assert!(!err.contains("cannot run"), "{args:?}: {err}");
    }
    // After the program's name everything is the program's, options included.
    let o = baton(&["run", "--local", "sh", "-c", "exit 7", "--prority"]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
}

#[test]
fn a_program_that_cannot_run_exits_as_a_shell_says_and_bad_values_exit_2() {
    let o = baton(&["run", "--local", "--", "/nonexistent/program"]);
    assert_eq!(o.status.code(), Some(127), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot run /nonexistent/program"));
    let dir = std::env::temp_dir().join(format!("baton-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_executable = dir.join("data.txt");
    std::fs::write(&not_executable, "not a program").unwrap();
    let o = baton(&["run", "--local", "--", not_executable.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(o.status.code(), Some(126), "{}", stderr(&o));
    // What clap refuses and what Baton refuses exit alike, and say it once.
    for args in [
        &["run", "--priority", "500", "--", "true"][..],
        &["run", "--threshold", "0", "--", "true"][..],
        &["run", "--utilization", "0", "--", "true"][..],
        &["run", "--level", "9", "--", "true"][..],
        &["top", "--interval", "100"][..],
        &["trace", "--seconds", "5000"][..],
    ] {
        let o = baton(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.matches("invalid").count() <= 1, "{args:?}: {err}");
    }
}

#[test]
fn doctor_without_a_driver_claims_no_way_of_sharing() {
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args([
            "doctor",
            "--json",
            "--no-self-test",
            "--cuda-lib",
            "/nonexistent/libcuda.so.1",
            "--socket",
            "/nonexistent/baton.sock",
        ])
        .output()
        .expect("the baton binary runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["driver"]["found"], false, "{v}");
    let how = v["sharing"]["how"].as_str().unwrap_or_default();
    assert!(how.starts_with("none"), "{v}");
}

/// A stand-in for `nvidia-cuda-mps-control`: `-d` makes the control pipe and a process that
/// stands for the control daemon; its client mode answers `get_server_list` and `quit`.
const FAKE_MPS_CONTROL: &str = r#"#!/bin/sh
pipe="${CUDA_MPS_PIPE_DIRECTORY:?}"
if [ "$1" = "-d" ]; then
    mkfifo "$pipe/control" || exit 1
    sleep 100000 </dev/null >/dev/null 2>&1 &
    echo $! >"$pipe/daemon.pid"
    exit 0
fi
read -r cmd
pid=$(cat "$pipe/daemon.pid" 2>/dev/null)
state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1)
if [ -z "$pid" ] || [ -z "$state" ] || [ "$state" = Z ]; then exit 1; fi
case "$cmd" in
quit) kill "$pid"; rm -f "$pipe/control" "$pipe/daemon.pid" ;;
esac
exit 0
"#;

#[test]
fn a_daemon_with_its_own_mps_server_puts_baton_run_programs_on_it_and_cleans_up() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = std::env::temp_dir().join(format!("baton-cli-mps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let control = dir.join("nvidia-cuda-mps-control");
    std::fs::write(&control, FAKE_MPS_CONTROL).unwrap();
    std::fs::set_permissions(&control, std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.join("baton.sock");
    let s = socket.to_str().unwrap();
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["--socket", s, "daemon", "--mps-server", "--mps-control"])
        .arg(&control)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the daemon starts");
    let pipe = dir.join("baton.sock.mps/pipe");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !(socket.exists() && pipe.join("control").exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "no daemon and MPS server"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["--socket", s, "run", "--", "sh", "-c"])
        .arg("echo \"$CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY $BATON_SOCKET\"")
        .env("BATON_INTERPOSER", interposer())
        .env_remove("CUDA_MPS_PIPE_DIRECTORY")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let seen = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(
        seen,
        format!(
            "{} {} {s}",
            pipe.display(),
            dir.join("baton.sock.mps/log").display()
        )
    );
    // A program that names an MPS of its own keeps it.
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args([
            "--socket",
            s,
            "run",
            "--",
            "sh",
            "-c",
            "echo $CUDA_MPS_PIPE_DIRECTORY",
        ])
        .env("BATON_INTERPOSER", interposer())
        .env("CUDA_MPS_PIPE_DIRECTORY", "/elsewhere")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "/elsewhere");
    let stop = baton(&["--socket", s, "daemon", "--stop"]);
    assert!(stop.status.success(), "{}", stderr(&stop));
    let status = daemon.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut daemon.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(err.contains("started an MPS server"), "{err}");
    assert!(
        !dir.join("baton.sock.mps").exists(),
        "the MPS folders are removed: {err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
