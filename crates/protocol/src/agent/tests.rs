//! One test per agent-message rule.

use super::*;
use crate::samples;
use crate::{Backend, HintKind, MAX_PID, WirePriority};

fn field(m: AgentMessage) -> String {
    m.validate()
        .expect_err("should be refused")
        .field()
        .unwrap()
        .to_string()
}

fn started() -> ProcessStarted {
    ProcessStarted::new(42, "python", &["python", "train.py"], vec![])
}

fn created() -> QueueCreated {
    match samples::agent_messages().remove(2) {
        AgentMessage::QueueCreated(q) => q,
        other => panic!("sample 2 is {other:?}"),
    }
}

fn stats(queues: Vec<QueueStats>) -> AgentMessage {
    AgentMessage::Stats(StatsReport { at_ns: 0, queues })
}

fn qstats(id: u64) -> QueueStats {
    QueueStats {
        queue: QueueId(id),
        launched: 10,
        completed: 10,
        in_flight: 0,
        buffered: 0,
        busy_ns: 0,
    }
}

#[test]
fn samples_are_valid() {
    for m in samples::agent_messages() {
        assert!(m.validate().is_ok(), "{m:?}");
    }
}

#[test]
fn process_pid_must_be_a_process_id() {
    let mut p = started();
    p.pid = MAX_PID + 1;
    assert_eq!(
        field(AgentMessage::ProcessStarted(p)),
        "process_started.pid"
    );
}

#[test]
fn process_name_must_be_given() {
    let mut p = started();
    p.name.clear();
    assert_eq!(
        field(AgentMessage::ProcessStarted(p)),
        "process_started.name"
    );
}

#[test]
fn process_name_is_bounded() {
    let mut p = started();
    p.name = "n".repeat(MAX_NAME_LEN + 1);
    assert_eq!(
        field(AgentMessage::ProcessStarted(p)),
        "process_started.name"
    );
}

#[test]
fn argv_count_is_bounded() {
    let mut p = started();
    p.argv = vec![String::new(); MAX_ARGS + 1];
    assert_eq!(
        field(AgentMessage::ProcessStarted(p)),
        "process_started.argv"
    );
}

#[test]
fn argv_total_length_is_bounded() {
    let mut p = started();
    p.argv = vec!["a".repeat(MAX_COMMAND_LINE_LEN / 2 + 1); 2];
    assert_eq!(
        field(AgentMessage::ProcessStarted(p)),
        "process_started.argv"
    );
}

#[test]
fn argv_must_be_printable() {
    let mut p = started();
    p.argv[1] = "line\nbreak".into();
    assert_eq!(
        field(AgentMessage::ProcessStarted(p)),
        "process_started.argv[1]"
    );
}

#[test]
fn process_hints_must_suit_a_process() {
    let mut p = started();
    p.hints = vec![Hint::KEdf { k: 1 }];
    assert_eq!(
        field(AgentMessage::ProcessStarted(p)),
        "process_started.hints[0].target"
    );
}

#[test]
fn process_started_new_fits_anything_into_the_limits() {
    let argv: Vec<String> = (0..200)
        .map(|i| format!("arg\u{1b}{i}").repeat(50))
        .collect();
    let p = ProcessStarted::new(1, &"\u{7}".repeat(1000), &argv, vec![]);
    assert!(AgentMessage::ProcessStarted(p.clone()).validate().is_ok());
    assert!(p.argv.len() <= MAX_ARGS);
    let p = ProcessStarted::new(1, "", &[] as &[&str], vec![]);
    assert_eq!(p.name, "?");
    assert!(AgentMessage::ProcessStarted(p).validate().is_ok());
}

#[test]
fn queue_label_is_bounded_and_printable() {
    let mut q = created();
    q.label = "l".repeat(MAX_LABEL_LEN + 1);
    assert_eq!(field(AgentMessage::QueueCreated(q)), "queue_created.label");
    let mut q = created();
    q.label = "\u{1b}[2J".into();
    assert_eq!(field(AgentMessage::QueueCreated(q)), "queue_created.label");
}

#[test]
fn queue_device_id_is_checked() {
    let mut q = created();
    q.device = DeviceRef {
        backend: Backend::Sim,
        id: String::new(),
        ordinal: 0,
    };
    assert_eq!(
        field(AgentMessage::QueueCreated(q)),
        "queue_created.device.id"
    );
}

#[test]
fn queue_level_must_exist() {
    let mut q = created();
    q.level = WireLevel(0);
    assert_eq!(field(AgentMessage::QueueCreated(q)), "queue_created.level");
}

