//! The export boundary: every exported symbol enters the fake through [`enter`].
//!
//! [`exports!`] declares a module's exported symbols. For each it generates a
//! `#[unsafe(no_mangle)] pub unsafe extern "C" fn` that logs the call under its exact symbol
//! name, runs the body inside `catch_unwind` (a panic becomes `CUDA_ERROR_UNKNOWN`, never an
//! unwind into C), and checks at compile time that the signature is the one `baton-cuda-sys`
//! declares for that symbol. It also generates the module's `lookup(symbol)`, which
//! `cuGetProcAddress` uses to hand out the fake's own function pointers without going through
//! the dynamic linker (where an interposer could answer instead).

use std::panic::{self, AssertUnwindSafe};

use baton_cuda_sys::CUresult;

/// The result of an implementation function: `Err` carries the code the export returns.
pub(crate) type CuResult<T> = Result<T, CUresult>;

/// Logs the call of `symbol`, runs `body` and turns its outcome into a `CUresult`.
pub(crate) fn enter(symbol: &'static str, body: impl FnOnce() -> CuResult<()>) -> CUresult {
    crate::log::call(symbol);
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => CUresult::SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => CUresult::UNKNOWN,
    }
}

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

/// Declares exported driver symbols; see the module documentation.
///
/// Each entry is `fn symbol(args…): PFN_type => body;` where `body` is an expression of type
/// `CuResult<()>` that may call `unsafe` implementation functions.
macro_rules! exports {
    ($(
        $(#[doc = $doc:literal])*
        fn $name:ident($($arg:ident: $ty:ty),* $(,)?): $pfn:ident => $body:expr;
    )*) => {
        $(
            $(#[doc = $doc])*
            ///
            /// # Safety
            ///
            /// Pointer arguments must be valid as the CUDA driver API documents for this
            /// function. Handles may hold any value: unknown ones are reported, never dereferenced.
            #[unsafe(no_mangle)]
            #[allow(non_snake_case, unused_unsafe)]
            pub unsafe extern "C" fn $name($($arg: $ty),*) -> baton_cuda_sys::CUresult {
                $crate::entry::enter(stringify!($name), || {
                    // SAFETY: the caller of this export upholds the driver API contract for its
                    // pointer arguments, which is the contract of the implementation called here.
                    unsafe { $body }
                })
            }

            const _: baton_cuda_sys::$pfn = $name;
        )*

        /// The address of this module's export named `symbol`, if it has one.
        pub(crate) fn lookup(symbol: &str) -> Option<*mut std::ffi::c_void> {
            match symbol {
                $(stringify!($name) => Some($name as *mut std::ffi::c_void),)*
                _ => None,
            }
        }

        /// The names of this module's exports.
        #[cfg(test)]
        pub(crate) const EXPORTS: &[&str] = &[$(stringify!($name)),*];
    };
}

pub(crate) use exports;
