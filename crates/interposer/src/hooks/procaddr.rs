//! `cuGetProcAddress[_v2]`: the driver answers, then its answer is mapped to Baton's hook by
//! pointer, so the version and default-stream flavour it picked are kept.

use std::ffi::{c_char, c_int, c_void};

use baton_cuda::sys::{CUdriverProcAddressQueryResult, CUresult, cuuint64_t};

/// Replaces `*pfn` by its hook if the driver returned a function Baton intercepts.
///
/// # Safety
/// `pfn` is null or valid for reads and writes.
unsafe fn map(r: CUresult, pfn: *mut *mut c_void) -> CUresult {
    if r.is_success() && !pfn.is_null() {
        // SAFETY: the caller's contract.
        let p = unsafe { *pfn };
        if !p.is_null() {
            if let Some(h) = super::table::map().and_then(|m| m.hook_for(p)) {
                // SAFETY: as above.
                unsafe { *pfn = h };
            }
        }
    }
    r
}

hook!(cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    flags: cuuint64_t,
    status: *mut CUdriverProcAddressQueryResult,
) |_rt, real| {
    // SAFETY: the application's arguments go to the real function; `pfn` is the application's
    // out-pointer, valid if the call succeeded.
    unsafe {
        let r = real(symbol, pfn, cuda_version, flags, status);
        trace_lookup(symbol, cuda_version, flags, r);
        map(r, pfn)
    }
});

hook!(cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    flags: cuuint64_t,
) |_rt, real| {
    // SAFETY: as for cuGetProcAddress_v2.
    unsafe {
        let r = real(symbol, pfn, cuda_version, flags);
        trace_lookup(symbol, cuda_version, flags, r);
        map(r, pfn)
    }
});

/// Logs a lookup at trace level (`BATON_LOG=baton_interposer=trace`): which functions an
/// application resolves is how to find one Baton should intercept.
fn trace_lookup(symbol: *const c_char, version: c_int, flags: cuuint64_t, r: CUresult) {
    if symbol.is_null() || !tracing::enabled!(tracing::Level::TRACE) {
        return;
    }
    // SAFETY: a non-null symbol is the application's C string.
    let name = unsafe { std::ffi::CStr::from_ptr(symbol) }.to_string_lossy();
    tracing::trace!(symbol = %name, version, flags, status = r.0, "cuGetProcAddress");
}
