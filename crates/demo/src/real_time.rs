//! Running a phase in real time: client threads, launch workers and a scheduler thread on the
//! wall clock, as in a live process.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton_core::{Clock, CommandSeq, Drive, HwQueue, Nanos, XQueue};
use baton_policies::Hpf;
use baton_scheduler::{Inbox, LocalScheduler, SchedulerThread};
use baton_sim::{Sim, SimQueue, SimSyncPoint, TimeMode};

use crate::clients::{BeTracker, HpTracker, be_kernel, hp_request};
use crate::phase::{Phase, PhaseResult, Role};
use crate::virtual_time::{client, submit};
use crate::{DemoError, Route, Scenario};

/// Something a client can wait for: a raw sync point or an XQueue command.
enum Ticket {
    Raw(SimQueue, SimSyncPoint),
    Queued(Arc<XQueue<SimQueue>>, CommandSeq),
}

impl Ticket {
    fn wait(&self, role: Role) -> Result<(), DemoError> {
        match self {
            Ticket::Raw(hw, sp) => hw.wait(sp).map_err(|e| DemoError::Queue {
                role,
                source: e.into(),
            }),
            Ticket::Queued(q, seq) => q
                .wait(*seq)
                .map_err(|source| DemoError::Queue { role, source }),
        }
    }
}

/// Submits `cmd` on `role`'s route and returns a ticket for its completion.
fn submit_ticket(
    route: &Route,
    role: Role,
    cmd: baton_sim::SimCommand,
) -> Result<Ticket, DemoError> {
    match route {
        Route::Raw(hw) => {
            submit(route, role, cmd)?;
            let sp = hw.sync_point().map_err(|e| DemoError::Queue {
                role,
                source: e.into(),
            })?;
            Ok(Ticket::Raw(hw.clone(), sp))
        }
        Route::Scheduled(q) => {
            let seq = q
                .submit(cmd)
                .map_err(|source| DemoError::Queue { role, source })?;
            Ok(Ticket::Queued(q.clone(), seq))
        }
    }
}

fn sleep_until(clock: &dyn Clock, t: Nanos) {
    let now = clock.now();
    if t > now {
        std::thread::sleep(Duration::from(t - now));
    }
}

pub(crate) fn run_phase(
    sc: &Scenario,
    phase: Phase,
    progress: &mut dyn FnMut(f64),
) -> Result<PhaseResult, DemoError> {
    let sim = Sim::new(sc.device, TimeMode::RealTime);
    sim.with(|d| d.record_completions(true));
    let clock = sim.clock();
    let mut sched_local = LocalScheduler::new(Box::new(Hpf));
    sched_local.record_ops(true);
    let inbox_for_queues = Arc::new(Inbox::new());
    // Queues report to the scheduler thread's inbox; build the thread first, then the queues.
    let thread = SchedulerThread::start(sched_local, clock.clone()).map_err(DemoError::Thread)?;
    let inbox = if phase == Phase::Baton {
        thread.inbox()
    } else {
        inbox_for_queues
    };
    let (hp, hp_stream) = {
        let mut s = thread.lock();
        client(
            sc,
            &sim,
            phase,
            Role::Hp,
            Drive::Worker,
            inbox.clone(),
            Some(&mut s),
        )?
    };
    let (be, be_stream) = {
        let mut s = thread.lock();
        client(
            sc,
            &sim,
            phase,
            Role::Be,
            Drive::Worker,
            inbox.clone(),
            Some(&mut s),
        )?
    };
    let (hp_ctx, be_ctx) = sim.with(|d| (d.context_of(hp_stream), d.context_of(be_stream)));
    let start = clock.now();
    let end = start + sc.duration;
    let stop_be = AtomicBool::new(false);

    let outcome = std::thread::scope(|scope| -> Result<(HpTracker, PhaseResult), DemoError> {
        let be_thread = phase.has_be().then(|| {
            let (be, stop_be, clock) = (&be, &stop_be, clock.clone());
            std::thread::Builder::new()
                .name("demo-be".into())
                .spawn_scoped(scope, move || -> Result<(), DemoError> {
                    let mut tickets = VecDeque::new();
                    let mut id = 0u64;
                    while !stop_be.load(Ordering::Relaxed) && clock.now() < end {
                        tickets.push_back(submit_ticket(be, Role::Be, be_kernel(sc, id))?);
                        id += 1;
                        while tickets.len() >= sc.be_depth as usize {
                            if let Some(t) = tickets.pop_front() {
                                t.wait(Role::Be)?;
                            }
                        }
                    }
                    Ok(())
                })
        });
        let hp_thread = phase.has_hp().then(|| {
            let (hp, clock) = (&hp, clock.clone());
            std::thread::Builder::new()
                .name("demo-hp".into())
                .spawn_scoped(scope, move || -> Result<HpTracker, DemoError> {
                    let mut track = HpTracker::default();
                    let mut latencies = Vec::new();
                    for id in 0u64.. {
                        let release = start + Nanos(sc.hp_period.0.saturating_mul(id));
                        if release >= end {
                            break;
                        }
                        sleep_until(&*clock, release);
                        let mut last = None;
                        for cmd in hp_request(sc, id) {
                            last = Some(submit_ticket(hp, Role::Hp, cmd)?);
                        }
                        if let Some(t) = last {
                            t.wait(Role::Hp)?;
                        }
                        latencies.push(clock.now() - release);
                    }
                    track.latencies = latencies;
                    Ok(track)
                })
        });
        let mut last = 0u64;
        while clock.now() < end {
            std::thread::sleep(Duration::from_millis(50));
            let permille =
                ((clock.now() - start).0.min(sc.duration.0) * 1000) / sc.duration.0.max(1);
            if permille >= last + 10 {
                last = permille;
                progress(permille as f64 / 1000.0);
            }
        }
        let mut result = PhaseResult {
            duration: sc.duration,
            ..PhaseResult::default()
        };
        sim.with(|d| {
            result.hp_busy = d.busy(hp_ctx);
            result.be_busy = d.busy(be_ctx);
            result.switches = d.switches();
        });
        stop_be.store(true, Ordering::Relaxed);
        let hp_track = match hp_thread {
            Some(h) => h
                .map_err(DemoError::Thread)?
                .join()
                .unwrap_or_else(|_| Ok(HpTracker::default()))?,
            None => HpTracker::default(),
        };
        if let Some(b) = be_thread {
            b.map_err(DemoError::Thread)?.join().unwrap_or(Ok(()))?;
        }
        Ok((hp_track, result))
    });
    let (hp_track, mut result) = outcome?;
    let mut be_track = BeTracker::default();
    let window = start + sc.trace_window;
    for mut c in sim.with(|d| d.take_completions()) {
        let role = if c.stream == hp_stream {
            Role::Hp
        } else {
            Role::Be
        };
        if role == Role::Be {
            be_track.completed(&c, end);
        }
        if c.started_at < window {
            c.launched_at = c.launched_at - start;
            c.started_at = c.started_at - start;
            c.ended_at = c.ended_at - start;
            result.trace_commands.push((role, c));
        }
    }
    let mut sched = thread.stop();
    for op in sched.take_ops() {
        if op.at < window {
            let role = match hp.queue() {
                Some(h) if h.id() == op.queue => Role::Hp,
                _ => Role::Be,
            };
            result.trace_ops.push((op.at - start, role, op.kind));
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
