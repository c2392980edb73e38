//! Raw declarations of the CUDA driver API, written by hand for Baton.
//!
//! This crate holds only what the C header `cuda.h` declares and nothing that runs:
//!
//! - [`CUresult`] and every other C enum that crosses the boundary is a `#[repr(transparent)]`
//!   integer newtype with associated or C-named constants, never a Rust `enum`: a driver newer
//!   than these declarations may return a value missing here, and an unknown discriminant in a
//!   Rust enum is undefined behaviour.
//! - Handles ([`CUcontext`], [`CUstream`], …) are raw pointers to opaque structs that no Rust
//!   code can construct or dereference; the special stream handles [`CU_STREAM_LEGACY`] and
//!   [`CU_STREAM_PER_THREAD`] are provided as constants.
//! - Structs passed by pointer ([`CUlaunchConfig`], [`CUlaunchAttribute`], …) have the exact C
//!   layout of 64-bit Linux, checked at compile time.
//! - `PFN_<symbol>` function-pointer types give the exact C signature of each exported driver
//!   symbol Baton uses (see [`pfn`]); the `_ptsz`/`_ptds` variants share their base symbol's type.
//!
//! **Architecture invariant:** no loader and no `extern` block. Resolving symbols (by `dlsym`,
//! `cuGetProcAddress` or a test double) is the business of the crates that use these types; a
//! missing library or symbol must never panic inside someone else's process.

/// Declares a C enum as a transparent `u32` newtype with C-named constants.
macro_rules! c_enum {
    ($(#[doc = $doc:literal])* $ty:ident { $($(#[doc = $cdoc:literal])* $name:ident = $value:expr),* $(,)? }) => {
        $(#[doc = $doc])*
        ///
        /// A transparent `u32` (a C enum), so any value is representable.
        #[repr(transparent)]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $ty(pub u32);

        $(
            $(#[doc = $cdoc])*
            pub const $name: $ty = $ty($value);
        )*
    };
}

mod launch;
mod params;
pub mod pfn;
mod result;
mod types;

pub use launch::*;
pub use params::*;
pub use pfn::*;
pub use result::CUresult;
pub use types::*;
