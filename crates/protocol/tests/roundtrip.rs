//! Every message variant survives encoding and decoding unchanged, through both readers, and
//! the largest valid messages fit their frame limits.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::io::Cursor;

use baton_protocol::samples;
use baton_protocol::*;
use bytes::BytesMut;

fn round_trip<M: Message + PartialEq + Debug>(msgs: &[M]) {
    let mut stream = Vec::new();
    for m in msgs {
        let mut frame = Vec::new();
        encode_frame(m, &mut frame).unwrap_or_else(|e| panic!("{m:?}: {e}"));
        let back: M = read_frame(&mut Cursor::new(&frame)).unwrap().unwrap();
        assert_eq!(&back, m);
        stream.extend_from_slice(&frame);
    }
    // All of them back to back, through the incremental reader.
    let mut buf = BytesMut::from(&stream[..]);
    for m in msgs {
        assert_eq!(&decode_frame::<M>(&mut buf).unwrap().unwrap(), m);
    }
    assert!(buf.is_empty());
}

/// Asserts that `indices` covers `0..count`: every variant has a sample.
fn covers(what: &str, indices: impl IntoIterator<Item = usize>, count: usize) {
    let seen: BTreeSet<usize> = indices.into_iter().collect();
    let want: BTreeSet<usize> = (0..count).collect();
    assert_eq!(seen, want, "{what}: a variant has no sample in `samples`");
}

#[test]
fn handshake_messages() {
    round_trip(&samples::hellos());
    round_trip(&samples::hello_replies());
    covers(
        "role",
        samples::hellos().iter().map(|h| match h.role {
            Role::Agent => 0,
            Role::Cli => 1,
        }),
        2,
    );
    covers(
        "hello reply",
        samples::hello_replies().iter().map(|r| match r {
            HelloReply::Welcome(_) => 0,
            HelloReply::Refused(_) => 1,
        }),
        2,
    );
}

#[test]
fn agent_messages() {
    let msgs = samples::agent_messages();
    round_trip(&msgs);
    covers(
        "agent message",
        msgs.iter().map(|m| match m {
            AgentMessage::ProcessStarted(_) => 0,
            AgentMessage::ProcessExiting { .. } => 1,
            AgentMessage::QueueCreated(_) => 2,
            AgentMessage::QueueDestroyed { .. } => 3,
            AgentMessage::QueueConfigChanged { .. } => 4,
            AgentMessage::QueueState(_) => 5,
            AgentMessage::Hint { .. } => 6,
            AgentMessage::Stats(_) => 7,
            AgentMessage::Applied { .. } => 8,
            AgentMessage::ConfigFailed { .. } => 9,
            AgentMessage::Pong { .. } => 10,
        }),
        11,
    );
}

#[test]
fn daemon_messages() {
    let msgs = samples::daemon_messages();
    round_trip(&msgs);
    covers(
        "daemon message",
        msgs.iter().map(|m| match m {
            DaemonMessage::Operations(_) => 0,
            DaemonMessage::Configure { .. } => 1,
            DaemonMessage::StatsInterval { .. } => 2,
            DaemonMessage::Ping { .. } => 3,
            DaemonMessage::Rejected { .. } => 4,
            DaemonMessage::Release { .. } => 5,
            DaemonMessage::Attention { .. } => 6,
        }),
        7,
    );
}

#[test]
fn requests() {
    let msgs = samples::requests();
    round_trip(&msgs);
    covers(
        "request",
        msgs.iter().map(|m| match m {
            Request::List { .. } => 0,
            Request::SetPriority { .. } => 1,
            Request::Hint { .. } => 2,
            Request::GetPolicy => 3,
            Request::SetPolicy { .. } => 4,
            Request::SetConfig { .. } => 5,
            Request::TraceStart { .. } => 6,
            Request::TraceStop => 7,
            Request::TraceRead { .. } => 8,
            Request::Status => 9,
            Request::Shutdown => 10,
        }),
        11,
    );
}

