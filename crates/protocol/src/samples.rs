//! One valid message of every variant (feature `testing`): for round-trip tests here, for the
//! daemon's, agent's and CLI's tests, and as the fuzzer's seeds.

use crate::{
    AgentMessage, AgentTarget, Backend, ClientId, DaemonMessage, DaemonStatus, DecisionCause,
    DeviceRef, ErrorKind, ErrorReply, Hello, HelloReply, Hint, HintKind, LatencySummary,
    LaunchWindow, Operations, OthersRow, PolicyEntry, PolicyParam, PolicyReport, ProcessList,
    ProcessRow, ProcessStarted, QueueCreated, QueueId, QueueRef, QueueRow, QueueStateChange,
    QueueStats, RefusalReason, Refused, Reply, Request, Role, SpanState, StatsReport, Target,
    TraceChunk, TraceRecord, Welcome, WireLevel, WirePriority,
};

/// Every kind of hint, each valid.
pub fn hints() -> Vec<Hint> {
    vec![
        Hint::Priority(WirePriority(10)),
        Hint::Utilization { percent: 30 },
        Hint::TimeSlice { slice_ns: 100_000 },
        Hint::Deadline {
            deadline_ns: 20_000_000,
        },
        Hint::KEdf { k: 2 },
        Hint::Laxity {
            laxity_ns: 5_000_000,
            lax_priority: WirePriority(-5),
            critical_priority: WirePriority(50),
        },
        Hint::ActiveWindow { active: true },
        Hint::Upcoming {
            arrives_in_ns: 2_000_000,
            expires_in_ns: 10_000_000,
        },
        Hint::Clear(HintKind::Deadline),
        Hint::Gang { id: 0x5eed_6a46 },
        Hint::Isolated { sms: 112 },
        Hint::Yielding { slice_ns: 100_000 },
        Hint::Confining { sms: 112 },
        Hint::ConfinedHeld { sms: 104 },
        Hint::CommandTime { command_ns: 60_000 },
        Hint::Readiness {
            ready_permille: 950,
            waiting_permille: 40,
        },
        Hint::TimeSliced,
        Hint::SharedContext,
    ]
}

/// A CUDA device.
pub fn device() -> DeviceRef {
    DeviceRef {
        backend: Backend::Cuda,
        id: "GPU-5b1c2a90-3f2e-4c1d-9a8b-0123456789ab".into(),
        ordinal: 0,
    }
}

/// A queue reference.
pub fn queue_ref() -> QueueRef {
    QueueRef {
        pid: 4242,
        queue: QueueId(3),
    }
}

/// Hellos from both roles.
pub fn hellos() -> Vec<Hello> {
    vec![
        Hello::new(Role::Agent, 4242, "baton-agent 0.1.0"),
        Hello::new(Role::Cli, 777, "baton 0.1.0"),
    ]
}

/// A welcome and a refusal.
pub fn hello_replies() -> Vec<HelloReply> {
    vec![
        HelloReply::Welcome(Welcome {
            version: crate::PROTOCOL_VERSION,
            client: ClientId(1),
            daemon_pid: 99,
            software: "batond 0.1.0".into(),
            policy: "hpf".into(),
            stats_interval_ms: 1000,
        }),
        HelloReply::Refused(Refused::new(
            RefusalReason::Unauthorized,
            "uid 1001 may not use this daemon",
        )),
    ]
}

