//! The exported `dlsym`: hands out hooks for the driver functions Baton intercepts.
//!
//! `dlsym(RTLD_NEXT, …)` depends on the *caller's* position in the link order, so that path
//! must not go through a Rust frame: a naked function compares the handle and tail-jumps to the
//! real `dlsym` with the caller's return address intact. Every other lookup calls the real
//! `dlsym` and, for names starting with `cu`, swaps a real driver function (or a cuBLAS GEMM,
//! `blas/`) for its hook.
//!
//! The real `dlsym` comes from `libdl.rs`.

use std::ffi::{c_char, c_void};

use crate::libdl::{REAL_DLSYM, real_dlsym};

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
    std::panic::catch_unwind(|| {
        if name.to_bytes().starts_with(b"cublas") {
            crate::blas::substitute(name, found)
        } else {
            crate::hooks::substitute(name, found)
        }
    })
    .unwrap_or(found)
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
