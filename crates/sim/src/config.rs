//! The simulated device's parameters.

use baton_core::{Level, Nanos};

/// Parameters of a simulated device. The defaults resemble one H100: 132 SMs, 2 ms context
/// time slices, and Level-3 interrupts as fast as XSched measured on a V100 (32 µs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// Compute units kernels share.
    pub sm_count: u32,
    /// How long a context keeps the device while others wait.
    pub timeslice: Nanos,
    /// Time lost when the device switches from one context to another.
    pub switch_cost: Nanos,
    /// Time lost instead when the context switched away from has no kernel running (nothing
    /// of it to save: it ran out of work); `None`: [`SimConfig::switch_cost`] as well.
    pub idle_switch_cost: Option<Nanos>,
    /// Time between an interrupt request and the running kernel leaving its SMs.
    pub interrupt_latency: Nanos,
    /// The highest level the device's queues offer.
    pub max_level: Level,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            sm_count: 132,
            timeslice: Nanos::from_millis(2),
            switch_cost: Nanos::from_micros(25),
            idle_switch_cost: None,
            interrupt_latency: Nanos::from_micros(30),
            max_level: Level::L3,
        }
    }
}
