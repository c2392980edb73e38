//! SM partitions: where a stream's kernels run when it keeps to part of the SMs (`BATON_SMS`,
//! or `BATON_YIELD_SMS` while outranked under MPS), and the process's isolation claim.

use std::sync::Arc;

use baton_agent::SmShare;
use baton_cuda::SmPartition;

use crate::registry::CtxState;
use crate::runtime::Runtime;

impl Runtime {
    /// Under MPS, once kernels really are confined, tells the daemon the process is isolated
    /// (`Hint::Isolated`, `BATON_SMS`): other processes' work then does not hold it back.
    /// Sent only now, so that a process whose partition could not be made is never claimed
    /// isolated. (A queue confined only while outranked, `BATON_YIELD`, claims it itself when
    /// it is registered: `Hint::Confining`.)
    pub(super) fn claim_isolation(&self, sms: u32) {
        if self.cfg.isolated_sms().is_none() {
            return;
        }
        if let Some(s) = &self.link.sched {
            let sms = sms.min(baton_agent::MAX_SMS);
            match s.hint_process(baton_agent::WireHint::Isolated { sms }) {
                Ok(()) => tracing::info!(
                    "BATON_SMS under MPS: isolated on {sms} SMs (other processes do not hold it back)"
                ),
                Err(e) => tracing::warn!("BATON_SMS under MPS: isolation not claimed: {e}"),
            }
        }
    }

    /// Where the kernels of normal-priority streams are confined, if they are: `BATON_SMS`
    /// always; under MPS, yielding (`BATON_YIELD`), `BATON_YIELD_SMS` while outranked
    /// (`true`).
    pub(super) fn confinement(&self) -> Option<(SmShare, bool)> {
        match self.cfg.sms {
            Some(n) => Some((SmShare::Count(n), false)),
            None => self.cfg.confines_while_outranked().map(|s| (s, true)),
        }
    }

    /// The SM partition of `state`'s context for `want` SMs (`BATON_SMS`, or yielding under
    /// MPS), made on first use. Only a device's primary context can have one: a green context
    /// shares the primary context's memory and modules, not those of other contexts.
    pub(super) fn partition(&self, state: &CtxState, want: SmShare) -> Option<Arc<SmPartition>> {
        state
            .partition
            .get_or_init(|| {
                let primary = (|| {
                    let (retain, release) = (
                        self.driver.cuDevicePrimaryCtxRetain?,
                        self.driver.cuDevicePrimaryCtxRelease_v2?,
                    );
                    let mut p = std::ptr::null_mut();
                    // SAFETY: a valid out-pointer; the retain is released at once (the
                    // application holds its own).
                    unsafe {
                        if !retain(&mut p, state.device).is_success() {
                            return None;
                        }
                        let _ = release(state.device);
                    }
                    Some(p)
                })();
                let (var, when) = if self.cfg.sms.is_some() {
                    ("BATON_SMS", "")
                } else {
                    ("BATON_YIELD_SMS", " while outranked")
                };
                if primary != Some(state.ctx) {
                    tracing::warn!(
                        "{var}: context {:#x} is not its device's primary context; its kernels use the whole GPU",
                        state.ctx as usize
                    );
                    return None;
                }
                // SAFETY: the device of a live primary context, for both calls.
                let made = unsafe {
                    SmPartition::device_sm_count(self.driver, state.device).and_then(|all| {
                        SmPartition::new(self.driver, state.device, want.of(all))
                    })
                };
                match made {
                    Ok(p) => {
                        tracing::info!(
                            "{var}: normal-priority kernels of device {} run on {} of its {} SMs{when}",
                            state.device,
                            p.sms(),
                            p.device_sms(),
                        );
                        self.claim_isolation(p.sms());
                        Some(Arc::new(p))
                    }
                    Err(e) => {
                        tracing::warn!(
                            "{var}={want}: no SM partition on device {} ({e}); kernels use the whole GPU",
                            state.device
                        );
                        None
                    }
                }
            })
            .clone()
    }
}
