//! One test per listing rule.

use super::*;
use crate::samples::{process_row, queue_row};
use crate::{Backend, MAX_PID};

fn list(processes: Vec<ProcessRow>) -> ProcessList {
    ProcessList {
        processes,
        truncated: false,
        others: vec![],
    }
}

fn others() -> OthersRow {
    OthersRow {
        device: "GPU-1".into(),
        processes: 2,
        queues: 3,
        ready: 1,
        suspended: 0,
        priority_min: -5,
        priority_max: 10,
        device_share: 40.0,
    }
}

fn field(l: ProcessList) -> String {
    l.validate()
        .expect_err("should be refused")
        .field()
        .unwrap()
        .to_string()
}

fn with_queue(q: QueueRow) -> ProcessList {
    let mut p = process_row();
    p.queues = vec![q];
    list(vec![p])
}

#[test]
fn sample_is_valid() {
    assert!(list(vec![process_row()]).validate().is_ok());
}

#[test]
fn processes_are_bounded() {
    let ps = (1..=u32::try_from(MAX_LIST_PROCESSES).unwrap() + 1)
        .map(|pid| ProcessRow {
            pid,
            queues: vec![],
            ..process_row()
        })
        .collect();
    assert_eq!(field(list(ps)), "processes");
}

#[test]
fn queues_in_all_are_bounded() {
    let per = MAX_QUEUES_PER_CLIENT;
    let ps = (1..=u32::try_from(MAX_LIST_QUEUES / per).unwrap() + 1)
        .map(|pid| ProcessRow {
            pid,
            queues: (0..per as u64)
                .map(|q| QueueRow {
                    queue: QueueId(q),
                    ..queue_row()
                })
                .collect(),
            ..process_row()
        })
        .collect();
    let e = list(ps).validate().unwrap_err();
    assert!(e.to_string().contains("queues in all"), "{e}");
}

#[test]
fn pids_are_unique() {
    assert_eq!(field(list(vec![process_row(), process_row()])), "processes");
}

#[test]
fn pid_is_checked() {
    let p = ProcessRow {
        pid: MAX_PID + 1,
        ..process_row()
    };
    assert_eq!(field(list(vec![p])), "processes[0].pid");
}

#[test]
fn name_and_command_checked() {
    let p = ProcessRow {
        name: String::new(),
        ..process_row()
    };
    assert_eq!(field(list(vec![p])), "processes[0].name");
    let p = ProcessRow {
        command: "x".repeat(MAX_COMMAND_LINE_LEN + 1),
        ..process_row()
    };
    assert_eq!(field(list(vec![p])), "processes[0].command");
}

#[test]
fn process_hints_checked() {
    let p = ProcessRow {
        hints: vec![Hint::KEdf { k: 1 }],
        ..process_row()
    };
    assert_eq!(field(list(vec![p])), "processes[0].hints[0].target");
}

#[test]
fn queues_per_process_are_bounded() {
    let p = ProcessRow {
        queues: (0..=MAX_QUEUES_PER_CLIENT as u64)
            .map(|q| QueueRow {
                queue: QueueId(q),
                ..queue_row()
            })
            .collect(),
        ..process_row()
    };
    assert_eq!(field(list(vec![p])), "processes[0].queues");
}

#[test]
fn queue_ids_are_unique() {
    let p = ProcessRow {
        queues: vec![queue_row(), queue_row()],
        ..process_row()
    };
    assert_eq!(field(list(vec![p])), "processes[0].queues");
}

#[test]
fn queue_label_and_device_checked() {
    let q = QueueRow {
        label: "\n".into(),
        ..queue_row()
    };
    assert_eq!(field(with_queue(q)), "processes[0].queues[0].label");
    let q = QueueRow {
        device: DeviceRef {
            backend: Backend::Other,
            id: "a b".into(),
            ordinal: 0,
        },
        ..queue_row()
    };
    assert_eq!(field(with_queue(q)), "processes[0].queues[0].device.id");
}

