//! The Level-2 self-test: does a closed [`Gate`] hold a kernel queued behind it?

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::{ProbeError, need};
use super::kernels::{Context, Kernels};
use crate::{Driver, Gate};

/// What the Level-2 self-test saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level2Report {
    /// [`Level2Report::SCHEMA`].
    pub schema: String,
    /// The kernel behind the closed gate had not run 50 ms after its launch.
    pub held_50ms: bool,
    /// How long after the gate opened the kernel (20 µs long) had finished, in µs.
    pub done_after_open_us: f64,
    /// Whether Level 2 works here: the kernel was held.
    pub takes_effect: bool,
}

impl Level2Report {
    /// The document's schema.
    pub const SCHEMA: &'static str = "baton.selftest.level2/1";

    /// The report of a kernel held (or not) and finished `done_after_open_us` after the
    /// opening.
    pub fn new(held_50ms: bool, done_after_open_us: f64) -> Level2Report {
        Level2Report {
            schema: Self::SCHEMA.into(),
            held_50ms,
            done_after_open_us,
            takes_effect: held_50ms,
        }
    }
}

/// `baton doctor`'s Level-2 self-test, in this process, on device `ordinal`: a kernel queued
/// behind a closed gate (Baton's own [`Gate`]) must not run, and must run once the gate
/// opens. The report says whether it was held and how soon it finished after the opening.
pub fn level2(d: &'static Driver, ordinal: i32) -> Result<Level2Report, ProbeError> {
    let ctx = Context::primary(d, ordinal)?;
    let k = Kernels::load(&ctx)?;
    need(d.cuStreamQuery, "cuStreamQuery")?;
    k.spin(1000, 1, 32)?;
    k.sync()?;
    // SAFETY: the context is live (retained, never released).
    let gate = unsafe { Gate::new(d, ctx.raw()) }.map_err(|cause| ProbeError::Driver {
        what: "the gate",
        cause,
    })?;
    gate.close();
    // SAFETY: the stream was created in the gate's context.
    unsafe { gate.wait_on(k.stream()) }.map_err(|cause| ProbeError::Driver {
        what: "the gate's wait",
        cause,
    })?;
    k.spin(20_000, 1, 32)?;
    std::thread::sleep(Duration::from_millis(50));
    let held = k.busy()?;
    let t0 = Instant::now();
    gate.open();
    k.sync()?;
    let after_open_us = t0.elapsed().as_secs_f64() * 1e6;
    Ok(Level2Report::new(held, after_open_us))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_claims_level_two_only_if_the_kernel_was_held() {
        let r = Level2Report::new(true, 158.0);
        assert!(r.takes_effect);
        assert!(!Level2Report::new(false, 3.0).takes_effect);
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(
            text,
            r#"{"schema":"baton.selftest.level2/1","held_50ms":true,"done_after_open_us":158.0,"takes_effect":true}"#
        );
        assert_eq!(serde_json::from_str::<Level2Report>(&text).unwrap(), r);
    }
}
