//! Where queues drop their events.

use std::sync::{Condvar, Mutex};

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
                Some(t) => {
                    self.bell
                        .wait_timeout(g, t)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.bell.wait(g).unwrap_or_else(|p| p.into_inner()),
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
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl EventSink for Inbox {
    fn on_queue_event(&self, event: QueueEvent) {
        let mut g = self.lock();
        g.push(event);
        self.bell.notify_one();
    }
}
