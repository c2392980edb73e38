//! How a queue's program used it, counted over the time the queue was let run.
//!
//! A scheduler judges a program by how it uses its queue (`Hint::Readiness`: the share of the
//! time the queue had work, and the share its program spent blocked waiting for that work).
//! While the queue is suspended both say nothing about the program: held work stays queued and
//! the program soon blocks on it, so a program bound by its own launching would read as one
//! that keeps the device busy for as long as something holds it back. The book therefore keeps
//! the time a queue had work while suspended apart, and what it reports excludes it.

use std::collections::VecDeque;

use crate::Nanos;

/// How a queue's program used it ([`XQueue::usage`](crate::XQueue::usage)), in all since the
/// queue was created, excluding the time it had work while suspended. Two readings a period
/// apart give the period's figures; the period itself, as the program ran, is the time between
/// them less the growth of `held`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// How long the queue had work while it was not suspended.
    pub ready: Nanos,
    /// How long its program was blocked in its own waits for the queue's work that reached
    /// the queue ([`XQueue::saw_complete`](crate::XQueue::saw_complete)), outside the time
    /// the queue had work while suspended.
    pub waited: Nanos,
    /// How many such waits there were, suspended or not: a program that never waits for its
    /// queue gives no evidence of whether the device keeps up with it.
    pub waits: u64,
    /// How long the queue had work while suspended. (Suspended without work, a queue says
    /// what an idle one says: its program had nothing for it.)
    pub held: Nanos,
}

impl Usage {
    /// What happened between `earlier` and this reading, one figure each.
    pub fn since(self, earlier: Usage) -> Usage {
        Usage {
            ready: Nanos(self.ready.0.saturating_sub(earlier.ready.0)),
            waited: Nanos(self.waited.0.saturating_sub(earlier.waited.0)),
            waits: self.waits.saturating_sub(earlier.waits),
            held: Nanos(self.held.0.saturating_sub(earlier.held.0)),
        }
    }
}

/// How many past stretches of work held back the book remembers, to tell how much of a wait
/// fell inside one: a wait that spans more of them is counted as unsuspended beyond the
/// oldest.
const SPANS: usize = 64;

/// The counters behind [`Usage`], kept under the queue's state lock. The clock is read only
/// where a stretch of work held back begins or ends, so suspending and resuming a queue
/// without work costs no clock read.
#[derive(Debug, Default)]
pub(super) struct Book {
    /// Time with work (ns, in all), up to the last return to Idle; and since when, while ready.
    ready_ns: u64,
    ready_since: Option<Nanos>,
    /// Whether the queue is suspended.
    suspended: bool,
    /// Time with work while suspended, up to the end of the last such stretch; and since
    /// when, during one.
    held_ns: u64,
    held_since: Option<Nanos>,
    /// The program's waits: their time in all, the part of it inside stretches of work held
    /// back, their count.
    waited_ns: u64,
    waited_held_ns: u64,
    waits: u64,
    /// The last stretches of work held back that ended, oldest first, as `(start, end)`.
    spans: VecDeque<(Nanos, Nanos)>,
}

impl Book {
    /// The queue got work at `now`.
    pub(super) fn ready(&mut self, now: Nanos) {
        if self.ready_since.is_none() {
            self.ready_since = Some(now);
            if self.suspended {
                self.held_since = Some(now);
            }
        }
    }

    /// The queue's work all completed at `now`.
    pub(super) fn idle(&mut self, now: Nanos) {
        if let Some(since) = self.ready_since.take() {
            self.ready_ns = self.ready_ns.saturating_add(now.0.saturating_sub(since.0));
        }
        self.end_held(now);
    }

    /// The queue was suspended; `now` is read only if it has work.
    pub(super) fn suspended(&mut self, now: impl FnOnce() -> Nanos) {
        if !self.suspended {
            self.suspended = true;
            if self.ready_since.is_some() {
                self.held_since = Some(now());
            }
        }
    }

    /// The queue was resumed; `now` is read only if it had work held back.
    pub(super) fn resumed(&mut self, now: impl FnOnce() -> Nanos) {
        self.suspended = false;
        if self.held_since.is_some() {
            self.end_held(now());
        }
    }

    fn end_held(&mut self, now: Nanos) {
        if let Some(since) = self.held_since.take() {
            self.held_ns = self.held_ns.saturating_add(now.0.saturating_sub(since.0));
            if self.spans.len() == SPANS {
                self.spans.pop_front();
            }
            self.spans.push_back((since, now));
        }
    }