/// Every agent message.
pub fn agent_messages() -> Vec<AgentMessage> {
    let mut v = vec![
        AgentMessage::ProcessStarted(ProcessStarted::new(
            4242,
            "python",
            &["python", "serve.py", "--port", "8080"],
            vec![Hint::Priority(WirePriority(10))],
        )),
        AgentMessage::ProcessExiting { exit_code: Some(0) },
        AgentMessage::QueueCreated(QueueCreated {
            queue: QueueId(3),
            label: "stream 0x7f3a00001230".into(),
            device: device(),
            level: WireLevel(1),
            max_level: WireLevel(2),
            launch: LaunchWindow {
                threshold: 16,
                batch: 8,
            },
            hints: vec![Hint::Priority(WirePriority(-3))],
            ready: false,
            transition: 0,
            at_ns: 1_000,
        }),
        AgentMessage::QueueDestroyed { queue: QueueId(3) },
        AgentMessage::QueueConfigChanged {
            queue: QueueId(3),
            level: WireLevel(2),
            launch: LaunchWindow {
                threshold: 4,
                batch: 2,
            },
        },
        AgentMessage::QueueState(QueueStateChange {
            queue: QueueId(3),
            ready: true,
            transition: 1,
            at_ns: 2_000,
        }),
        AgentMessage::Stats(StatsReport {
            at_ns: 3_000,
            queues: vec![QueueStats {
                queue: QueueId(3),
                launched: 100,
                completed: 96,
                in_flight: 4,
                buffered: 12,
                busy_ns: 1_500,
            }],
        }),
        AgentMessage::Applied { seq: 1 },
        AgentMessage::ConfigFailed {
            queue: QueueId(3),
            message: "level L3 is not supported here: this hardware queue supports up to L2".into(),
        },
        AgentMessage::Pong { nonce: 7 },
    ];
    for hint in hints() {
        let target = match hint {
            Hint::ActiveWindow { .. }
            | Hint::Gang { .. }
            | Hint::Isolated { .. }
            | Hint::Yielding { .. }
            | Hint::TimeSliced
            | Hint::SharedContext => AgentTarget::Process,
            Hint::KEdf { .. } => continue,
            _ => AgentTarget::Queue(QueueId(3)),
        };
        v.push(AgentMessage::Hint { target, hint });
    }
    v
}

/// Every daemon message.
pub fn daemon_messages() -> Vec<DaemonMessage> {
    vec![
        DaemonMessage::Operations(Operations {
            seq: 1,
            run: vec![QueueId(1)],
            suspend: vec![QueueId(3), QueueId(4)],
        }),
        DaemonMessage::Configure {
            queue: QueueId(3),
            level: Some(WireLevel(2)),
            launch: None,
        },
        DaemonMessage::Attention {
            queue: QueueId(4),
            report: false,
            unbounded: true,
            watch: false,
            remeasure: true,
            hold: false,
            leading: true,
        },
        DaemonMessage::StatsInterval { interval_ms: 250 },
        DaemonMessage::Ping { nonce: 7 },
        DaemonMessage::Rejected {
            queue: Some(QueueId(2000)),
            error: ErrorReply::new(
                ErrorKind::LimitReached,
                "this process already has 1024 queues, the most the daemon schedules",
            ),
        },
        DaemonMessage::Release {
            message: "the daemon is shutting down; queues run unscheduled".into(),
        },
    ]
}

/// Every request.
pub fn requests() -> Vec<Request> {
    let mut v = vec![
        Request::List { pid: None },
        Request::List { pid: Some(4242) },
        Request::SetPriority {
            target: Target::Process { pid: 4242 },
            priority: WirePriority(10),
        },
        Request::GetPolicy,
        Request::SetPolicy {
            name: "slo".into(),
            params: vec![PolicyParam {
                key: "target_p99_us".into(),
                value: "500".into(),
            }],
        },
        Request::SetConfig {
            target: Target::Queue(queue_ref()),
            level: Some(WireLevel(1)),
            launch: Some(LaunchWindow {
                threshold: 1,
                batch: 1,
            }),
        },
        Request::TraceStart { capacity: 100_000 },
        Request::TraceStop,
        Request::TraceRead { cursor: 0 },
        Request::Status,
        Request::Shutdown,
    ];
    for hint in hints() {
        let target = match hint {
            Hint::ActiveWindow { .. }
            | Hint::Gang { .. }
            | Hint::Isolated { .. }
            | Hint::Yielding { .. }
            | Hint::TimeSliced
            | Hint::SharedContext => Target::Process { pid: 4242 },
            Hint::KEdf { .. } => Target::Device { id: device().id },
            Hint::Clear(_) => Target::All,
            _ => Target::Queue(queue_ref()),
        };
        v.push(Request::Hint { target, hint });
    }
    v
}

