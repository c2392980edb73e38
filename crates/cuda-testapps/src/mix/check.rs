//! Checks a run of a [`Plan`] against the fake driver's log of that process
//! (`FAKE_CUDA_LOG`, one JSON object a line; `exec` lines are the commands that executed).
//!
//! What must hold, whatever Baton did in between (suspended, resumed, killed daemons):
//! - **exactly once**: every planned kernel (by its tag) executed once, and no other
//!   `append_tag`; every planned copy executed once on its stream (the `k`-th device-to-device
//!   copy of a stream is its `k`-th planned copy), and no other;
//! - **per-stream order**: the plan's streams map one to one onto the log's streams, and on
//!   each the planned commands have increasing command numbers (`cmd`, the index the driver
//!   gave them at submission) and executed one after another (each starts after the previous
//!   one ended);
//! - **cross-stream dependencies**: each copy after a `cuStreamWaitEvent` started no earlier
//!   than the waited-for kernel (the last one launched on the other stream before the
//!   record) ended;
//! - no command failed.
//!
//! Commands Baton adds (its own event records and waits) are allowed around them.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{Plan, Step};

/// How a log breaks the plan's guarantees; each message names the command.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CheckError {
    /// A log line is not what the fake driver writes.
    #[error("malformed log line: {0}")]
    Malformed(String),
    /// A planned command did not execute exactly once.
    #[error("{what} executed {times} times, expected once")]
    NotOnce {
        /// The command.
        what: String,
        /// How often it executed.
        times: usize,
    },
    /// A command executed that the plan does not have.
    #[error("unplanned command executed: {0}")]
    Unplanned(String),
    /// The plan's streams do not map one to one onto the log's.
    #[error("stream mapping: {0}")]
    Streams(String),
    /// A stream's commands ran out of order, or overlapped.
    #[error("order on plan stream {stream}: {what}")]
    Order {
        /// The plan's stream index.
        stream: usize,
        /// What came in the wrong order.
        what: String,
    },
    /// A copy ran before the kernel it waited for had finished.
    #[error(
        "dependency broken: copy {copy} on plan stream {to} started at {start_ns} ns, before \
         kernel {tag} of stream {from} ended at {end_ns} ns"
    )]
    Dependency {
        /// The copy's index.
        copy: usize,
        /// The stream it ran on.
        to: usize,
        /// The stream waited for.
        from: usize,
        /// The kernel waited for.
        tag: i32,
        /// When the copy started.
        start_ns: u64,
        /// When the kernel ended.
        end_ns: u64,
    },
    /// A command reported an error.
    #[error("command failed: {0}")]
    Failed(String),
}

/// What a passed check covered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Checked {
    /// Kernels found once each.
    pub kernels: usize,
    /// Copies found once each.
    pub copies: usize,
    /// Dependencies found honoured.
    pub dependencies: usize,
}

/// One executed command, as much as the check needs.
#[derive(Clone, Copy, Debug)]
struct Exec<'a> {
    stream: u64,
    cmd: u64,
    start_ns: u64,
    end_ns: u64,
    line: &'a Value,
}

fn field(line: &Value, key: &str) -> Result<u64, CheckError> {
    line[key]
        .as_u64()
        .ok_or_else(|| CheckError::Malformed(format!("no {key} in {line}")))
}