#[test]
fn queue_max_level_must_exist() {
    let mut q = created();
    q.max_level = WireLevel(4);
    assert_eq!(
        field(AgentMessage::QueueCreated(q)),
        "queue_created.max_level"
    );
}

#[test]
fn queue_level_must_not_exceed_max_level() {
    let mut q = created();
    q.level = WireLevel(3);
    q.max_level = WireLevel(2);
    assert_eq!(field(AgentMessage::QueueCreated(q)), "queue_created.level");
}

#[test]
fn queue_launch_window_is_checked_by_core() {
    let mut q = created();
    q.launch = LaunchWindow {
        threshold: 8,
        batch: 9,
    };
    assert_eq!(field(AgentMessage::QueueCreated(q)), "queue_created.launch");
}

#[test]
fn queue_hints_must_suit_a_queue() {
    let mut q = created();
    q.hints = vec![Hint::ActiveWindow { active: true }];
    assert_eq!(
        field(AgentMessage::QueueCreated(q)),
        "queue_created.hints[0].target"
    );
}

#[test]
fn queue_created_state_must_match_transition_parity() {
    let mut q = created();
    q.ready = true;
    q.transition = 2;
    assert_eq!(
        field(AgentMessage::QueueCreated(q)),
        "queue_created.transition"
    );
    let mut q = created();
    q.ready = true;
    q.transition = 3;
    assert!(AgentMessage::QueueCreated(q).validate().is_ok());
}

#[test]
fn config_change_level_and_window_checked() {
    let m = AgentMessage::QueueConfigChanged {
        queue: QueueId(1),
        level: WireLevel(9),
        launch: LaunchWindow::from(LaunchConfig::default()),
    };
    assert_eq!(field(m), "queue_config_changed.level");
    let m = AgentMessage::QueueConfigChanged {
        queue: QueueId(1),
        level: WireLevel(1),
        launch: LaunchWindow {
            threshold: 0,
            batch: 0,
        },
    };
    assert_eq!(field(m), "queue_config_changed.launch");
}

#[test]
fn state_change_transition_starts_at_one() {
    let m = AgentMessage::QueueState(QueueStateChange {
        queue: QueueId(1),
        ready: false,
        transition: 0,
        at_ns: 0,
    });
    assert_eq!(field(m), "queue_state.transition");
}

#[test]
fn state_change_must_match_transition_parity() {
    let m = AgentMessage::QueueState(QueueStateChange {
        queue: QueueId(1),
        ready: false,
        transition: 5,
        at_ns: 0,
    });
    let e = m.validate().unwrap_err();
    assert!(e.to_string().contains("odd transitions"), "{e}");
}

#[test]
fn hint_values_are_checked() {
    let m = AgentMessage::Hint {
        target: AgentTarget::Process,
        hint: Hint::Priority(WirePriority(1000)),
    };
    assert_eq!(field(m), "hint.hint.priority");
}

#[test]
fn agents_cannot_set_device_wide_k() {
    let m = AgentMessage::Hint {
        target: AgentTarget::Process,
        hint: Hint::KEdf { k: 3 },
    };
    assert_eq!(field(m), "hint.target");
}

#[test]
fn agent_hint_scope_is_checked() {
    let m = AgentMessage::Hint {
        target: AgentTarget::Queue(QueueId(1)),
        hint: Hint::ActiveWindow { active: true },
    };
    assert_eq!(field(m), "hint.target");
    let m = AgentMessage::Hint {
        target: AgentTarget::Queue(QueueId(1)),
        hint: Hint::Clear(HintKind::Priority),
    };
    assert!(m.validate().is_ok());
}

#[test]
fn stats_list_is_bounded() {
    let qs = (0..=MAX_QUEUES_PER_CLIENT as u64).map(qstats).collect();
    assert_eq!(field(stats(qs)), "stats.queues");
}

#[test]
fn stats_queues_are_unique() {
    assert_eq!(field(stats(vec![qstats(1), qstats(1)])), "stats.queues");
}

#[test]
fn stats_completed_at_most_launched() {
    let mut q = qstats(1);
    q.completed = 11;
    assert_eq!(field(stats(vec![q])), "stats.queues[0].completed");
}

#[test]
fn stats_in_flight_is_bounded() {
    let mut q = qstats(1);
    q.in_flight = LaunchConfig::MAX_THRESHOLD + 1;
    assert_eq!(field(stats(vec![q])), "stats.queues[0].in_flight");
}

#[test]
fn config_failed_needs_a_message() {
    let m = AgentMessage::ConfigFailed {
        queue: QueueId(1),
        message: String::new(),
    };
    assert_eq!(field(m), "config_failed.message");
}