/// A queue row.
pub fn queue_row() -> QueueRow {
    QueueRow {
        queue: QueueId(3),
        label: "default stream".into(),
        device: device(),
        ready: true,
        suspended: false,
        since_ns: 12_000,
        level: WireLevel(1),
        max_level: WireLevel(2),
        launch: LaunchWindow {
            threshold: 16,
            batch: 8,
        },
        in_flight: 4,
        buffered: 0,
        launched: 100,
        completed: 96,
        commands_per_sec: 1520.5,
        device_share: 62.5,
        unbounded: true,
        remeasure: false,
        hold: true,
        leading: false,
        hints: vec![Hint::Priority(WirePriority(10))],
    }
}

/// A process row with one queue.
pub fn process_row() -> ProcessRow {
    ProcessRow {
        pid: 4242,
        uid: 1000,
        client: ClientId(1),
        name: "python".into(),
        command: "python serve.py --port 8080".into(),
        connected_ns: 5_000_000_000,
        hints: vec![Hint::ActiveWindow { active: false }],
        queues: vec![queue_row()],
    }
}

/// Every reply.
pub fn replies() -> Vec<Reply> {
    vec![
        Reply::Done,
        Reply::List(ProcessList {
            processes: vec![process_row()],
            truncated: false,
            others: vec![OthersRow {
                device: "GPU-00000000-1111-2222-3333-444444444444".into(),
                processes: 2,
                queues: 3,
                ready: 1,
                suspended: 1,
                priority_min: 0,
                priority_max: 10,
                device_share: 42.5,
            }],
        }),
        Reply::Policy(PolicyReport {
            current: "hpf".into(),
            params: vec![],
            available: vec![PolicyEntry {
                name: "hpf".into(),
                description: "highest priority first per device".into(),
            }],
        }),
        Reply::Status(DaemonStatus {
            software: "batond 0.1.0".into(),
            protocol: crate::PROTOCOL_VERSION,
            pid: 99,
            policy: "hpf".into(),
            uptime_ns: 60_000_000_000,
            agents: 2,
            clis: 1,
            processes: 2,
            queues: 3,
            ready_queues: 2,
            suspended_queues: 1,
            devices: 1,
            decisions: 1234,
            decision_latency: LatencySummary {
                p50_ns: 2_000,
                p99_ns: 9_000,
                max_ns: 30_000,
            },
            operations_sent: 321,
            tracing: true,
            socket: "/run/user/1000/baton.sock".into(),
            metrics: None,
        }),
        Reply::TraceStopped {
            records: 5,
            dropped: 0,
        },
        Reply::Trace(TraceChunk {
            records: trace_records(),
            next: 6,
            complete: true,
        }),
        Reply::Error(ErrorReply::new(
            ErrorKind::UnknownQueue,
            "no queue 4242:q9: it was destroyed or never existed; see `baton list`",
        )),
    ]
}

/// Every kind of trace record.
pub fn trace_records() -> Vec<TraceRecord> {
    vec![
        TraceRecord::Process {
            pid: 4242,
            name: "python".into(),
        },
        TraceRecord::Queue {
            pid: 4242,
            queue: QueueId(3),
            device: device().id,
            label: String::new(),
        },
        TraceRecord::Span {
            pid: 4242,
            queue: QueueId(3),
            state: SpanState::Suspended,
            start_ns: 100,
            end_ns: 250,
        },
        TraceRecord::QueueState {
            pid: 4242,
            queue: QueueId(3),
            ready: true,
            at_ns: 90,
        },
        TraceRecord::Decision {
            at_ns: 95,
            latency_ns: 4_000,
            cause: DecisionCause::QueueState,
            suspended: 1,
            resumed: 0,
        },
        TraceRecord::Hint {
            at_ns: 80,
            target: Target::Queue(queue_ref()),
            hint: Hint::Priority(WirePriority(10)),
        },
    ]
}
