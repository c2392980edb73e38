//! What implementation functions return, and how they write results through out-parameters.

use baton_cuda_sys::CUresult;

/// The result of an implementation function: `Err` carries the code the export returns.
pub(crate) type CuResult<T> = Result<T, CUresult>;

/// Writes `value` through the out-parameter `out`.
///
/// # Safety
///
/// `out` must be NULL (reported as `CUDA_ERROR_INVALID_VALUE`) or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) -> CuResult<()> {
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: `out` is not NULL, and the caller guarantees it is valid for a write of `T`.
    unsafe { out.write(value) };
    Ok(())
}

/// Writes `value` through `out` unless `out` is NULL (for optional out-parameters).
///
/// # Safety
///
/// `out` must be NULL or valid for a write of `T`.
pub(crate) unsafe fn put_opt<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: `out` is not NULL, and the caller guarantees it is valid for a write of `T`.
        unsafe { out.write(value) };
    }
}