#[test]
fn queue_levels_checked() {
    let q = QueueRow {
        level: WireLevel(0),
        ..queue_row()
    };
    assert_eq!(field(with_queue(q)), "processes[0].queues[0].level");
    let q = QueueRow {
        max_level: WireLevel(7),
        ..queue_row()
    };
    assert_eq!(field(with_queue(q)), "processes[0].queues[0].max_level");
    let q = QueueRow {
        level: WireLevel(3),
        max_level: WireLevel(1),
        ..queue_row()
    };
    assert_eq!(field(with_queue(q)), "processes[0].queues[0].level");
}

#[test]
fn queue_launch_checked() {
    let q = QueueRow {
        launch: LaunchWindow {
            threshold: 1,
            batch: 2,
        },
        ..queue_row()
    };
    assert_eq!(field(with_queue(q)), "processes[0].queues[0].launch");
}

#[test]
fn queue_counters_checked() {
    let q = QueueRow {
        in_flight: LaunchConfig::MAX_THRESHOLD + 1,
        ..queue_row()
    };
    assert_eq!(field(with_queue(q)), "processes[0].queues[0].in_flight");
    let q = QueueRow {
        completed: 101,
        ..queue_row()
    };
    assert_eq!(field(with_queue(q)), "processes[0].queues[0].completed");
}

#[test]
fn queue_rates_finite_and_in_range() {
    for bad in [f64::NAN, -1.0, f64::INFINITY, MAX_COMMANDS_PER_SEC * 2.0] {
        let q = QueueRow {
            commands_per_sec: bad,
            ..queue_row()
        };
        assert_eq!(
            field(with_queue(q)),
            "processes[0].queues[0].commands_per_sec"
        );
    }
    for bad in [f64::NAN, -0.5, 100.5] {
        let q = QueueRow {
            device_share: bad,
            ..queue_row()
        };
        assert_eq!(field(with_queue(q)), "processes[0].queues[0].device_share");
    }
}

#[test]
fn queue_hints_checked() {
    let q = QueueRow {
        hints: vec![Hint::ActiveWindow { active: true }],
        ..queue_row()
    };
    assert_eq!(
        field(with_queue(q)),
        "processes[0].queues[0].hints[0].target"
    );
}

#[test]
fn json_for_baton_list_has_readable_keys() {
    let json = serde_json::to_value(list(vec![process_row()])).unwrap();
    let q = &json["processes"][0]["queues"][0];
    assert_eq!(q["queue"], 3);
    assert_eq!(q["device"]["backend"], "cuda");
    assert_eq!(q["level"], 1);
    assert_eq!(q["hints"][0]["priority"], 10);
    assert_eq!(
        json["processes"][0]["hints"][0]["active_window"]["active"],
        false
    );
}

#[test]
fn others_are_anonymous_counts_that_add_up() {
    let with = |o: Vec<OthersRow>| ProcessList {
        others: o,
        ..list(vec![process_row()])
    };
    assert!(with(vec![others()]).validate().is_ok());
    for (bad, at) in [
        (
            OthersRow {
                ready: 4,
                ..others()
            },
            "others[0].ready",
        ),
        (
            OthersRow {
                suspended: 4,
                ..others()
            },
            "others[0].suspended",
        ),
        (
            OthersRow {
                processes: 0,
                ..others()
            },
            "others[0].processes",
        ),
        (
            OthersRow {
                priority_min: 11,
                ..others()
            },
            "others[0].priority_min",
        ),
        (
            OthersRow {
                priority_max: 101,
                priority_min: 0,
                ..others()
            },
            "others[0].priority_max",
        ),
        (
            OthersRow {
                device_share: f64::NAN,
                ..others()
            },
            "others[0].device_share",
        ),
        (
            OthersRow {
                device: String::new(),
                ..others()
            },
            "others[0].device",
        ),
    ] {
        assert_eq!(field(with(vec![bad])), at);
    }
    assert_eq!(field(with(vec![others(), others()])), "others");
    // Nothing in a row names a process, a user or a group.
    let json = serde_json::to_value(others()).unwrap();
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "device",
            "device_share",
            "priority_max",
            "priority_min",
            "processes",
            "queues",
            "ready",
            "suspended"
        ]
    );
}
