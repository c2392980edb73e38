//! What `/metrics` learns of the service, measured in virtual time: job latency, device time,
//! suspensions and preemption latency.

use baton_protocol::{QueueStats, StatsReport};

use super::*;
use crate::service::PriorityLabels;

fn at(p: &str) -> PriorityLabels {
    PriorityLabels {
        priority: p.to_string(),
    }
}

/// The sequence numbers of the operations frames `a` got that suspend a queue.
fn suspending_frames(a: &Agent) -> Vec<u64> {
    a.take()
        .into_iter()
        .filter_map(|m| match m {
            DaemonMessage::Operations(o) if !o.suspend.is_empty() => Some(o.seq),
            _ => None,
        })
        .collect()
}

fn stats(busy_ns: u64, completed: u64) -> AgentMessage {
    AgentMessage::Stats(StatsReport {
        at_ns: 0,
        queues: vec![QueueStats {
            queue: QueueId(1),
            launched: completed,
            completed,
            in_flight: 0,
            buffered: 0,
            busy_ns,
        }],
    })
}

#[test]
fn a_preemption_is_measured_from_its_frame_to_the_agents_answer() {
    let mut c = core();
    let hp = connect(&mut c, 1, 100, ME, 10);
    let be = connect(&mut c, 2, 200, ME, 0);
    c.at(Nanos::from_millis(1));
    state(&mut c, &be, true, 1);
    // HP's job is released at 2 ms: BE is told to suspend in that round.
    c.at(Nanos::from_millis(2));
    state(&mut c, &hp, true, 1);
    let seqs = suspending_frames(&be);
    assert_eq!(seqs.len(), 1, "one suspending frame");
    // The agent answers 300 µs later.
    c.at(Nanos::from_millis(2) + Nanos::from_micros(300));
    send(&mut c, be.id, AgentMessage::Applied { seq: seqs[0] });
    // HP's job completes at 5 ms: a 3 ms job at priority 10.
    c.at(Nanos::from_millis(5));
    state(&mut c, &hp, false, 2);
    let snap = c.snapshot();
    let svc = &snap.service;
    let pre = &svc.preemption_latency;
    assert_eq!(pre.count(), 1);
    assert!((pre.sum() - 300e-6).abs() < 1e-12, "{}", pre.sum());
    let jobs = svc.job_latency.get(&at("10")).expect("HP's job");
    assert_eq!(jobs.count(), 1);
    assert!((jobs.sum() - 3e-3).abs() < 1e-12, "{}", jobs.sum());
    assert!(
        svc.job_latency.get(&at("0")).is_none(),
        "BE's job has not completed"
    );
    assert_eq!(svc.suspensions.get(&at("0")).map(|s| s.get()), Some(1));
    assert!(svc.suspensions.get(&at("10")).is_none());
    let be_q = snap.queues.iter().find(|q| q.pid == 200).unwrap();
    assert_eq!((be_q.priority, be_q.counts.suspensions), (0, 1));
    // A resume is answered too, and measures nothing.
    let resumed: Vec<u64> = be
        .take()
        .into_iter()
        .filter_map(|m| match m {
            DaemonMessage::Operations(o) => Some(o.seq),
            _ => None,
        })
        .collect();
    assert_eq!(resumed.len(), 1, "BE resumed when HP went idle");
    send(&mut c, be.id, AgentMessage::Applied { seq: resumed[0] });
    assert_eq!(c.snapshot().service.preemption_latency.count(), 1);
}

#[test]
fn device_time_and_completions_add_up_across_reports() {
    let mut c = core();
    let be = connect(&mut c, 2, 200, ME, -5);
    // Agents count from the queue's creation: the first report counts whole.
    send(&mut c, be.id, stats(2_000_000, 5));
    c.at(Nanos::from_secs(1));
    send(&mut c, be.id, stats(5_000_000, 8));
    let svc = c.snapshot().service;
    let busy = svc.busy.get(&at("-5")).map(|b| b.get()).unwrap();
    assert!((busy - 5e-3).abs() < 1e-12, "{busy}");
    assert_eq!(svc.completed.get(&at("-5")).map(|n| n.get()), Some(8));
}
