//! Time slices: a context's slice controlled at Level 3 and while the process yields to others,
//! and the process's claim that it yields.

use std::sync::Arc;

use baton_cuda::rm::{ContextSlice, Ioctl, SliceValues};
use baton_cuda::sys::CUcontext;

use crate::runtime::Runtime;

impl Runtime {
    /// Once a context's slice is controlled and the process yields to others
    /// (`BATON_YIELD`), tells the daemon (`Hint::Yielding`, once per process): other processes'
    /// work then does not hold it back, since its slice is short whenever it is outranked.
    pub(super) fn claim_yielding(&self) {
        if !self.cfg.yields_to_others() || !self.link.claim_yield() {
            return;
        }
        if let Some(s) = &self.link.sched {
            let slice_ns = self.cfg.yield_slice_us().saturating_mul(1_000);
            match s.hint_process(baton_agent::WireHint::Yielding { slice_ns }) {
                Ok(()) => tracing::info!(
                    "yielding by time slice ({} µs while outranked): other processes do not hold it back",
                    self.cfg.yield_slice_us()
                ),
                Err(e) => tracing::warn!("yielding not claimed: {e}"),
            }
        }
    }

    /// Takes control of `ctx`'s time slice, for Level 3 (`level3`) or to yield to other
    /// processes, if its compute channel group is known and the driver lets the slice change;
    /// otherwise its queues stay at Level 1 and are held back as before. Only a requested
    /// Level 3 warns when that fails.
    pub(super) fn start_slice(&self, ctx: CUcontext, level3: bool) -> Option<Arc<ContextSlice>> {
        let unavailable = |why: &str| {
            if level3 {
                tracing::warn!(
                    "level 3 unavailable for context {:#x}: {why}; its queues use level 1",
                    ctx as usize
                );
            } else {
                tracing::debug!(
                    "no time-slice control for context {:#x}: {why}; other processes' work holds it back",
                    ctx as usize
                );
            }
        };
        let channels = crate::channel::channels();
        let Some(group) = channels.group_of(ctx) else {
            let seen: Vec<String> = channels
                .capture
                .groups()
                .iter()
                .map(|g| format!("{:#x} engine {:#x} thread {}", g.handle, g.engine, g.thread))
                .collect();
            unavailable(&format!(
                "its compute channel group was not identified among {} seen ({})",
                seen.len(),
                seen.join(", ")
            ));
            return None;
        };
        match ContextSlice::start(
            Arc::new(Ioctl),
            group,
            SliceValues {
                yield_us: self.cfg.yield_slice_us(),
                normal_us: self.cfg.run_slice_us,
                lead_us: self.cfg.lead_slice_us(),
                off_while_interrupted: self.cfg.l3_off,
            },
        ) {
            Ok(s) => {
                tracing::info!(
                    "time-slice control for context {:#x} ({}): channel group {:#x}, time slice {} µs, {} µs while outranked, {} µs while outranking",
                    ctx as usize,
                    if level3 { "level 3" } else { "yielding" },
                    group.handle,
                    s.normal_us(),
                    s.yield_us(),
                    s.lead_us()
                );
                Some(Arc::new(s))
            }
            Err(e) => {
                unavailable(&e.to_string());
                None
            }
        }
    }
}
