//! The daemon commands end to end: `baton daemon`, then `list`, `policy`, `priority`,
//! `hint`, `config`, `trace`, `doctor` and `daemon --stop` against it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn baton(socket: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("--socket")
        .arg(socket)
        .args(args)
        .env_remove("BATON_SOCKET")
        .output()
        .expect("the baton binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn socket() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d.join("baton.sock")
}

#[test]
fn daemon_commands_work_and_errors_say_what_to_do() {
    let s = socket();
    // Nothing answers yet: the error says how to start a daemon.
    let o = baton(&s, &["list"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("baton daemon"),
        "{}",
        text(&o.stderr)
    );

    let mut d = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("--socket")
        .arg(&s)
        .arg("daemon")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !baton(&s, &["list", "--json"]).status.success() {
        assert!(Instant::now() < deadline, "the daemon did not answer");
        std::thread::yield_now();
    }
    let o = baton(&s, &["list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["processes"].as_array().unwrap().len(), 0);
    // An empty table says so, as `kubectl get` does, instead of printing a lone header.
    let o = baton(&s, &["list"]);
    assert!(o.status.success());
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("no program is scheduled"),
        "{}",
        text(&o.stderr)
    );

    let o = baton(&s, &["policy"]);
    assert!(o.status.success());
    assert!(text(&o.stdout).starts_with("hpf"), "{}", text(&o.stdout));
    assert!(baton(&s, &["policy", "hpf"]).status.success());
    let o = baton(&s, &["policy", "fastest"]);
    assert!(
        text(&o.stderr).contains("unknown policy"),
        "{}",
        text(&o.stderr)
    );

    let o = baton(&s, &["priority", "--pid", "1", "5"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no scheduled process has pid 1"),
        "{}",
        text(&o.stderr)
    );
    let o = baton(&s, &["priority", "--pid", "1", "500"]);
    assert!(text(&o.stderr).contains("-100"), "{}", text(&o.stderr));
    let o = baton(&s, &["hint", "--pid", "1", "k", "2"]);
    assert!(
        text(&o.stderr).contains("cannot be given for a process"),
        "{}",
        text(&o.stderr)
    );
    assert!(baton(&s, &["hint", "--all", "k", "2"]).status.success());
    let o = baton(&s, &["config", "--queue", "1:q1", "--level", "2"]);
    assert!(
        text(&o.stderr).contains("no scheduled process"),
        "{}",
        text(&o.stderr)
    );

    let trace = s.with_file_name("trace.json");
    let o = baton(
        &s,
        &[
            "trace",
            "--seconds",
            "0.1",
            "--out",
            trace.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let t: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    assert!(t["traceEvents"].is_array());

    let o = baton(&s, &["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["daemon"]["ok"], true, "{v}");
    assert_eq!(v["daemon"]["status"]["policy"], "hpf");

    assert!(baton(&s, &["daemon", "--stop"]).status.success());
    let status = d.wait().unwrap();
    assert!(status.success());
    assert!(!s.exists(), "the socket is removed at exit");
}
