//! `BATON_PROFILE`: how often each intercepted driver function was called, and the time spent
//! in its hook (Baton's work plus the real driver's), for the report. Off, a hook pays one
//! flag test.
//!
//! Each hook owns a [`HookStat`]; the first call that records into it links it into a global
//! lock-free list, which the report walks.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::Instant;

/// One hook's counters.
pub(crate) struct HookStat {
    name: &'static str,
    calls: AtomicU64,
    ns: AtomicU64,
    linked: AtomicBool,
    next: AtomicPtr<HookStat>,
}

/// The head of the list of hooks that recorded something.
static HEAD: AtomicPtr<HookStat> = AtomicPtr::new(std::ptr::null_mut());

impl HookStat {
    pub(crate) const fn new(name: &'static str) -> HookStat {
        HookStat {
            name,
            calls: AtomicU64::new(0),
            ns: AtomicU64::new(0),
            linked: AtomicBool::new(false),
            next: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Counts one call that began at `since`.
    pub(crate) fn record(&'static self, since: Instant) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.ns.fetch_add(ns, Ordering::Relaxed);
        if !self.linked.swap(true, Ordering::AcqRel) {
            let me = std::ptr::from_ref(self).cast_mut();
            let mut head = HEAD.load(Ordering::Acquire);
            loop {
                self.next.store(head, Ordering::Relaxed);
                match HEAD.compare_exchange_weak(head, me, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => break,
                    Err(h) => head = h,
                }
            }
        }
    }
}

/// Every hook that recorded calls: name, calls, total µs, busiest first.
pub(crate) fn table() -> Vec<(&'static str, u64, f64)> {
    let mut out = Vec::new();
    let mut p = HEAD.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: only `'static` stats are linked, and never unlinked.
        let s = unsafe { &*p };
        let ns = s.ns.load(Ordering::Relaxed);
        out.push((s.name, s.calls.load(Ordering::Relaxed), ns as f64 / 1e3));
        p = s.next.load(Ordering::Acquire);
    }
    out.sort_by(|a, b| b.2.total_cmp(&a.2));
    out
}
