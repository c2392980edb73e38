//! The real `dlsym`, for every lookup Baton makes itself (the driver's functions, Python's).
//!
//! It is found with `dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34")` (falling back to the x86-64
//! base version) from an ELF constructor, before anything else runs; nothing here allocates or
//! locks before that. Baton's exported `dlsym` (`dlsym.rs`) jumps to it for `RTLD_NEXT`.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// The real `dlsym`, or null until resolved. Read by the naked entry point.
pub(crate) static REAL_DLSYM: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// Resolves the real `dlsym` if needed and returns it.
pub(crate) fn real_dlsym() -> Option<DlsymFn> {
    let mut p = REAL_DLSYM.load(Ordering::Acquire);
    if p.is_null() {
        for version in [c"GLIBC_2.34", c"GLIBC_2.2.5", c"GLIBC_2.17"] {
            // SAFETY: dlvsym with RTLD_NEXT and valid C strings has no other preconditions.
            p = unsafe { libc::dlvsym(libc::RTLD_NEXT, c"dlsym".as_ptr(), version.as_ptr()) };
            if !p.is_null() {
                break;
            }
        }
        if p.is_null() {
            return None;
        }
        REAL_DLSYM.store(p, Ordering::Release);
    }
    // SAFETY: `p` is libc's dlsym, whose signature is DlsymFn.
    Some(unsafe { std::mem::transmute::<*mut c_void, DlsymFn>(p) })
}

/// Looks `name` up in `handle` with the real `dlsym` (never the hook).
pub(crate) fn lookup(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    match real_dlsym() {
        // SAFETY: the caller passes a dlopen handle (or pseudo-handle) and a C string.
        Some(f) => unsafe { f(handle, name) },
        None => std::ptr::null_mut(),
    }
}

extern "C" fn resolve_at_load() {
    let _ = real_dlsym();
}

#[used]
#[unsafe(link_section = ".init_array")]
static RESOLVE_AT_LOAD: extern "C" fn() = resolve_at_load;
