//! Property tests: no input makes decoding panic, and valid messages round-trip.

use std::collections::BTreeSet;
use std::fmt::Debug;

use baton_protocol::fuzzing::{check_input, seeds};
use baton_protocol::*;
use proptest::collection::{btree_set, vec};
use proptest::prelude::*;

fn decode_any(bytes: &[u8]) {
    fn one<M: Message>(bytes: &[u8]) {
        if let Ok(m) = decode_payload::<M>(bytes) {
            assert!(m.validate().is_ok());
        }
    }
    one::<Hello>(bytes);
    one::<HelloReply>(bytes);
    one::<AgentMessage>(bytes);
    one::<DaemonMessage>(bytes);
    one::<Request>(bytes);
    one::<Reply>(bytes);
}

fn round_trips<M: Message + PartialEq + Debug>(m: &M) -> Result<(), TestCaseError> {
    prop_assert!(m.validate().is_ok(), "{m:?}: {:?}", m.validate());
    let mut frame = Vec::new();
    encode_frame(m, &mut frame).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let back: M = read_frame(&mut &frame[..])
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .ok_or_else(|| TestCaseError::fail("no frame"))?;
    prop_assert_eq!(&back, m);
    Ok(())
}

fn priority() -> impl Strategy<Value = WirePriority> {
    (-100i32..=100).prop_map(WirePriority)
}

fn hint_kind() -> impl Strategy<Value = HintKind> {
    proptest::sample::select(HintKind::ALL.to_vec())
}

fn hint() -> impl Strategy<Value = Hint> {
    prop_oneof![
        priority().prop_map(Hint::Priority),
        (1u8..=100).prop_map(|percent| Hint::Utilization { percent }),
        (MIN_TIME_SLICE_NS..=MAX_TIME_SLICE_NS).prop_map(|slice_ns| Hint::TimeSlice { slice_ns }),
        (1..=MAX_DURATION_NS).prop_map(|deadline_ns| Hint::Deadline { deadline_ns }),
        (1..=MAX_K).prop_map(|k| Hint::KEdf { k }),
        (1..=MAX_DURATION_NS, priority(), priority()).prop_map(|(laxity_ns, a, b)| Hint::Laxity {
            laxity_ns,
            lax_priority: a.min(b),
            critical_priority: a.max(b),
        }),
        any::<bool>().prop_map(|active| Hint::ActiveWindow { active }),
        (1..=MAX_HINT_HORIZON_NS)
            .prop_flat_map(|e| (0..=e, Just(e)))
            .prop_map(|(arrives_in_ns, expires_in_ns)| Hint::Upcoming {
                arrives_in_ns,
                expires_in_ns
            }),
        hint_kind().prop_map(Hint::Clear),
        any::<u64>().prop_map(|id| Hint::Gang { id }),
        (1u32..=baton_protocol::MAX_SMS).prop_map(|sms| Hint::Isolated { sms }),
        (MIN_TIME_SLICE_NS..=MAX_TIME_SLICE_NS).prop_map(|slice_ns| Hint::Yielding { slice_ns }),
        (1u32..=baton_protocol::MAX_SMS).prop_map(|sms| Hint::Confining { sms }),
        (1..=baton_protocol::MAX_DURATION_NS)
            .prop_map(|command_ns| Hint::CommandTime { command_ns }),
        Just(Hint::TimeSliced),
        (0u16..=1000, 0u16..=1000).prop_map(|(ready_permille, waiting_permille)| {
            Hint::Readiness {
                ready_permille,
                waiting_permille,
            }
        }),
    ]
}

fn launch() -> impl Strategy<Value = LaunchWindow> {
    (1u32..=65_536).prop_flat_map(|threshold| {
        let batch = if threshold == 1 {
            Just(1).boxed()
        } else {
            (1..threshold).boxed()
        };
        batch.prop_map(move |batch| LaunchWindow { threshold, batch })
    })
}

fn levels() -> impl Strategy<Value = (WireLevel, WireLevel)> {
    (1u8..=3)
        .prop_flat_map(|max| (1..=max, Just(max)))
        .prop_map(|(l, m)| (WireLevel(l), WireLevel(m)))
}

fn device() -> impl Strategy<Value = DeviceRef> {
    ("[!-~]{1,64}", any::<u32>()).prop_map(|(id, ordinal)| DeviceRef {
        backend: Backend::Cuda,
        id,
        ordinal,
    })
}

/// Distinct hints allowed for `scope`.
fn hint_set(scope: Scope) -> impl Strategy<Value = Vec<Hint>> {
    vec(hint(), 0..12).prop_map(move |hs| {
        let mut seen = BTreeSet::new();
        hs.into_iter()
            .filter(|h| !matches!(h, Hint::Clear(_)) && h.check_scope(scope).is_ok())
            .filter(|h| seen.insert(h.kind()))
            .collect()
    })
}

