//! The exported `dlsym`: hands out hooks for the driver functions Baton intercepts.
//!
//! `dlsym(RTLD_NEXT, …)` depends on the *caller's* position in the link order, so that path
//! must not go through a Rust frame: a naked function compares the handle and tail-jumps to the
//! real `dlsym` with the caller's return address intact. Every other lookup calls the real
//! `dlsym` and, for names starting with `cu`, swaps a real driver function for its hook.
//!
//! The real `dlsym` is found with `dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34")` (falling back to
//! the x86-64 base version) from an ELF constructor, before anything else runs; nothing here
//! allocates or locks before that.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;

/// The real `dlsym`, or null until resolved. Read by the naked entry point.
static REAL_DLSYM: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

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

/// Every lookup except `RTLD_NEXT`: the real answer, with driver functions swapped for hooks.
unsafe extern "C" fn dlsym_slow(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    let Some(real) = real_dlsym() else {
        return std::ptr::null_mut();
    };
    // SAFETY: the arguments are the application's, passed on unchanged.
    let found = unsafe { real(handle, symbol) };
    if found.is_null() || symbol.is_null() {
        return found;
    }
    // SAFETY: `symbol` is a non-null C string (dlsym's contract), so its first byte is readable,
    // and the second too whenever the first is not NUL.
    let is_cu = unsafe { *symbol == b'c' as c_char && *symbol.add(1) == b'u' as c_char };
    if !is_cu {
        return found;
    }
    // SAFETY: as above; the name is a C string.
    let name = unsafe { std::ffi::CStr::from_ptr(symbol) };
    std::panic::catch_unwind(|| crate::table::substitute(name, found)).unwrap_or(found)
}

/// The exported `dlsym`. `RTLD_NEXT` (`-1`) jumps to the real one untouched; everything else
/// goes through [`dlsym_slow`].
///
/// # Safety
/// Same contract as libc's `dlsym`.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    core::arch::naked_asm!(
        "cmp rdi, -1",
        "jne 2f",
        "mov rax, qword ptr [rip + {real}]",
        "test rax, rax",
        "jz 2f",
        "jmp rax",
        "2:",
        "jmp {slow}",
        real = sym REAL_DLSYM,
        slow = sym dlsym_slow,
    )
}

/// The exported `dlsym` (see the x86-64 version).
///
/// # Safety
/// Same contract as libc's `dlsym`.
#[cfg(target_arch = "aarch64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void {
    core::arch::naked_asm!(
        "cmn x0, #1",
        "b.ne 2f",
        "adrp x16, {real}",
        "ldr x16, [x16, :lo12:{real}]",
        "cbz x16, 2f",
        "br x16",
        "2:",
        "b {slow}",
        real = sym REAL_DLSYM,
        slow = sym dlsym_slow,
    )
}
