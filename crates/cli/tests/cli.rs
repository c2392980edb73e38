//! End-to-end tests of the `baton` binary.

use std::process::{Command, Output};

fn baton(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .output()
        .expect("the baton binary runs")
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
