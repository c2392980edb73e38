//! The export boundary: every exported symbol enters the fake through [`enter`].
//!
//! [`enter`] logs the call through the process's state, which the first call of a process
//! creates (registering the exit handler, see `state.rs`), and a forked child's first call
//! creates anew.
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

use crate::result::CuResult;
use crate::state;

/// Logs the call of `symbol`, runs `body` and turns its outcome into a `CUresult`.
pub(crate) fn enter(symbol: &'static str, body: impl FnOnce() -> CuResult<()>) -> CUresult {
    if let Some(log) = &state::global().machine.log {
        log.call(symbol);
    }
    match panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => CUresult::SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => CUresult::UNKNOWN,
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
