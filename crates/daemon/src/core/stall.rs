//! Stalls: a queue whose work in flight makes no progress stops holding others back.
//!
//! The lease ([`super::lease`]) bounds a process that stops *speaking*. A process that is
//! alive but whose GPU work never completes — a hung kernel, a kernel spinning on a flag
//! nobody sets — keeps speaking: its client thread answers pings, and its queue stays ready
//! for ever, so under a priority policy every lower queue stays suspended for ever.
//!
//! Agents report each queue's counters every `stats_interval_ms` (`QueueStats`: commands
//! `completed`, `in_flight`). A queue **progresses** when a report shows nothing in flight or
//! more commands completed than the previous one. A ready queue that is not suspended, has
//! work in flight and has not progressed for `Identity::stall` (`baton daemon --stall-ms`,
//! 10 s by default) while some queue is held back is **stalled**: it leaves the scheduler (the
//! policy decides again without it, so the queues it held back run), the daemon logs a
//! warning and counts it (`baton_queues_stalled`, `baton_queue_stalls_total`). Its own work is
//! left alone: it was running, and keeps running. The first report that shows it progressing
//! puts it back, with its last reported state, and the policy decides again.
//!
//! The bound: a queue held back by another whose work stopped completing runs again at most
//! `stall` plus one stats interval after that work last progressed, plus one decision round.
//! Without stats (`stats_interval_ms` 0) there are no reports, and no stalls.

use baton_core::{Nanos, XQueueId};
use baton_protocol::{DecisionCause, QueueStats};
use baton_scheduler::QueueMeta;
use std::sync::Arc;

use super::Core;
use crate::hints::effective;
use crate::proxy::RemoteQueue;

impl Core {
    /// Takes in one queue's counters reported at `at` (`previous`: the completed count of its
    /// last report, if any) and stalls or restores it.
    pub(super) fn watch_progress(
        &mut self,
        gid: XQueueId,
        previous: Option<u64>,
        s: &QueueStats,
        at: Nanos,
    ) {
        let limit = self.ident.stall;
        let held = self.anyone_held();
        let Some(r) = self.queues.get_mut(&gid) else {
            return;
        };
        let progressed = s.in_flight == 0 || previous.is_none_or(|p| s.completed > p);
        if progressed {
            r.progress.at = at;
            if r.progress.stalled {
                r.progress.stalled = false;
                let (client, pid, queue) = (r.client, r.pid, r.queue);
                tracing::info!(
                    pid,
                    %queue,
                    "a stalled queue completes work again: it is scheduled again"
                );
                self.mark(at, DecisionCause::Queue);
                if self.clients.get(&client).is_some_and(|c| !c.lapsed) {
                    self.reschedule(gid);
                }
            }
            return;
        }
        let Some(limit) = limit else {
            return;
        };
        let quiet = at.saturating_sub(r.progress.at);
        if r.progress.stalled || !r.ready || r.suspended || !held || quiet < limit {
            return;
        }
        r.progress.stalled = true;
        r.proxy.detach();
        let (pid, queue) = (r.pid, r.queue);
        self.stalls += 1;
        tracing::warn!(
            pid,
            %queue,
            in_flight = s.in_flight,
            completed = s.completed,
            stalled_ms = quiet.0 / 1_000_000,
            "a queue holding others back has completed nothing for its stall limit (a hung \
             kernel?): it no longer holds anyone back until it completes work again"
        );
        self.mark(at, DecisionCause::Queue);
        let now = self.now();
        let _ = self.sched.unregister(gid, now);
    }

    /// How many queues are stalled now.
    pub(crate) fn stalled_queues(&self) -> u32 {
        let n = self.queues.values().filter(|q| q.progress.stalled).count();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Puts a queue back into the scheduler with its last reported state (after a stall or a
    /// lapsed lease).
    pub(super) fn reschedule(&mut self, gid: XQueueId) {
        let Some(r) = self.queues.get(&gid) else {
            return;
        };
        let Some(c) = self.clients.get(&r.client) else {
            return;
        };
        let proxy = Arc::new(RemoteQueue::new(
            gid,
            r.ready,
            r.level,
            r.max_level,
            r.launch,
            Arc::clone(&self.outbox),
        ));
        let hints = effective(&r.hints, &c.hints);
        let (pid, device) = (r.pid, r.device.id.clone());
        let meta = QueueMeta {
            pid,
            device: self.device_number(&device),
            hints,
        };
        if let Some(r) = self.queues.get_mut(&gid) {
            r.proxy = Arc::clone(&proxy);
        }
        let now = self.now();
        self.sched.register(proxy, meta, now);
    }
}
