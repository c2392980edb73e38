//! What a stream tells its scheduler of itself: its commands' device time, how its program uses
//! it (readiness), and measuring a stream let go without its window again now and then.

use std::sync::atomic::Ordering;

use baton_cuda::core::locks;

use crate::registry::StreamEntry;
use crate::runtime::Runtime;

/// How many guard ticks apart a stream let go without its window measures its commands again
/// ([`Runtime::remeasure`]): 40 ticks of 25 ms, a second.
const REMEASURE_EVERY: u32 = 40;
/// How many more samples of its command time such a stream takes in before it goes without its
/// window again: enough for the moving average to move most of the way to a new length.
const REMEASURE_SAMPLES: u64 = 8;
/// The longest it keeps its window to be measured, in guard ticks: two seconds (eight samples
/// of a batch of eight 8 ms commands, after what it launched unbounded).
const REMEASURE_LONGEST: u32 = 80;
/// How far (‰) a queue's readiness must move from what its scheduler was told to be told
/// again (a change of whether it is bound by its launching is told at once).
const READINESS_STEP: u16 = 50;

impl Runtime {
    /// Tells the scheduler how long `e`'s commands take on the GPU, when its queue has measured
    /// it and it changed since it was last told (`BATON_COMMAND_TIME`; see
    /// [`Hint::CommandTime`](baton_agent::WireHint::CommandTime)). Called from the guard
    /// thread, never on a launch.
    pub(crate) fn report_command_time(&self, e: &StreamEntry) {
        let Some(s) = self.link.sched.as_ref().filter(|_| self.cfg.command_time) else {
            return;
        };
        let told = match e.told_command_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(baton_cuda::core::Nanos(ns)),
        };
        let Some(t) = e.xq.command_time_news(told) else {
            return;
        };
        e.told_command_ns.store(t.0, Ordering::Relaxed);
        let wire = baton_agent::WireHint::CommandTime { command_ns: t.0 };
        match s.hint_queue(e.xq.id(), move |h, _| h.command_time = Some(t), wire) {
            Ok(()) => tracing::debug!("{:#x}: commands take {t} on the GPU", e.handle as usize),
            Err(err) => tracing::warn!(error = %err, "command time not sent"),
        }
    }

    /// Called every [`READINESS_TICKS`](crate::runtime::READINESS_TICKS) ticks of the guard
    /// thread: tells the scheduler how
    /// `e`'s program used its queue since the last look (`Hint::Readiness`: the share of the
    /// time the queue had work, and the share its program spent blocked in its own waits for
    /// that work), when the queue had work and the figures moved by [`READINESS_STEP`] or
    /// changed whether the queue is bound by its program's launching
    /// ([`Readiness::launch_bound`](baton_agent::Readiness::launch_bound)). The time the queue
    /// had work while suspended is left out of the period and of both shares
    /// ([`Usage`](baton_cuda::core::Usage)): held back, any program has work queued and waits
    /// for it. Never on a launch; `BATON_COMMAND_TIME=off` measures neither this nor command
    /// times.
    pub(crate) fn report_readiness(&self, e: &StreamEntry) {
        let Some(s) = self.link.sched.as_ref().filter(|_| self.cfg.command_time) else {
            return;
        };
        let now = baton_cuda::core::Clock::now(&*self.clock);
        let u = e.xq.usage();
        let mut look = locks::lock(&e.readiness);
        let then = look.at.replace(now);
        let d = u.since(std::mem::replace(&mut look.usage, u));
        let Some(then) = then.filter(|_| d.ready.0 > 0) else {
            // First look, or no work since the last while let run: nothing to tell.
            return;
        };
        let period = baton_cuda::core::Nanos(now.0.saturating_sub(then.0).saturating_sub(d.held.0));
        if d.waits == 0 {
            // Work, but the program never waited for it: no evidence that the device keeps
            // up with it (a kernel that runs for ever, a program that polls). Whatever was
            // told before no longer holds.
            if look.told.take().is_some() {
                drop(look);
                let wire = baton_agent::WireHint::Clear(baton_agent::WireHintKind::Readiness);
                match s.hint_queue(e.xq.id(), |h, _| h.readiness = None, wire) {
                    Ok(()) => tracing::info!(
                        "{:#x}: had work the last {period}, its program never waited for it: \
                         readiness withdrawn",
                        e.handle as usize,
                    ),
                    Err(err) => tracing::warn!(error = %err, "readiness not withdrawn"),
                }
            }
            return;
        }
        let Some(r) = baton_agent::Readiness::over(d.ready, d.waited, period) else {
            return;
        };
        let changed = look
            .told
            .is_none_or(|w| w.launch_bound() != r.launch_bound());
        if let Some(w) = look.told
            && !changed
            && w.ready.abs_diff(r.ready) < READINESS_STEP
            && w.waiting.abs_diff(r.waiting) < READINESS_STEP
        {
            return;
        }
        look.told = Some(r);
        drop(look);
        let wire = baton_agent::WireHint::Readiness {
            ready_permille: r.ready,
            waiting_permille: r.waiting,
        };
        match s.hint_queue(e.xq.id(), move |h, _| h.readiness = Some(r), wire) {
            Ok(()) if changed => tracing::info!(
                "{:#x}: ready {} ‰, waiting {} ‰ of the last {period}: {}",
                e.handle as usize,
                r.ready,
                r.waiting,
                if r.launch_bound() {
                    "bound by its own launching"
                } else {
                    "not bound by its launching"
                }
            ),
            Ok(()) => tracing::debug!(
                "{:#x}: ready {} ‰, waiting {} ‰ of the last {period}",
                e.handle as usize,
                r.ready,
                r.waiting
            ),
            Err(err) => tracing::warn!(error = %err, "readiness not sent"),
        }
    }

    /// Called on every tick of the guard thread ([`GUARD_TICK`](crate::runtime::GUARD_TICK)):
    /// a stream that told its scheduler a command time and that the scheduler then lets run
    /// without its window for that measure (as HPF does for short commands that another
    /// process's queue outranks: [`XQueue::set_remeasure`]) keeps its window every
    /// [`REMEASURE_EVERY`] ticks until its measure has taken in [`REMEASURE_SAMPLES`] more
    /// samples (or for [`REMEASURE_LONGEST`] ticks), so that the measure follows what it runs.
    /// Unbounded, nothing measures it, and a measure taken on one workload would stand for the
    /// next on the same stream: a training job's warm-up, measured short, left the long GEMMs
    /// that followed it unheld beside the services (docs/BENCHMARKS.md, "Earlier runs"). A
    /// stream of short commands is measured again within milliseconds; what is learnt reaches
    /// the scheduler through [`Runtime::report_command_time`].
    pub(crate) fn remeasure(&self, e: &StreamEntry) {
        if self.link.sched.is_none() || !self.cfg.command_time {
            return;
        }
        let (ticks, from) = &e.remeasure;
        if e.told_command_ns.load(Ordering::Relaxed) == 0 || !e.xq.wants_remeasure() {
            // A queue let go because nothing outranks it (a service) is not measured: that
            // would change no decision, and cost it its window. Setting the wish off ended
            // any measurement under way.
            ticks.store(0, Ordering::Relaxed);
            return;
        }
        let t = ticks.fetch_add(1, Ordering::Relaxed) + 1;
        if t < REMEASURE_EVERY {
            return;
        }
        let samples = e.xq.command_samples();
        if t == REMEASURE_EVERY {
            if e.xq.may_run_unbounded() {
                from.store(samples, Ordering::Relaxed);
                e.xq.set_measuring(true);
            } else {
                // Bounded anyway, and measured as it runs: look again a period later.
                ticks.store(0, Ordering::Relaxed);
            }
        } else if samples >= from.load(Ordering::Relaxed) + REMEASURE_SAMPLES
            || t >= REMEASURE_EVERY + REMEASURE_LONGEST
        {
            e.xq.set_measuring(false);
            ticks.store(0, Ordering::Relaxed);
        }
    }
}
