//! `cuGetProcAddress[_v2]`: the driver answers, then its answer is mapped to Baton's hook by
//! pointer, so the version and default-stream flavour it picked are kept.

use std::ffi::{c_char, c_int, c_void};

use baton_cuda::sys::{CUdriverProcAddressQueryResult, CUresult, cuuint64_t};

/// Replaces `*pfn` by its hook if the driver returned a function Baton intercepts.
///
/// # Safety
/// `pfn` is null or valid for reads and writes.
unsafe fn map(rt: &crate::runtime::Runtime, r: CUresult, pfn: *mut *mut c_void) -> CUresult {
    if r.is_success() && !pfn.is_null() {
        // SAFETY: the caller's contract.
        let p = unsafe { *pfn };
        if !p.is_null() {
            if let Some(h) = rt.hooks.hook_for(p) {
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
) |rt, real| {
    // SAFETY: the application's arguments go to the real function; `pfn` is the application's
    // out-pointer, valid if the call succeeded.
    unsafe {
        let r = real(symbol, pfn, cuda_version, flags, status);
        map(rt, r, pfn)
    }
});

hook!(cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    cuda_version: c_int,
    flags: cuuint64_t,
) |rt, real| {
    // SAFETY: as for cuGetProcAddress_v2.
    unsafe {
        let r = real(symbol, pfn, cuda_version, flags);
        map(rt, r, pfn)
    }
});
