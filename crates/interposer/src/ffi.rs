//! The boundary with the host process: no panic crosses it.

use std::panic::{AssertUnwindSafe, catch_unwind};

use baton_cuda::sys::CUresult;

/// Runs `body`; if it panics, logs and returns `None`: the caller then makes the real driver
/// call itself (with its arguments still at hand, so no second closure has to carry them).
#[inline]
pub(crate) fn guard(name: &'static str, body: impl FnOnce() -> CUresult) -> Option<CUresult> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => Some(r),
        Err(_) => {
            tracing::error!(
                call = name,
                "internal error in Baton; passing the call through"
            );
            None
        }
    }
}

/// The fallback after a panic in a hook: the real call, itself guarded.
pub(crate) fn fallback(real: impl FnOnce() -> CUresult) -> CUresult {
    catch_unwind(AssertUnwindSafe(real)).unwrap_or(CUresult::UNKNOWN)
}

/// A core error as the CUDA status an application expects.
pub(crate) fn status(e: &baton_cuda::core::XQueueError) -> CUresult {
    use baton_cuda::core::{HwError, XQueueError};
    match e {
        XQueueError::Hw(HwError::Backend { code, .. }) => {
            CUresult(u32::try_from(*code).unwrap_or(CUresult::UNKNOWN.0))
        }
        XQueueError::ShuttingDown => CUresult::DEINITIALIZED,
        XQueueError::UnknownCommand(_) => CUresult::INVALID_VALUE,
        _ => CUresult::UNKNOWN,
    }
}
