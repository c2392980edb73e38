//! One test per request rule.

use super::*;
use crate::{HintKind, LaunchWindow, QueueId, samples};

fn field(r: Request) -> String {
    r.validate()
        .expect_err("should be refused")
        .field()
        .unwrap()
        .to_string()
}

fn queue() -> Target {
    Target::Queue(samples::queue_ref())
}

#[test]
fn samples_are_valid() {
    for r in samples::requests() {
        assert!(r.validate().is_ok(), "{r:?}");
    }
}

#[test]
fn list_pid_must_be_a_process_id() {
    assert_eq!(field(Request::List { pid: Some(0) }), "list.pid");
}

#[test]
fn priority_in_range() {
    let r = Request::SetPriority {
        target: queue(),
        priority: WirePriority(-101),
    };
    assert_eq!(field(r), "set_priority.priority");
}

#[test]
fn priority_targets_a_queue_or_process() {
    let r = Request::SetPriority {
        target: Target::All,
        priority: WirePriority(1),
    };
    assert_eq!(field(r), "set_priority.target");
}

#[test]
fn target_pid_is_checked() {
    let r = Request::SetPriority {
        target: Target::Process { pid: 0 },
        priority: WirePriority(1),
    };
    assert_eq!(field(r), "set_priority.target.pid");
    let r = Request::SetPriority {
        target: Target::Queue(QueueRef {
            pid: 0,
            queue: QueueId(1),
        }),
        priority: WirePriority(1),
    };
    assert_eq!(field(r), "set_priority.target.pid");
}

#[test]
fn target_device_id_is_checked() {
    let r = Request::Hint {
        target: Target::Device {
            id: "GPU\u{1b}".into(),
        },
        hint: Hint::KEdf { k: 2 },
    };
    assert_eq!(field(r), "hint.target.id");
}

#[test]
fn hint_values_are_checked() {
    let r = Request::Hint {
        target: queue(),
        hint: Hint::Utilization { percent: 0 },
    };
    assert_eq!(field(r), "hint.hint.percent");
}

#[test]
fn hint_scope_is_checked() {
    let r = Request::Hint {
        target: queue(),
        hint: Hint::KEdf { k: 2 },
    };
    assert_eq!(field(r), "hint.target");
    let r = Request::Hint {
        target: Target::All,
        hint: Hint::Clear(HintKind::Priority),
    };
    assert!(r.validate().is_ok());
}

#[test]
fn set_policy_name_checked() {
    let r = Request::SetPolicy {
        name: String::new(),
        params: vec![],
    };
    assert_eq!(field(r), "set_policy.name");
}

#[test]
fn set_policy_params_checked() {
    let r = Request::SetPolicy {
        name: "slo".into(),
        params: vec![PolicyParam {
            key: "bad key".into(),
            value: "1".into(),
        }],
    };
    assert_eq!(field(r), "set_policy.params[0].key");
}

#[test]
fn set_config_must_change_something() {
    let r = Request::SetConfig {
        target: queue(),
        level: None,
        launch: None,
    };
    assert_eq!(field(r), "set_config.level");
}

#[test]
fn set_config_values_checked() {
    let r = Request::SetConfig {
        target: queue(),
        level: Some(WireLevel(4)),
        launch: None,
    };
    assert_eq!(field(r), "set_config.level");
    let r = Request::SetConfig {
        target: queue(),
        level: None,
        launch: Some(LaunchWindow {
            threshold: 2,
            batch: 2,
        }),
    };
    assert_eq!(field(r), "set_config.launch");
}

#[test]
fn set_config_targets_a_queue_or_process() {
    let r = Request::SetConfig {
        target: Target::Device { id: "sim-0".into() },
        level: Some(WireLevel(1)),
        launch: None,
    };
    assert_eq!(field(r), "set_config.target");
}

#[test]
fn trace_capacity_in_range() {
    assert_eq!(
        field(Request::TraceStart { capacity: 0 }),
        "trace_start.capacity"
    );
    let r = Request::TraceStart {
        capacity: crate::MAX_TRACE_CAPACITY + 1,
    };
    assert_eq!(field(r), "trace_start.capacity");
}