#[test]
fn replies() {
    let msgs = samples::replies();
    round_trip(&msgs);
    covers(
        "reply",
        msgs.iter().map(|m| match m {
            Reply::Done => 0,
            Reply::List(_) => 1,
            Reply::Policy(_) => 2,
            Reply::Status(_) => 3,
            Reply::TraceStopped { .. } => 4,
            Reply::Trace(_) => 5,
            Reply::Error(_) => 6,
        }),
        7,
    );
    covers(
        "trace record",
        samples::trace_records().iter().map(|r| match r {
            TraceRecord::Process { .. } => 0,
            TraceRecord::Queue { .. } => 1,
            TraceRecord::Span { .. } => 2,
            TraceRecord::QueueState { .. } => 3,
            TraceRecord::Decision { .. } => 4,
            TraceRecord::Hint { .. } => 5,
        }),
        6,
    );
}

#[test]
fn every_hint_kind_travels_from_agents_and_the_cli() {
    let from_agents: BTreeSet<HintKind> = samples::agent_messages()
        .iter()
        .filter_map(|m| match m {
            AgentMessage::Hint { hint, .. } => Some(hint.kind()),
            _ => None,
        })
        .collect();
    let from_cli: BTreeSet<HintKind> = samples::requests()
        .iter()
        .filter_map(|m| match m {
            Request::Hint { hint, .. } => Some(hint.kind()),
            _ => None,
        })
        .collect();
    assert_eq!(from_cli.len(), HintKind::ALL.len());
    // k-EDF is device-wide, so agents may not give it.
    assert_eq!(from_agents.len(), HintKind::ALL.len() - 1);
    assert!(!from_agents.contains(&HintKind::KEdf));
}

// ---- The largest valid messages fit their frame limits. ----

fn fits<M: Message + Debug>(m: &M) -> usize {
    let mut frame = Vec::new();
    encode_frame(m, &mut frame).unwrap_or_else(|e| panic!("largest {} does not fit: {e}", M::NAME));
    frame.len() - FRAME_HEADER_LEN
}

fn max_hints(scope: Scope) -> Vec<Hint> {
    let p = WirePriority(-100);
    [
        Hint::Priority(p),
        Hint::Utilization { percent: 100 },
        Hint::TimeSlice {
            slice_ns: MAX_TIME_SLICE_NS,
        },
        Hint::Deadline {
            deadline_ns: MAX_DURATION_NS,
        },
        Hint::KEdf { k: MAX_K },
        Hint::Laxity {
            laxity_ns: MAX_DURATION_NS,
            lax_priority: p,
            critical_priority: WirePriority(-99),
        },
        Hint::ActiveWindow { active: true },
        Hint::Upcoming {
            arrives_in_ns: MAX_HINT_HORIZON_NS,
            expires_in_ns: MAX_HINT_HORIZON_NS,
        },
        Hint::Gang { id: u64::MAX },
        Hint::Isolated { sms: 112 },
        Hint::Yielding { slice_ns: 100_000 },
        Hint::Confining { sms: 112 },
        Hint::CommandTime {
            command_ns: baton_protocol::MAX_DURATION_NS,
        },
        Hint::Readiness {
            ready_permille: 1000,
            waiting_permille: 1000,
        },
        Hint::TimeSliced,
    ]
    .into_iter()
    .filter(|h| h.check_scope(scope).is_ok())
    .collect()
}

fn max_device() -> DeviceRef {
    DeviceRef {
        backend: Backend::Other,
        id: "d".repeat(MAX_LABEL_LEN),
        ordinal: u32::MAX,
    }
}

#[test]
fn largest_agent_messages_fit() {
    let p = ProcessStarted {
        pid: MAX_PID,
        name: "n".repeat(MAX_NAME_LEN),
        argv: {
            let mut v = vec![String::new(); MAX_ARGS - 1];
            v.push("a".repeat(MAX_COMMAND_LINE_LEN));
            v
        },
        hints: max_hints(Scope::Process),
    };
    fits(&AgentMessage::ProcessStarted(p));
    let q = QueueCreated {
        queue: QueueId(u64::MAX),
        label: "l".repeat(MAX_LABEL_LEN),
        device: max_device(),
        level: WireLevel(3),
        max_level: WireLevel(3),
        launch: LaunchWindow {
            threshold: 65_536,
            batch: 65_535,
        },
        hints: max_hints(Scope::Queue),
        ready: true,
        transition: u64::MAX,
        at_ns: u64::MAX,
    };
    fits(&AgentMessage::QueueCreated(q));
    let s = StatsReport {
        at_ns: u64::MAX,
        queues: (0..MAX_QUEUES_PER_CLIENT as u64)
            .map(|i| QueueStats {
                queue: QueueId(u64::MAX - i),
                launched: u64::MAX,
                completed: u64::MAX,
                in_flight: 65_536,
                buffered: u64::MAX,
                busy_ns: u64::MAX,
            })
            .collect(),
    };
    let len = fits(&AgentMessage::Stats(s));
    assert!(len < MAX_FRAME_LEN, "{len}");
}