impl<'a> Exec<'a> {
    fn of(line: &'a Value) -> Result<Exec<'a>, CheckError> {
        Ok(Exec {
            stream: field(line, "stream")?,
            cmd: field(line, "cmd")?,
            start_ns: field(line, "start_ns")?,
            end_ns: field(line, "end_ns")?,
            line,
        })
    }
}

/// The lines of a driver log's text. The fake driver writes each line with one `write`, but a
/// process that exits while another of its threads writes (an exit kills the writer in the
/// middle of its `write`) leaves that last line cut short, without its newline: it is
/// dropped. Any other line that is not JSON is an error.
pub fn parse_log(text: &str) -> Result<Vec<Value>, CheckError> {
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    complete
        .lines()
        .map(|l| serde_json::from_str(l).map_err(|e| CheckError::Malformed(format!("{e}: {l}"))))
        .collect()
}

/// Checks the driver log `lines` of one process that ran `plan`; see the module documentation.
pub fn check(plan: &Plan, lines: &[Value]) -> Result<Checked, CheckError> {
    let execs: Vec<&Value> = lines
        .iter()
        .filter(|l| l["ev"] == "exec" && l.get("node").is_none())
        .collect();
    if let Some(bad) = execs.iter().find(|l| l.get("error").is_some()) {
        return Err(CheckError::Failed(bad.to_string()));
    }
    // Kernels by tag.
    let mut kernels: HashMap<i64, Vec<Exec<'_>>> = HashMap::new();
    // Device-to-device copies by log stream, in command order.
    let mut copies: BTreeMap<u64, Vec<Exec<'_>>> = BTreeMap::new();
    for line in &execs {
        match (line["op"].as_str(), line["name"].as_str()) {
            (Some("kernel"), Some("append_tag")) => {
                let tag = line["args"][2]
                    .as_i64()
                    .ok_or_else(|| CheckError::Malformed(line.to_string()))?;
                kernels.entry(tag).or_default().push(Exec::of(line)?);
            }
            (Some("memcpy"), Some("DtoD")) => {
                let e = Exec::of(line)?;
                copies.entry(e.stream).or_default().push(e);
            }
            _ => {}
        }
    }
    for list in copies.values_mut() {
        list.sort_by_key(|e| e.cmd);
    }
    // Each planned kernel once; the streams' mapping from where they ran.
    let mut to_log: Vec<Option<u64>> = vec![None; plan.streams()];
    let mut found: HashMap<i32, Exec<'_>> = HashMap::new();
    for step in &plan.steps {
        let Step::Launch { stream, tag } = *step else {
            continue;
        };
        let runs = kernels.remove(&i64::from(tag)).unwrap_or_default();
        if runs.len() != 1 {
            return Err(CheckError::NotOnce {
                what: format!("kernel {tag} (plan stream {stream})"),
                times: runs.len(),
            });
        }
        let e = runs[0];
        match to_log[stream] {
            None => to_log[stream] = Some(e.stream),
            Some(s) if s == e.stream => {}
            Some(s) => {
                return Err(CheckError::Streams(format!(
                    "kernel {tag} of plan stream {stream} ran on log stream {}, its earlier \
                     kernels on {s}",
                    e.stream
                )));
            }
        }
        found.insert(tag, e);
    }
    if let Some((tag, runs)) = kernels.into_iter().next() {
        return Err(CheckError::Unplanned(format!(
            "kernel {tag}: {}",
            runs[0].line
        )));
    }
    let log_streams: Vec<u64> = to_log
        .iter()
        .enumerate()
        .map(|(i, s)| s.ok_or_else(|| CheckError::Streams(format!("plan stream {i} never ran"))))
        .collect::<Result<_, _>>()?;
    let mut distinct = log_streams.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() != log_streams.len() {
        return Err(CheckError::Streams(format!(
            "two plan streams ran on one log stream: {log_streams:?}"
        )));
    }
    // Each stream's planned copies once, in order; then every stream's sequence.
    let mut next_copy: Vec<usize> = vec![0; plan.streams()];
    let mut sequences: Vec<Vec<(String, Exec<'_>)>> = vec![Vec::new(); plan.streams()];
    let mut dependencies = 0;
    for step in &plan.steps {
        match *step {
            Step::Launch { stream, tag } => {
                sequences[stream].push((format!("kernel {tag}"), found[&tag]));
            }
            Step::Depend {
                from,
                to,
                copy,
                after_tag,
                ..
            } => {
                let on = copies.get(&log_streams[to]).map_or(&[][..], Vec::as_slice);
                let Some(e) = on.get(next_copy[to]).copied() else {
                    return Err(CheckError::NotOnce {
                        what: format!("copy {copy} (plan stream {to})"),
                        times: 0,
                    });
                };
                next_copy[to] += 1;
                sequences[to].push((format!("copy {copy}"), e));
                let waited = found[&after_tag];
                if e.start_ns < waited.end_ns {
                    return Err(CheckError::Dependency {
                        copy,
                        to,
                        from,
                        tag: after_tag,
                        start_ns: e.start_ns,
                        end_ns: waited.end_ns,
                    });
                }
                dependencies += 1;
            }
            Step::Sync { .. } => {}
        }
    }
    for (stream, log) in log_streams.iter().enumerate() {
        let on = copies.get(log).map_or(0, Vec::len);
        if on != next_copy[stream] {
            return Err(CheckError::Unplanned(format!(
                "{on} copies on plan stream {stream}, {} planned",
                next_copy[stream]
            )));
        }
    }
    if let Some((log, list)) = copies.iter().find(|(log, _)| !log_streams.contains(log)) {
        return Err(CheckError::Unplanned(format!(
            "{} copies on log stream {log}, which runs none of the plan's kernels",
            list.len()
        )));
    }
    for (stream, seq) in sequences.iter().enumerate() {
        for pair in seq.windows(2) {
            let ((a, ea), (b, eb)) = (&pair[0], &pair[1]);
            if eb.cmd <= ea.cmd {
                return Err(CheckError::Order {
                    stream,
                    what: format!(
                        "{b} has command number {} but follows {a} with {}",
                        eb.cmd, ea.cmd
                    ),
                });
            }
            if eb.start_ns < ea.end_ns {
                return Err(CheckError::Order {
                    stream,
                    what: format!("{b} started before {a} ended"),
                });
            }
        }
    }
    Ok(Checked {
        kernels: found.len(),
        copies: plan.copies(),
        dependencies,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The log a perfect driver would write for `plan`: every command once, in plan order,
    /// one at a time, 10 ns each, plan stream `s` as log stream `s + 5`, with an event record
    /// of Baton's own now and then.
    fn perfect(plan: &Plan) -> Vec<Value> {
        let mut cmd = vec![0u64; plan.streams()];
        let mut t = 1000u64;
        let mut lines = Vec::new();
        let mut push = |lines: &mut Vec<Value>, stream: usize, op: &str, name: &str, args| {
            lines.push(json!({
                "ev": "exec", "op": op, "name": name, "stream": stream as u64 + 5,
                "cmd": cmd[stream], "args": args, "start_ns": t, "end_ns": t + 10, "pid": 1,
            }));
            cmd[stream] += 1;
            t += 20;
        };
        for (i, step) in plan.steps.iter().enumerate() {
            match *step {
                Step::Launch { stream, tag } => {
                    push(
                        &mut lines,
                        stream,
                        "kernel",
                        "append_tag",
                        json!([1, 2, tag]),
                    );
                }
                Step::Depend { to, .. } => {
                    push(&mut lines, to, "memcpy", "DtoD", json!([3, 4, 4]));
                }
                Step::Sync { stream } => {
                    push(
                        &mut lines,
                        stream,
                        "event_record",
                        "event_record",
                        json!([9]),
                    );
                }
            }
            if i % 7 == 0 {
                lines.push(json!({"ev": "call", "fn": "cuLaunchKernel", "pid": 1}));
            }
        }
        lines
    }

    fn plan() -> Plan {
        Plan::new(11, 200)
    }

    fn find(lines: &[Value], op: &str, pick: impl Fn(&Value) -> bool) -> usize {
        lines
            .iter()
            .position(|l| l["op"] == op && pick(l))
            .expect("such a line")
    }

    #[test]
    fn a_line_cut_by_the_exit_is_dropped_and_any_other_bad_line_fails() {
        let good = r#"{"ev":"call","fn":"cuInit"}"#;
        let text = format!("{good}\n{good}\n{{\"ev\":\"ca");
        assert_eq!(parse_log(&text).unwrap().len(), 2);
        assert_eq!(parse_log(&format!("{good}\n")).unwrap().len(), 1);
        assert!(parse_log("").unwrap().is_empty());
        let cut_inside = format!("{good}\n{{\"ev\":\"ca\n{good}\n");
        assert!(matches!(
            parse_log(&cut_inside),
            Err(CheckError::Malformed(_))
        ));
    }

    #[test]
    fn a_perfect_log_passes() {
        let plan = plan();
        let got = check(&plan, &perfect(&plan)).unwrap();
        assert_eq!(got.kernels, plan.kernels());
        assert_eq!(got.copies, plan.copies());
        assert_eq!(got.dependencies, plan.copies());
    }

    #[test]
    fn a_lost_or_repeated_kernel_fails() {
        let plan = plan();
        let mut lines = perfect(&plan);
        let i = find(&lines, "kernel", |l| l["args"][2] == 17);
        let line = lines.remove(i);
        assert!(matches!(
            check(&plan, &lines),
            Err(CheckError::NotOnce { times: 0, .. })
        ));
        lines.push(line.clone());
        lines.push(line);
        assert!(matches!(
            check(&plan, &lines),
            Err(CheckError::NotOnce { times: 2, .. })
        ));
    }

    #[test]
    fn a_lost_or_extra_copy_fails() {
        let plan = plan();
        let mut lines = perfect(&plan);
        let i = find(&lines, "memcpy", |_| true);
        let line = lines.remove(i);
        assert!(check(&plan, &lines).is_err());
        lines.insert(i, line.clone());
        let mut extra = line;
        extra["cmd"] = json!(100_000);
        extra["start_ns"] = json!(10_000_000);
        extra["end_ns"] = json!(10_000_010);
        lines.push(extra);
        assert!(matches!(
            check(&plan, &lines),
            Err(CheckError::Unplanned(_))
        ));
    }

    #[test]
    fn kernels_swapped_on_a_stream_fail() {
        let plan = plan();
        let mut lines = perfect(&plan);
        let tags = plan.tags(0);
        let (a, b) = (
            find(&lines, "kernel", |l| l["args"][2] == tags[1]),
            find(&lines, "kernel", |l| l["args"][2] == tags[2]),
        );
        let (ca, cb) = (lines[a]["cmd"].clone(), lines[b]["cmd"].clone());
        lines[a]["cmd"] = cb;
        lines[b]["cmd"] = ca;
        assert!(matches!(
            check(&plan, &lines),
            Err(CheckError::Order { stream: 0, .. })
        ));
    }

    #[test]
    fn overlapping_commands_of_a_stream_fail() {
        let plan = plan();
        let mut lines = perfect(&plan);
        let tags = plan.tags(1);
        let b = find(&lines, "kernel", |l| l["args"][2] == tags[1]);
        let a_end = lines[find(&lines, "kernel", |l| l["args"][2] == tags[0])]["end_ns"].clone();
        lines[b]["start_ns"] = json!(a_end.as_u64().unwrap() - 1);
        assert!(matches!(
            check(&plan, &lines),
            Err(CheckError::Order { stream: 1, .. })
        ));
    }

    #[test]
    fn a_copy_that_did_not_wait_fails() {
        let plan = plan();
        let mut lines = perfect(&plan);
        // A copy whose own stream was done before the kernel it waits for ended: moved to
        // right after its stream's previous command, it keeps its stream's order but runs
        // before the kernel ended.
        let mut moved = false;
        let mut copies = 0;
        for step in &plan.steps {
            let Step::Depend { to, after_tag, .. } = *step else {
                continue;
            };
            let stream = to as u64 + 5;
            let copy = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l["op"] == "memcpy" && l["stream"] == stream)
                .map(|(i, _)| i)
                .nth(copies_on(&plan, step, to))
                .unwrap();
            copies += 1;
            let cmd = lines[copy]["cmd"].as_u64().unwrap();
            let prev = lines
                .iter()
                .find(|l| l["stream"] == stream && l["cmd"] == cmd - 1)
                .map(|l| l["end_ns"].as_u64().unwrap());
            let waited = lines[find(&lines, "kernel", |l| l["args"][2] == after_tag)]["end_ns"]
                .as_u64()
                .unwrap();
            if let Some(prev) = prev.filter(|p| p + 2 < waited) {
                lines[copy]["start_ns"] = json!(prev + 1);
                lines[copy]["end_ns"] = json!(prev + 2);
                moved = true;
                break;
            }
        }
        assert!(moved && copies > 0, "no such copy in the plan");
        assert!(matches!(
            check(&plan, &lines),
            Err(CheckError::Dependency { .. })
        ));
    }

    /// How many copies on `to` come before `step` in the plan.
    fn copies_on(plan: &Plan, step: &Step, to: usize) -> usize {
        plan.steps
            .iter()
            .take_while(|s| **s != *step)
            .filter(|s| matches!(s, Step::Depend { to: t, .. } if *t == to))
            .count()
    }

    #[test]
    fn two_plan_streams_on_one_log_stream_fail() {
        let plan = plan();
        let mut lines = perfect(&plan);
        for l in &mut lines {
            if l["stream"] == 6 {
                l["stream"] = json!(5);
            }
        }
        assert!(check(&plan, &lines).is_err());
    }

    #[test]
    fn a_failed_command_fails() {
        let plan = plan();
        let mut lines = perfect(&plan);
        lines[3]["error"] = json!("CUDA_ERROR_ILLEGAL_ADDRESS");
        assert!(matches!(check(&plan, &lines), Err(CheckError::Failed(_))));
    }
}