    /// The program waited from `asked` to `now` for the queue's work.
    pub(super) fn waited(&mut self, asked: Nanos, now: Nanos) {
        let overlap = |(a, b): (Nanos, Nanos)| b.0.min(now.0).saturating_sub(a.0.max(asked.0));
        let held: u64 = self
            .spans
            .iter()
            .rev()
            .take_while(|(_, end)| *end > asked)
            .map(|s| overlap(*s))
            .sum::<u64>()
            + self.held_since.map_or(0, |s| overlap((s, now)));
        self.waited_ns = self.waited_ns.saturating_add(now.0.saturating_sub(asked.0));
        self.waited_held_ns = self.waited_held_ns.saturating_add(held);
        self.waits += 1;
    }

    /// The figures at `now`, open stretches counted up to it.
    pub(super) fn usage(&self, now: Nanos) -> Usage {
        let open = |since: Option<Nanos>| since.map_or(0, |s| now.0.saturating_sub(s.0));
        let ready = self.ready_ns.saturating_add(open(self.ready_since));
        let held = self.held_ns.saturating_add(open(self.held_since));
        Usage {
            ready: Nanos(ready.saturating_sub(held)),
            waited: Nanos(self.waited_ns.saturating_sub(self.waited_held_ns)),
            waits: self.waits,
            held: Nanos(held),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Nanos {
        Nanos::from_millis(v)
    }

    #[test]
    fn a_period_is_the_difference_of_two_readings() {
        let mut b = Book::default();
        b.ready(ms(0));
        let u0 = b.usage(ms(10));
        b.suspended(|| ms(10));
        b.waited(ms(12), ms(14));
        b.resumed(|| ms(15));
        let d = b.usage(ms(20)).since(u0);
        assert_eq!(
            (d.ready, d.waited, d.waits, d.held),
            (ms(5), Nanos::ZERO, 1, ms(5))
        );
    }

    #[test]
    fn work_held_back_counts_neither_as_work_nor_as_waiting() {
        let mut b = Book::default();
        b.ready(ms(0));
        b.suspended(|| ms(10));
        b.waited(ms(8), ms(30)); // 2 ms before the suspension, 20 inside it
        b.resumed(|| ms(40));
        b.idle(ms(45));
        let u = b.usage(ms(50));
        assert_eq!(u.ready, ms(15));
        assert_eq!(u.waited, ms(2));
        assert_eq!(u.waits, 1);
        assert_eq!(u.held, ms(30));
    }

    #[test]
    fn a_queue_suspended_without_work_reads_no_clock_and_counts_as_idle() {
        let mut b = Book::default();
        b.suspended(|| unreachable!("no work: no clock read"));
        b.ready(ms(5)); // work arrives while suspended: held from then
        let u = b.usage(ms(20));
        assert_eq!((u.ready, u.held), (Nanos::ZERO, ms(15)));
        b.resumed(|| ms(20));
        let u = b.usage(ms(30));
        assert_eq!((u.ready, u.held), (ms(10), ms(15)));
        b.idle(ms(30));
        b.suspended(|| unreachable!("idle"));
        b.resumed(|| unreachable!("nothing held"));
        assert_eq!(b.usage(ms(40)).held, ms(15));
    }

    #[test]
    fn a_wait_across_several_holds_leaves_out_each_of_them() {
        let mut b = Book::default();
        b.ready(ms(0));
        for k in 0..3 {
            b.suspended(|| ms(10 * k));
            b.resumed(|| ms(10 * k + 4));
        }
        b.suspended(|| ms(30));
        b.waited(ms(2), ms(32)); // held 2 + 4 + 4 + 2 of its 30 ms
        assert_eq!(b.usage(ms(32)).waited, ms(18));
    }

    #[test]
    fn the_book_forgets_only_holds_older_than_it_keeps() {
        let mut b = Book::default();
        b.ready(ms(0));
        for k in 0..(SPANS as u64 + 10) {
            b.suspended(|| ms(2 * k));
            b.resumed(|| ms(2 * k + 1));
        }
        let n = SPANS as u64 + 10;
        b.waited(ms(0), ms(2 * n));
        // Only the last SPANS holds (1 ms each) are left out of the wait.
        assert_eq!(b.usage(ms(2 * n)).waited, ms(2 * n - SPANS as u64));
    }
}
