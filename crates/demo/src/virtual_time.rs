//! Running a phase in virtual time: one thread, the device, the queues, the scheduler and the
//! clients stepped together from event to event. Deterministic.

use std::sync::Arc;

use baton_core::{Drive, Nanos, Priority, XQueue};
use baton_policies::{DeviceId, Hpf, QueueHints};
use baton_scheduler::{Inbox, LocalScheduler, QueueMeta};
use baton_sim::{Sim, TimeMode};

use crate::clients::{BeTracker, HpTracker, be_kernel, hp_request};
use crate::phase::{Phase, PhaseResult, Role};
use crate::{DemoError, Route, Scenario};

/// Submits `cmd` on `role`'s route.
pub(crate) fn submit(
    route: &Route,
    role: Role,
    cmd: baton_sim::SimCommand,
) -> Result<(), DemoError> {
    route
        .submit(cmd)
        .map_err(|source| DemoError::Queue { role, source })
}

/// Builds the route of `role`'s client in a fresh context.
pub(crate) fn client(
    sc: &Scenario,
    sim: &Sim,
    phase: Phase,
    role: Role,
    drive: Drive,
    sink: Arc<Inbox>,
    sched: Option<&mut LocalScheduler>,
) -> Result<(Route, baton_sim::StreamId), DemoError> {
    let ctx = sim.create_context();
    let hw = sim.create_stream(ctx, 0);
    let stream = hw.stream();
    if phase != Phase::Baton {
        return Ok((Route::Raw(hw), stream));
    }
    let q = XQueue::builder(hw)
        .drive(drive)
        .clock(sim.clock())
        .sink(sink)
        .level(sc.effective_level())
        .config(sc.launch)
        .build()
        .map_err(|source| DemoError::Queue { role, source })?;
    let q = Arc::new(q);
    if let Some(s) = sched {
        let priority = match role {
            Role::Hp => sc.hp_priority,
            Role::Be => sc.be_priority,
        };
        let meta = QueueMeta {
            pid: match role {
                Role::Hp => 1,
                Role::Be => 2,
            },
            device: DeviceId(0),
            hints: QueueHints::with_priority(Priority::clamped(priority)),
        };
        s.register(q.clone(), meta, sim.now());
    }
    Ok((Route::Scheduled(q), stream))
}

pub(crate) fn run_phase(
    sc: &Scenario,
    phase: Phase,
    progress: &mut dyn FnMut(f64),
) -> Result<PhaseResult, DemoError> {
    let sim = Sim::new(sc.device, TimeMode::Virtual);
    sim.with(|d| d.record_completions(true));
    let inbox = Arc::new(Inbox::new());
    let mut sched = LocalScheduler::new(Box::new(Hpf));
    sched.record_ops(true);
    let (hp, hp_stream) = client(
        sc,
        &sim,
        phase,
        Role::Hp,
        Drive::External,
        inbox.clone(),
        Some(&mut sched),
    )?;
    let (be, be_stream) = client(
        sc,
        &sim,
        phase,
        Role::Be,
        Drive::External,
        inbox.clone(),
        Some(&mut sched),
    )?;
    let (hp_ctx, be_ctx) = sim.with(|d| (d.context_of(hp_stream), d.context_of(be_stream)));

    let end = sc.duration;
    let drain_limit = end + Nanos::from_secs(60);
    let mut result = PhaseResult {
        duration: end,
        ..PhaseResult::default()
    };
    let mut hp_track = HpTracker::default();
    let mut be_track = BeTracker::default();
    let mut next_release = phase.has_hp().then_some(Nanos::ZERO);
    let mut request = 0u64;
    let mut be_next = 0u64;
    let mut be_outstanding = 0u32;
    let mut measured_end = false;
    let mut t = Nanos::ZERO;
    let mut last_report = 0u64;

    loop {
        // Clients act at `t`.
        if let Some(r) = next_release.filter(|r| *r <= t) {
            for cmd in hp_request(sc, request) {
                submit(&hp, Role::Hp, cmd)?;
            }
            hp_track.released(request, r, sc.hp_kernels);
            request += 1;
            let next = sc.hp_period.0.saturating_mul(request);
            next_release = (Nanos(next) < end).then_some(Nanos(next));
        }
        if phase.has_be() && t < end {
            while be_outstanding < sc.be_depth {
                submit(&be, Role::Be, be_kernel(sc, be_next))?;
                be_next += 1;
                be_outstanding += 1;
            }
        }
        // Queues, events and the scheduler settle at `t`.
        loop {
            hp.poll();
            be.poll();
            let events = inbox.drain();
            if events.is_empty() {
                break;
            }
            sched.on_events(events, t);
        }
        sched.on_timer(t);
        if t >= end && !measured_end {
            measured_end = true;
            sim.with(|d| {
                result.hp_busy = d.busy(hp_ctx);
                result.be_busy = d.busy(be_ctx);
                result.switches = d.switches();
            });
        }
        if t >= end && hp_track.outstanding() == 0 {
            break;
        }
        // The next moment anything happens.
        let mut next = sim.next_event_time();
        if let Some(r) = next_release {
            next = next.min(r);
        }
        if let Some(w) = sched.next_wake() {
            next = next.min(w.max(t + Nanos(1)));
        }
        if !measured_end {
            next = next.min(end);
        }
        if next == Nanos::MAX || next > drain_limit {
            break;
        }
        sim.advance_to(next);
        t = next;
        for c in sim.with(|d| d.take_completions()) {
            let role = if c.stream == hp_stream {
                Role::Hp
            } else {
                Role::Be
            };
            match role {
                Role::Hp => hp_track.completed(&c),
                Role::Be => {
                    be_track.completed(&c, end);
                    be_outstanding -= 1;
                }
            }
            if c.started_at < sc.trace_window {
                result.trace_commands.push((role, c));
            }
        }
        let permille = (t.0.min(end.0) * 1000) / end.0.max(1);
        if permille >= last_report + 10 {
            last_report = permille;
            progress(permille as f64 / 1000.0);
        }
    }
    for op in sched.take_ops() {
        if op.at < sc.trace_window {
            let role = match hp.queue() {
                Some(h) if h.id() == op.queue => Role::Hp,
                _ => Role::Be,
            };
            result.trace_ops.push((op.at, role, op.kind));
        }
    }
    result.decisions = sched.decisions();
    let mut lat = hp_track.latencies;
    lat.sort_unstable();
    result.hp_latencies = lat;
    result.be_completed = be_track.completed;
    progress(1.0);
    Ok(result)
}
