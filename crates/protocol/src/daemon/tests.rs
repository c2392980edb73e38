//! One test per daemon-message rule.

use super::*;
use crate::{ErrorKind, samples};

fn field(m: DaemonMessage) -> String {
    m.validate()
        .expect_err("should be refused")
        .field()
        .unwrap()
        .to_string()
}

fn ops(seq: u64, run: &[u64], suspend: &[u64]) -> DaemonMessage {
    DaemonMessage::Operations(Operations {
        seq,
        run: run.iter().copied().map(QueueId).collect(),
        suspend: suspend.iter().copied().map(QueueId).collect(),
    })
}

#[test]
fn samples_are_valid() {
    for m in samples::daemon_messages() {
        assert!(m.validate().is_ok(), "{m:?}");
    }
}

#[test]
fn operations_seq_starts_at_one() {
    assert_eq!(field(ops(0, &[1], &[])), "operations.seq");
}

#[test]
fn operations_must_change_something() {
    let e = ops(1, &[], &[]).validate().unwrap_err();
    assert!(
        e.to_string().contains("only when a decision changes"),
        "{e}"
    );
}

#[test]
fn operations_are_bounded() {
    let run: Vec<u64> = (0..600).collect();
    let suspend: Vec<u64> = (600..1100).collect();
    assert_eq!(field(ops(1, &run, &suspend)), "operations.run");
}

#[test]
fn operations_run_is_unique() {
    assert_eq!(field(ops(1, &[1, 1], &[])), "operations.run");
}

#[test]
fn operations_suspend_is_unique() {
    assert_eq!(field(ops(1, &[], &[2, 2])), "operations.suspend");
}

#[test]
fn operations_run_and_suspend_are_disjoint() {
    let e = ops(1, &[1, 2], &[3, 2]).validate().unwrap_err();
    assert_eq!(e.field(), Some("operations.suspend"));
    assert!(e.to_string().contains("q2 is both"), "{e}");
}

#[test]
fn configure_must_change_something() {
    let m = DaemonMessage::Configure {
        queue: QueueId(1),
        level: None,
        launch: None,
    };
    assert_eq!(field(m), "configure.level");
}

#[test]
fn configure_level_and_window_checked() {
    let m = DaemonMessage::Configure {
        queue: QueueId(1),
        level: Some(WireLevel(0)),
        launch: None,
    };
    assert_eq!(field(m), "configure.level");
    let m = DaemonMessage::Configure {
        queue: QueueId(1),
        level: None,
        launch: Some(LaunchWindow {
            threshold: 70_000,
            batch: 1,
        }),
    };
    assert_eq!(field(m), "configure.launch");
}

#[test]
fn stats_interval_zero_or_in_range() {
    assert!(
        DaemonMessage::StatsInterval { interval_ms: 0 }
            .validate()
            .is_ok()
    );
    for bad in [1, 49, 60_001] {
        let m = DaemonMessage::StatsInterval { interval_ms: bad };
        assert_eq!(field(m), "stats_interval.interval_ms");
    }
}

#[test]
fn rejected_error_message_checked() {
    let m = DaemonMessage::Rejected {
        queue: None,
        error: ErrorReply {
            kind: ErrorKind::Internal,
            message: "\u{7}".into(),
        },
    };
    assert_eq!(field(m), "rejected.error.message");
}

#[test]
fn release_needs_a_message() {
    let m = DaemonMessage::Release {
        message: String::new(),
    };
    assert_eq!(field(m), "release.message");
}
