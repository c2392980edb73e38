//! What every scenario works with, and the two ways scenarios print their values.

use crate::api::Driver;
use crate::gpu::{Ctx, Gpu, Kernels};

/// Everything a scenario works with.
pub struct Session {
    /// The opened driver (to resolve more functions, e.g. with other flags).
    pub driver: Driver,
    /// The functions the app resolved.
    pub gpu: Gpu,
    /// The current context.
    pub ctx: Ctx,
    /// The module's functions.
    pub k: Kernels,
}

/// FNV-1a over the values, for result lines.
pub(super) fn checksum(values: &[i32]) -> u64 {
    values
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// `1,2,3`.
pub(super) fn join(values: &[i32]) -> String {
    values
        .iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_is_fnv1a() {
        assert_eq!(checksum(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(checksum(&[1, 2]), checksum(&[2, 1]));
    }
}