#[test]
fn largest_daemon_messages_and_requests_fit() {
    let ops = Operations {
        seq: u64::MAX,
        run: (0..512).map(|i| QueueId(u64::MAX - i)).collect(),
        suspend: (0..512).map(QueueId).collect(),
    };
    fits(&DaemonMessage::Operations(ops));
    let params = (0..MAX_POLICY_PARAMS)
        .map(|i| PolicyParam {
            key: format!("{i:0>32}"),
            value: "v".repeat(MAX_PARAM_VALUE_LEN),
        })
        .collect();
    fits(&Request::SetPolicy {
        name: "p".repeat(MAX_POLICY_NAME_LEN),
        params,
    });
}

#[test]
fn largest_replies_fit() {
    let queue = |q: u64| QueueRow {
        queue: QueueId(u64::MAX - q),
        label: "l".repeat(MAX_LABEL_LEN),
        device: max_device(),
        ready: true,
        suspended: true,
        since_ns: u64::MAX,
        level: WireLevel(3),
        max_level: WireLevel(3),
        launch: LaunchWindow {
            threshold: 65_536,
            batch: 65_535,
        },
        in_flight: 65_536,
        buffered: u64::MAX,
        launched: u64::MAX,
        completed: u64::MAX,
        commands_per_sec: MAX_COMMANDS_PER_SEC,
        device_share: 100.0,
        unbounded: true,
        remeasure: true,
        hold: true,
        leading: false,
        hints: max_hints(Scope::Queue),
    };
    let per = MAX_LIST_QUEUES / MAX_LIST_PROCESSES;
    let processes = (0..u32::try_from(MAX_LIST_PROCESSES).unwrap())
        .map(|i| ProcessRow {
            pid: MAX_PID - i,
            uid: u32::MAX,
            client: ClientId(u64::MAX),
            name: "n".repeat(MAX_NAME_LEN),
            command: "c".repeat(MAX_COMMAND_LINE_LEN),
            connected_ns: u64::MAX,
            hints: max_hints(Scope::Process),
            queues: (0..per as u64).map(queue).collect(),
        })
        .collect();
    let others = (0..MAX_LIST_DEVICES)
        .map(|i| OthersRow {
            device: format!("{i:0>width$}", width = MAX_LABEL_LEN),
            processes: u32::MAX,
            queues: u32::MAX,
            ready: u32::MAX,
            suspended: u32::MAX,
            priority_min: -100,
            priority_max: 100,
            device_share: 100.0,
        })
        .collect();
    let len = fits(&Reply::List(ProcessList {
        processes,
        truncated: true,
        others,
    }));
    assert!(len <= MAX_REPLY_FRAME_LEN, "{len}");
    let records = (0..u32::try_from(MAX_TRACE_CHUNK).unwrap())
        .map(|i| TraceRecord::Process {
            pid: MAX_PID - i,
            name: "n".repeat(MAX_NAME_LEN),
        })
        .collect();
    fits(&Reply::Trace(TraceChunk {
        records,
        next: u64::MAX,
        complete: false,
    }));
    let available = (0..MAX_POLICIES)
        .map(|i| PolicyEntry {
            name: format!("{i:0>32}"),
            description: "d".repeat(MAX_MESSAGE_LEN),
        })
        .collect();
    fits(&Reply::Policy(PolicyReport {
        current: "p".repeat(MAX_POLICY_NAME_LEN),
        params: vec![],
        available,
    }));
}
