//! Where queues drop their events.

use std::sync::{Condvar, Mutex};

use baton_core::locks;
use baton_core::{EventSink, QueueEvent};

/// A mailbox of queue events, drained by the scheduler.
#[derive(Debug, Default)]
pub struct Inbox {
    events: Mutex<Vec<QueueEvent>>,
    bell: Condvar,
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

    /// Blocks until an event arrives or `timeout` passes; returns the events (maybe none).
    pub fn wait(&self, timeout: Option<std::time::Duration>) -> Vec<QueueEvent> {
        let mut g = self.lock();
        if g.is_empty() {
            g = match timeout {
                Some(t) => locks::wait_timeout(&self.bell, g, t),
                None => locks::wait(&self.bell, g),
            };
        }
        std::mem::take(&mut *g)
    }

    /// Wakes a waiter without an event (shutdown, a new hint).
    pub fn ring(&self) {
        let _g = self.lock();
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
