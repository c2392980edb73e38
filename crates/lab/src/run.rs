//! The runner: one thread steps the device, the XQueues, the scheduler and the clients from
//! event to event, as the demo's virtual-time runner does, for any number of clients.

use std::collections::BTreeMap;
use std::sync::Arc;

use baton_core::{Drive, Nanos, XQueue};
use baton_policies::{DeviceId, Hint, QueueHints, Readiness};
use baton_scheduler::{Inbox, LocalScheduler, QueueMeta, StaticProcessInfo};
use baton_sim::{ContextId, Sim, StreamId, TimeMode};

use baton_demo::Route;

use crate::client::{Barrier, Client};
use crate::{Action, ClientResult, ContextSpec, LabResult, LabSpec, Workload};

/// How often a client that measures tells its scheduler its readiness, as the interposer's
/// guard thread does (`READINESS_TICKS` of its ticks).
const READINESS_PERIOD: Nanos = Nanos::from_millis(500);

/// Runs `spec` to its end and returns what every client measured. Deterministic.
pub fn run(spec: LabSpec) -> LabResult {
    let LabSpec {
        device,
        policy,
        duration: end,
        seed,
        sample_every,
        processes,
        global,
        clients: specs,
        mut actions,
        idle_linger,
    } = spec;
    let mut sims: BTreeMap<u32, Sim> = BTreeMap::new();
    for d in specs.iter().map(|c| c.device).chain([0]) {
        sims.entry(d).or_insert_with(|| {
            let sim = Sim::new(device, TimeMode::Virtual);
            sim.with(|m| m.record_completions(true));
            sim
        });
    }
    let inbox = Arc::new(Inbox::new());
    let mut sched = LocalScheduler::new(policy);
    sched.set_process_info_source(Box::new(StaticProcessInfo(processes)));
    sched.record_ops(true);
    for h in global {
        sched.set_global_hint(h, Nanos::ZERO);
    }
    let mut shared_ctx: BTreeMap<(u32, u32), ContextId> = BTreeMap::new();
    let mut clients = Vec::new();
    let mut by_stream: BTreeMap<(u32, StreamId), usize> = BTreeMap::new();
    for (i, spec) in specs.into_iter().enumerate() {
        let sim = &sims[&spec.device];
        let ctx = match spec.context {
            ContextSpec::Own => sim.create_context(),
            ContextSpec::Shared(k) => *shared_ctx
                .entry((spec.device, k))
                .or_insert_with(|| sim.create_context()),
        };
        let mut hw = sim.create_stream(ctx, spec.stream_priority);
        by_stream.insert((spec.device, hw.stream()), i);
        if let (true, Some(slice)) = (spec.scheduled, spec.yields) {
            hw = hw.yielding(slice);
            if let Some(lead) = spec.leads {
                hw = hw.leading(lead);
            }
        }
        if let (true, Some(sms)) = (spec.scheduled, spec.confines) {
            hw = hw.confining(sms);
        }
        let route = if spec.scheduled {
            let mut b = XQueue::builder(hw);
            if let Some(l) = idle_linger {
                b = b.idle_linger(l);
            }
            let q = b
                .drive(Drive::External)
                .clock(sims[&spec.device].clock())
                .sink(inbox.clone())
                .level(spec.level.unwrap_or(device.max_level))
                .config(spec.launch)
                .inflight_budget(spec.inflight_budget.unwrap_or(Nanos::ZERO))
                .early_refill(spec.early_refill)
                .build()
                .expect("the simulated device supports every level up to its own maximum");
            let q = Arc::new(q);
            let mut hints = QueueHints::default();
            for h in &spec.hints {
                hints.apply(*h, Nanos::ZERO);
            }
            let meta = QueueMeta {
                pid: spec.pid,
                device: DeviceId(spec.device),
                hints,
            };
            sched.register(q.clone(), meta, Nanos::ZERO);
            for h in &spec.process_hints {
                // The process was just registered, so it is known.
                let _ = sched.set_process_hint(spec.pid, *h, Nanos::ZERO);
            }
            Route::Scheduled(q)
        } else {
            Route::Raw(hw)
        };
        clients.push(Client::new(spec, route, seed, i as u64));
    }
    actions.sort_by_key(|(t, _)| *t);
    let mut actions = actions.into_iter().peekable();
    let mut samples = vec![Nanos::ZERO];
    let mut work_samples: Vec<Vec<Nanos>> = vec![vec![Nanos::ZERO]; clients.len()];
    let mut next_sample = sample_every;
    let mut t = Nanos::ZERO;
    loop {
        while let Some((_, a)) = actions.next_if(|(at, _)| *at <= t) {
            match a {
                Action::Global(h) => sched.set_global_hint(h, t),
                Action::Hint(i, h) => {
                    if let Some(q) = clients.get(i).and_then(|c| c.route.queue()) {
                        let _ = sched.set_hint(q.id(), h, t);
                    }
                }
                Action::Policy(p) => sched.set_policy(p, t),
            }
        }
        for c in &mut clients {
            if c.act(t, end) {
                if let (
                    Route::Scheduled(q),
                    Workload::Periodic {
                        announce: Some(a), ..
                    },
                ) = (&c.route, c.spec.workload)
                {
                    let lead = c.next_release.map_or(a.lead, |r| r - t);
                    if let Ok(h) = Hint::upcoming(lead, a.grace) {
                        let _ = sched.set_hint(q.id(), h, t);
                    }
                }
            }
        }
        settle(&mut clients, &inbox, &mut sched, t);
        for c in &mut clients {
            // As the interposer's guard thread does: tell the scheduler what the queue measured.
            if let Route::Scheduled(q) = &c.route
                && c.spec.measures
                && let Some(m) = q.command_time_news(c.told_command_time)
            {
                c.told_command_time = Some(m);
                let _ = sched.set_hint(q.id(), Hint::CommandTime(m), t);
            }
            // And, every READINESS_PERIOD, how its program used the queue.
            if let Route::Scheduled(q) = &c.route
                && c.spec.measures
                && t >= c.readiness_mark.0 + READINESS_PERIOD
            {
                let (at, u0) = c.readiness_mark;
                let u = q.usage();
                c.readiness_mark = (t, u);
                let d = u.since(u0);
                // As the interposer: only a queue that had work and whose program waited for
                // it, the time it had work while suspended left out.
                if d.ready > Nanos::ZERO
                    && d.waits > 0
                    && let Some(r) =
                        Readiness::over(d.ready, d.waited, (t - at).saturating_sub(d.held))
                {
                    let _ = sched.set_hint(q.id(), Hint::Readiness(r), t);
                }
            }
        }
        if t >= end {
            break;
        }
        let mut next = end.min(next_sample);
        for sim in sims.values() {
            next = next.min(sim.next_event_time());
        }
        for c in &clients {
            let look = c.route.queue().and_then(|q| q.next_look());
            for n in [c.next_action(), look, c.look_at].into_iter().flatten() {
                next = next.min(n.max(t + Nanos(1)));
            }
        }
        if let Some((at, _)) = actions.peek() {
            next = next.min((*at).max(t + Nanos(1)));
        }
        if let Some(w) = sched.next_wake() {
            next = next.min(w.max(t + Nanos(1)));
        }
        t = next;
        for (dev, sim) in &sims {
            sim.advance_to(next);
            for c in sim.with(|d| d.take_completions()) {
                if let Some(i) = by_stream.get(&(*dev, c.stream)) {
                    let client = &mut clients[*i];
                    client.completed(&c);
                    if client.spec.reacts > Nanos::ZERO {
                        // Its host learns of it `reacts` later (the earliest such look stands).
                        let at = c.ended_at + client.spec.reacts;
                        client.look_at = Some(client.look_at.map_or(at, |l| l.min(at)));
                    }
                }
            }
        }
        barriers(&mut clients);
        if t >= next_sample {
            samples.push(t);
            for (i, c) in clients.iter().enumerate() {
                work_samples[i].push(c.work);
            }
            next_sample = t + sample_every;
        }
    }
    let busy: Vec<Nanos> = clients
        .iter()
        .map(|c| {
            let stream = c.route.stream();
            sims[&c.spec.device].with(|d| d.busy(d.context_of(stream)))
        })
        .collect();
    let results = clients
        .into_iter()
        .zip(work_samples)
        .zip(busy)
        .map(|((c, work_series), context_busy)| ClientResult {
            name: c.spec.name.clone(),
            pid: c.spec.pid,
            queue: c.route.queue().map(|q| q.id()),
            deadline: c.spec.deadline,
            open_jobs: c.open_jobs(),
            jobs: c.jobs,
            work: c.work,
            spin: c.spin,
            work_series,
            context_busy,
        })
        .collect();
    LabResult {
        duration: end,
        clients: results,
        samples,
        ops: sched.take_ops(),
        counters: sched.policy_counters(),
        decisions: sched.decisions(),
        inherited: sched.inherited_resumes(),
    }
}

/// Lets every rank of a group pass its barrier once all of them reached it.
fn barriers(clients: &mut [Client]) {
    let mut groups: Vec<u32> = clients.iter().filter_map(Client::group).collect();
    groups.sort_unstable();
    groups.dedup();
    for g in groups {
        // A rank that passed the last barrier but has not started its step yet is not there.
        let arrived = clients
            .iter()
            .filter(|c| c.group() == Some(g))
            .all(|c| matches!(c.barrier, Barrier::Waiting { .. }));
        if arrived {
            for c in clients.iter_mut().filter(|c| c.group() == Some(g)) {
                c.pass();
            }
        }
    }
}

/// Lets queues, events and the scheduler settle at `t`.
fn settle(clients: &mut [Client], inbox: &Inbox, sched: &mut LocalScheduler, t: Nanos) {
    for _ in 0..1_000 {
        for c in clients.iter_mut() {
            c.look(t);
        }
        let events = inbox.drain();
        let due = sched.next_wake().is_some_and(|w| w <= t);
        if events.is_empty() && !due {
            return;
        }
        sched.on_events(events, t);
        sched.on_timer(t);
    }
}
