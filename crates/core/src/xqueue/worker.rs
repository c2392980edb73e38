//! The launch worker: a thread per queue that waits on sync points and dependencies, launches
//! buffered commands as the window frees up, and notices when the queue goes idle.

use std::sync::Arc;

use super::shared::{Pending, Shared, State};
use crate::HwQueue;
use crate::sync::{self, MutexGuard, thread};

/// First pause between two idle queries of an uncovered tail; doubles up to [`IDLE_POLL_MAX`].
pub(super) const IDLE_POLL_MIN: std::time::Duration = std::time::Duration::from_micros(20);
/// Longest pause between two idle queries: how late, at worst, a queue notices it went idle
/// when the application does not synchronize.
pub(super) const IDLE_POLL_MAX: std::time::Duration = std::time::Duration::from_millis(1);
/// How long a queue's launches must have paused before the worker asks whether its uncovered
/// tail is done. A program that launches faster than the GPU runs its kernels rarely waits
/// for it; one bound by its own launching (each kernel done before the next is launched)
/// would otherwise be found idle between every two launches, and each such return to Idle
/// costs a decision of the scheduler, a resumption of the queues it holds back (whose work
/// then lands between this queue's kernels) and a wake-up of the worker by the next launch.
/// The application's own synchronization still finds the queue idle at once.
pub(super) const IDLE_LINGER: std::time::Duration = std::time::Duration::from_micros(300);
/// How long the worker waits for a dependency before looking at its own queue again.
const DEPENDENCY_WAIT: std::time::Duration = std::time::Duration::from_millis(2);

#[cfg(not(loom))]
pub(super) fn spawn_worker<H: HwQueue>(shared: Arc<Shared<H>>) -> thread::JoinHandle<()> {
    let name = format!("baton-xq-{}", shared.id.0);
    match thread::Builder::new()
        .name(name)
        .spawn(move || shared.worker_loop())
    {
        Ok(handle) => handle,
        // Without a worker the queue cannot make progress behind the fast path; failing to
        // create a thread is as fatal as failing to allocate.
        Err(e) => panic!("cannot start an XQueue launch worker thread: {e}"),
    }
}

#[cfg(loom)]
pub(super) fn spawn_worker<H: HwQueue>(shared: Arc<Shared<H>>) -> thread::JoinHandle<()> {
    thread::spawn(move || shared.worker_loop())
}

impl<H: HwQueue> Shared<H> {
    fn worker_loop(&self) {
        let mut ev = Pending::new();
        let mut st = sync::lock(&self.state);
        if let Err(e) = self.hw.on_create() {
            st.record_error(e);
        }
        let mut poll = IDLE_POLL_MIN;
        // The launch count when the worker last found launches pausing (see IDLE_LINGER).
        let mut quiet_since = st.launched;
        loop {
            st = self.sync_gate(st);
            if self.can_launch(&st) {
                let before = st.launched;
                self.launch_buffered(&mut st);
                if st.launched > before {
                    continue;
                }
            }
            if st.inflight() == 0 && self.can_launch(&st) {
                // Nothing launched although the front may go: it waits for another queue. Ask
                // that queue to launch what is needed and wait for it (or for a while, then look
                // again). If the dependency was met in the meantime, loop and launch.
                if let Some(dep) = self.head_blocker(&st) {
                    drop(st);
                    ev.emit(&*self.sink);
                    ev = Pending::new();
                    dep.demand();
                    dep.wait(DEPENDENCY_WAIT);
                    st = sync::lock(&self.state);
                }
                continue;
            }
            if st.inflight() > 0 {
                // Blocking on a sync point is worth it only when a launch waits for it (buffered
                // commands that may go once the window frees up, or a drain at shutdown). Merely
                // following the tail to see the queue go idle polls without blocking, with
                // growing pauses — and only while someone needs to know (the idle watch).
                self.cover_tail(&mut st);
                let launch_waits = !st.buffer.is_empty()
                    && (!st.suspended || st.launched < self.progress.demanded());
                if launch_waits || st.shutdown {
                    if let Some((end, sp)) = st.sync_points.front().map(|(e, s)| (*e, s.clone())) {
                        poll = IDLE_POLL_MIN;
                        drop(st);
                        ev.emit(&*self.sink);
                        ev = Pending::new();
                        let r = self.hw.wait(&sp);
                        drop(sp);
                        st = sync::lock(&self.state);
                        let before = st.completed;
                        let reached = r.is_ok();
                        if let Err(e) = r {
                            st.record_error(e);
                        }
                        self.complete_to(&mut st, end, &mut ev);
                        if reached && st.completed > before {
                            // Blocked on it: seen the moment it was reached.
                            self.note_pace(&mut st, before);
                        }
                        continue;
                    }
                }
                self.reap(&mut st, &mut ev);
                if st.launched != quiet_since && st.inflight() > 0 && !st.shutdown {
                    // Launched since the last look: busy. Look again once the launches have
                    // paused for IDLE_LINGER (or when woken).
                    quiet_since = st.launched;
                    poll = IDLE_POLL_MIN;
                    if !ev.is_empty() {
                        st = self.emit_unlocked(st, &mut ev);
                    }
                    st.worker_sleeping = true;
                    st = sync::wait_timeout(&self.worker_cv, st, IDLE_LINGER);
                    st.worker_sleeping = false;
                    continue;
                }
                self.reap_idle(&mut st, &mut ev);
                if st.inflight() == 0 {
                    poll = IDLE_POLL_MIN;
                    continue;
                }
                if !ev.is_empty() {
                    st = self.emit_unlocked(st, &mut ev);
                    continue;
                }
                st.worker_sleeping = true;
                if launch_waits || st.shutdown || st.watch_idle || st.gate_open {
                    st = sync::wait_timeout(&self.worker_cv, st, poll);
                    poll = (poll * 2).min(IDLE_POLL_MAX);
                } else {
                    // Nobody waits for this tail: the application's own synchronization, a
                    // full window or a new idle watch will bring the worker back.
                    st = sync::wait(&self.worker_cv, st);
                    poll = IDLE_POLL_MIN;
                }
                st.worker_sleeping = false;
                continue;
            }
            if st.shutdown && st.buffer.is_empty() {
                break;
            }
            if !ev.is_empty() {
                st = self.emit_unlocked(st, &mut ev);
                continue;
            }
            st.worker_sleeping = true;
            st = sync::wait(&self.worker_cv, st);
            st.worker_sleeping = false;
        }
        drop(st);
        ev.emit(&*self.sink);
    }

    /// Emits `ev` with the state unlocked, and locks it again.
    fn emit_unlocked<'a>(
        &'a self,
        st: MutexGuard<'a, State<H>>,
        ev: &mut Pending,
    ) -> MutexGuard<'a, State<H>> {
        drop(st);
        std::mem::replace(ev, Pending::new()).emit(&*self.sink);
        sync::lock(&self.state)
    }
}
