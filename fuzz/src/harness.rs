//! The harnesses of the outside-input parsers, shared by the fuzz targets (`fuzz_targets/`,
//! nightly) and the stable-toolchain replay of the committed corpus
//! (`crates/lab/tests/fuzz_corpus.rs`). Each takes any bytes and panics only if an invariant
//! breaks: a parser panicking, or accepting a value outside its documented range.

#![allow(dead_code)] // Each user calls some of them.

/// The `BATON_*`/`XSCHED_*` settings Baton reads from its environment.
const SETTINGS: [&str; 26] = [
    "BATON_BATCH",
    "BATON_CUDA_LIB",
    "BATON_DEADLINE_US",
    "BATON_ENABLE",
    "BATON_KEEP_WINDOW",
    "BATON_LEVEL",
    "BATON_LOG",
    "BATON_MAX_BUFFERED",
    "BATON_POLICY",
    "BATON_PRIORITY",
    "BATON_PROFILE",
    "BATON_SCHEDULER",
    "BATON_SMS",
    "BATON_SOCKET",
    "BATON_STALL_REPORT_S",
    "BATON_THRESHOLD",
    "BATON_UTILIZATION",
    "BATON_YIELD_SLICE_US",
    "XSCHED_AUTO_XQUEUE",
    "XSCHED_AUTO_XQUEUE_BATCH_SIZE",
    "XSCHED_AUTO_XQUEUE_LEVEL",
    "XSCHED_AUTO_XQUEUE_PRIORITY",
    "XSCHED_AUTO_XQUEUE_THRESHOLD",
    "XSCHED_CUDA_LIB",
    "XSCHED_POLICY",
    "XSCHED_SCHEDULER",
];

/// An environment: the input's lines, each `INDEX=VALUE` where the first byte picks the
/// setting (so short inputs reach every one), read through `AgentConfig::from_lookup`.
pub fn agent_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut env: Vec<(&str, String)> = Vec::new();
    for line in text.split('\n') {
        let mut bytes = line.bytes();
        let Some(pick) = bytes.next() else { continue };
        let name = SETTINGS[usize::from(pick) % SETTINGS.len()];
        let value = line.get(1..).unwrap_or("").to_string();
        env.push((name, value));
    }
    let c = baton_agent::AgentConfig::from_lookup(|name| {
        env.iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
    });
    for h in c.process_hints() {
        h.validate().expect("a hint from the environment is valid");
    }
    let _ = c.warnings();
    assert!((1..=3).contains(&c.level.number()), "{:?}", c.level);
}

/// A value a user types on `baton`'s command line: a queue (`PID:qN`), a policy name
/// (`baton policy NAME`, `process:NAME`, `chaos:SEED`), or a hint's number.
pub fn cli_values(data: &[u8]) {
    let [kind, rest @ ..] = data else { return };
    let text = String::from_utf8_lossy(rest);
    match kind % 3 {
        0 => {
            if let Ok(q) = text.parse::<baton_protocol::QueueRef>() {
                q.validate().expect("a parsed queue is valid");
                let again: baton_protocol::QueueRef = q.to_string().parse().expect("round trip");
                assert_eq!(again, q);
            }
        }
        1 => {
            if let Ok(p) = baton_policies::by_name(&text) {
                assert!(!p.name().is_empty());
            }
        }
        _ => {
            // The numbers `baton priority`/`baton hint` take become hints; whatever a hint is
            // given, validation decides and encoding agrees.
            let n: i64 = text.trim().parse().unwrap_or_default();
            let hints = [
                baton_protocol::Hint::Priority(baton_protocol::WirePriority(
                    i32::try_from(n).unwrap_or(i32::MAX),
                )),
                baton_protocol::Hint::Utilization {
                    percent: u8::try_from(n).unwrap_or(u8::MAX),
                },
                baton_protocol::Hint::Deadline {
                    deadline_ns: u64::try_from(n).unwrap_or(0).saturating_mul(1000),
                },
                baton_protocol::Hint::TimeSlice {
                    slice_ns: u64::try_from(n).unwrap_or(0).saturating_mul(1000),
                },
                baton_protocol::Hint::KEdf {
                    k: u32::try_from(n).unwrap_or(u32::MAX),
                },
            ];
            for h in hints {
                let ok = h.validate().is_ok();
                // Each hint to a target it may be given to (`baton hint --pid` or `--all`).
                let target = match h {
                    baton_protocol::Hint::KEdf { .. } => baton_protocol::Target::All,
                    _ => baton_protocol::Target::Process { pid: 1 },
                };
                let mut out = Vec::new();
                let r = baton_protocol::encode_frame(
                    &baton_protocol::Request::Hint { target, hint: h },
                    &mut out,
                );
                assert_eq!(r.is_ok(), ok, "{h:?}");
            }
        }
    }
}

/// `/proc/PID/stat` and `/proc/PID/status` as the scheduler reads them.
pub fn proc_files(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Some(nice) = baton_scheduler::parse_nice(&text) {
        let _ = nice;
    }
    let _ = baton_scheduler::parse_uid(&text);
}
