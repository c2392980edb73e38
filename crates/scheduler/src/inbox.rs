//! Where queues drop their events.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

use baton_core::locks;
use baton_core::{EventSink, QueueEvent};

/// A mailbox of queue events, drained by the scheduler.
#[derive(Debug, Default)]
pub struct Inbox {
    events: Mutex<Vec<QueueEvent>>,
    bell: Condvar,
    /// Rung since the last wait: the next wait returns at once (written under `events`' lock,
    /// so a ring between two waits is never lost).
    rung: AtomicBool,
}

impl Inbox {
    /// An empty inbox.
    pub fn new() -> Inbox {
        Inbox::default()
    }

    /// Takes every event received so far, oldest first.
    pub fn drain(&self) -> Vec<QueueEvent> {
        std::mem::take(&mut *self.lock())
    }

    /// Blocks until an event arrives, the inbox is rung or `timeout` passes; returns the events
    /// (maybe none). A ring since the last wait returns at once.
    pub fn wait(&self, timeout: Option<std::time::Duration>) -> Vec<QueueEvent> {
        let mut g = self.lock();
        if g.is_empty() && !self.rung.swap(false, Ordering::Relaxed) {
            g = match timeout {
                Some(t) => locks::wait_timeout(&self.bell, g, t),
                None => locks::wait(&self.bell, g),
            };
            self.rung.store(false, Ordering::Relaxed);
        }
        std::mem::take(&mut *g)
    }

    /// Wakes a waiter without an event (shutdown, a new hint), or the next one to wait.
    pub fn ring(&self) {
        let _g = self.lock();
        self.rung.store(true, Ordering::Relaxed);
        self.bell.notify_all();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<QueueEvent>> {
        locks::lock(&self.events)
    }
}

impl EventSink for Inbox {
    fn on_queue_event(&self, event: QueueEvent) {
        let mut g = self.lock();
        g.push(event);
        self.bell.notify_one();
    }
}
