//! `BATON_PROFILE`: how often each intercepted driver function was called, the time spent in
//! its hook (Baton's work plus the real driver's), and — for kernel launches that reach the
//! driver from the caller's thread — how much of that was the real driver's call, for the
//! report: the rest is Baton's own cost, measured inside the very calls the application makes.
//! Off, a hook pays one flag test.
//!
//! Each hook owns a [`HookStat`]; the first call that records into it links it into a global
//! lock-free list, which the report walks.

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::time::Instant;

/// Runs `call` (the real driver function, called by a hook itself) and adds its duration to
/// the current hook's driver time. Out of line: the unprofiled path stays as it was.
#[inline(never)]
pub(crate) fn in_driver<R>(call: impl FnOnce() -> R) -> R {
    let since = Instant::now();
    let r = call();
    baton_cuda::add_driver_ns(u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX));
    r
}

/// The driver time recorded on this thread since the last call, which starts it again (the
/// timed launches of `baton_cuda`'s `launch.rs`).
pub(crate) fn take_driver_ns() -> u64 {
    baton_cuda::take_driver_ns()
}

/// One hook's counters.
pub(crate) struct HookStat {
    name: &'static str,
    calls: AtomicU64,
    ns: AtomicU64,
    /// Of `ns`, the time in the real driver, for calls whose driver time was measured.
    driver_ns: AtomicU64,
    /// The calls whose driver time was measured.
    driver_calls: AtomicU64,
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
            driver_ns: AtomicU64::new(0),
            driver_calls: AtomicU64::new(0),
            linked: AtomicBool::new(false),
            next: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Counts one call that began at `since` and spent `driver_ns` in the real driver (0: not
    /// measured).
    pub(crate) fn record(&'static self, since: Instant, driver_ns: u64) {
        let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.ns.fetch_add(ns, Ordering::Relaxed);
        if driver_ns > 0 {
            self.driver_calls.fetch_add(1, Ordering::Relaxed);
            self.driver_ns.fetch_add(driver_ns, Ordering::Relaxed);
        }
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

/// One hook's totals for the report.
pub(crate) struct HookTotals {
    pub(crate) name: &'static str,
    pub(crate) calls: u64,
    pub(crate) us: f64,
    /// Calls whose time in the real driver was measured, and that time in all.
    pub(crate) driver_calls: u64,
    pub(crate) driver_us: f64,
}

/// Every hook that recorded calls, busiest first.
pub(crate) fn table() -> Vec<HookTotals> {
    let mut out = Vec::new();
    let mut p = HEAD.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: only `'static` stats are linked, and never unlinked.
        let s = unsafe { &*p };
        out.push(HookTotals {
            name: s.name,
            calls: s.calls.load(Ordering::Relaxed),
            us: s.ns.load(Ordering::Relaxed) as f64 / 1e3,
            driver_calls: s.driver_calls.load(Ordering::Relaxed),
            driver_us: s.driver_ns.load(Ordering::Relaxed) as f64 / 1e3,
        });
        p = s.next.load(Ordering::Acquire);
    }
    out.sort_by(|a, b| b.us.total_cmp(&a.us));
    out
}