fn agent_message() -> impl Strategy<Value = AgentMessage> {
    prop_oneof![
        (
            1..=MAX_PID,
            any::<String>(),
            vec(any::<String>(), 0..80),
            hint_set(Scope::Process)
        )
            .prop_map(|(pid, name, argv, hints)| {
                AgentMessage::ProcessStarted(ProcessStarted::new(pid, &name, &argv, hints))
            }),
        (
            any::<u64>(),
            "[a-z0-9 ]{0,64}",
            device(),
            levels(),
            launch(),
            hint_set(Scope::Queue),
            any::<u64>(),
            any::<u64>()
        )
            .prop_map(
                |(q, label, device, (level, max_level), launch, hints, transition, at_ns)| {
                    AgentMessage::QueueCreated(QueueCreated {
                        queue: QueueId(q),
                        label,
                        device,
                        level,
                        max_level,
                        launch,
                        hints,
                        ready: transition % 2 == 1,
                        transition,
                        at_ns,
                    })
                }
            ),
        (any::<u64>(), 1..=u64::MAX, any::<u64>()).prop_map(|(q, transition, at_ns)| {
            AgentMessage::QueueState(QueueStateChange {
                queue: QueueId(q),
                ready: transition % 2 == 1,
                transition,
                at_ns,
            })
        }),
        (any::<Option<u64>>(), hint()).prop_map(|(q, hint)| {
            let target = match (q, hint.kind()) {
                (
                    _,
                    HintKind::ActiveWindow
                    | HintKind::Gang
                    | HintKind::Isolated
                    | HintKind::Yielding
                    | HintKind::TimeSliced,
                ) => AgentTarget::Process,
                (None, HintKind::CommandTime | HintKind::Confining | HintKind::Readiness) => {
                    AgentTarget::Queue(QueueId(0))
                }
                (None, _) => AgentTarget::Process,
                (Some(q), _) => AgentTarget::Queue(QueueId(q)),
            };
            let hint = match hint {
                Hint::KEdf { .. } => Hint::Clear(HintKind::KEdf),
                h => h,
            };
            AgentMessage::Hint { target, hint }
        }),
        (
            any::<u64>(),
            btree_set(any::<u64>(), 0..200),
            any::<u64>(),
            any::<u32>()
        )
            .prop_map(|(at_ns, ids, base, in_flight)| {
                let queues = ids
                    .into_iter()
                    .map(|q| QueueStats {
                        queue: QueueId(q),
                        launched: base.max(q),
                        completed: base.min(q),
                        in_flight: in_flight % 65_537,
                        buffered: q,
                        busy_ns: base,
                    })
                    .collect();
                AgentMessage::Stats(StatsReport { at_ns, queues })
            }),
    ]
}

fn operations() -> impl Strategy<Value = DaemonMessage> {
    (
        1..=u64::MAX,
        btree_set(any::<u64>(), 1..1024),
        any::<usize>(),
    )
        .prop_map(|(seq, ids, cut)| {
            let ids: Vec<QueueId> = ids.into_iter().map(QueueId).collect();
            let cut = cut % (ids.len() + 1);
            DaemonMessage::Operations(Operations {
                seq,
                run: ids[..cut].to_vec(),
                suspend: ids[cut..].to_vec(),
            })
        })
}

fn request() -> impl Strategy<Value = Request> {
    let target = (1..=MAX_PID, any::<Option<u64>>()).prop_map(|(pid, q)| match q {
        Some(q) => Target::Queue(QueueRef {
            pid,
            queue: QueueId(q),
        }),
        None => Target::Process { pid },
    });
    prop_oneof![
        proptest::option::of(1..=MAX_PID).prop_map(|pid| Request::List { pid }),
        (target.clone(), priority())
            .prop_map(|(target, priority)| Request::SetPriority { target, priority }),
        (target.clone(), hint(), "[!-~]{1,64}").prop_map(|(t, hint, dev)| {
            let target = match hint.kind() {
                HintKind::KEdf => Target::Device { id: dev },
                HintKind::ActiveWindow
                | HintKind::Gang
                | HintKind::Isolated
                | HintKind::Yielding
                | HintKind::TimeSliced => Target::Process {
                    pid: match t {
                        Target::Queue(q) => q.pid,
                        Target::Process { pid } => pid,
                        _ => 1,
                    },
                },
                HintKind::CommandTime | HintKind::Confining | HintKind::Readiness => match t {
                    Target::Queue(q) => Target::Queue(q),
                    Target::Process { pid } => Target::Queue(QueueRef {
                        pid,
                        queue: QueueId(1),
                    }),
                    _ => Target::Queue(QueueRef {
                        pid: 1,
                        queue: QueueId(1),
                    }),
                },
                _ => t,
            };
            Request::Hint { target, hint }
        }),
        (
            target,
            proptest::option::of(levels()),
            proptest::option::of(launch())
        )
            .prop_filter("something to change", |(_, l, w)| l.is_some()
                || w.is_some())
            .prop_map(|(target, level, launch)| Request::SetConfig {
                target,
                level: level.map(|(l, _)| l),
                launch,
            }),
        (1..=MAX_TRACE_CAPACITY).prop_map(|capacity| Request::TraceStart { capacity }),
        any::<u64>().prop_map(|cursor| Request::TraceRead { cursor }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_payloads_never_panic(bytes in vec(any::<u8>(), 0..512)) {
        decode_any(&bytes);
    }

    #[test]
    fn arbitrary_streams_never_panic(bytes in vec(any::<u8>(), 0..1024)) {
        check_input(&bytes);
    }

    #[test]
    fn mutated_seeds_never_panic(
        pick in any::<prop::sample::Index>(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let seeds = seeds();
        let mut input = pick.get(&seeds).clone();
        for (at, byte) in edits {
            let i = at.index(input.len());
            input[i] = byte;
        }
        input.truncate(cut.index(input.len() + 1));
        check_input(&input);
        if input.len() > 2 {
            decode_any(&input[2 + FRAME_HEADER_LEN.min(input.len() - 2)..]);
        }
    }

    #[test]
    fn valid_hints_round_trip_inside_requests(r in request()) {
        round_trips(&r)?;
    }

    #[test]
    fn valid_agent_messages_round_trip(m in agent_message()) {
        round_trips(&m)?;
    }

    #[test]
    fn valid_operations_round_trip(m in operations()) {
        round_trips(&m)?;
    }
}
