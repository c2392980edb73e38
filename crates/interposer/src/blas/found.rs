//! The cuBLAS and cuBLASLt functions Baton hooks or calls, found in the libraries the process
//! loaded, and what Baton knows of cuBLAS's types.

use std::ffi::{CStr, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// cuBLAS's status codes Baton returns itself.
pub(super) const CUBLAS_STATUS_SUCCESS: c_int = 0;
pub(super) const CUBLAS_STATUS_NOT_INITIALIZED: c_int = 1;

pub(super) type Handle = *mut c_void;

/// Hooked entry points, then the helpers Baton calls.
pub(super) const NAMES: [&CStr; 16] = [
    c"cublasGemmEx",
    c"cublasGemmStridedBatchedEx",
    c"cublasSgemm_v2",
    c"cublasDgemm_v2",
    c"cublasHgemm",
    c"cublasSgemmStridedBatched",
    c"cublasDgemmStridedBatched",
    c"cublasHgemmStridedBatched",
    c"cublasLtMatmul",
    c"cublasGetStream_v2",
    c"cublasGetMathMode",
    c"cublasLtMatmulDescGetAttribute",
    c"cublasLtMatrixLayoutGetAttribute",
    c"cublasLtMatrixLayoutCreate",
    c"cublasLtMatrixLayoutSetAttribute",
    c"cublasLtMatrixLayoutDestroy",
];
/// `cublasLtMatmul`'s place in [`NAMES`].
pub(super) const LT_MATMUL: usize = 8;
pub(super) const GET_STREAM: usize = 9;
pub(super) const GET_MATH_MODE: usize = 10;
pub(super) const LT_DESC_GET: usize = 11;
pub(super) const LT_LAYOUT_GET: usize = 12;
pub(super) const LT_LAYOUT_CREATE: usize = 13;
pub(super) const LT_LAYOUT_SET: usize = 14;
pub(super) const LT_LAYOUT_DESTROY: usize = 15;
/// How cuBLAS's and cuBLASLt's libraries are named, newest first: the one loaded is found by
/// its soname.
const SONAMES: [&CStr; 5] = [
    c"libcublas.so.13",
    c"libcublas.so.12",
    c"libcublas.so.11",
    c"libcublas.so.10",
    c"libcublas.so",
];
const LT_SONAMES: [&CStr; 4] = [
    c"libcublasLt.so.13",
    c"libcublasLt.so.12",
    c"libcublasLt.so.11",
    c"libcublasLt.so",
];

/// The real functions (0: not found yet).
pub(super) static REAL: [AtomicUsize; NAMES.len()] = [const { AtomicUsize::new(0) }; NAMES.len()];

/// The real function `NAMES[i]`, found in the cuBLAS (or cuBLASLt) the process loaded (by its
/// soname), else the next definition after Baton's in the global scope (a library of another
/// name the program linked).
pub(super) fn real(i: usize) -> Option<usize> {
    let p = REAL[i].load(Ordering::Acquire);
    if p != 0 {
        return Some(p);
    }
    let sonames: &[&CStr] = if NAMES[i].to_bytes().starts_with(b"cublasLt") {
        &LT_SONAMES
    } else {
        &SONAMES
    };
    let found = sonames.iter().find_map(|soname| {
        // SAFETY: RTLD_NOLOAD only looks for a library already loaded; it loads nothing and
        // runs no initializer. The name is a C string.
        let lib = unsafe { libc::dlopen(soname.as_ptr(), libc::RTLD_NOLOAD | libc::RTLD_LAZY) };
        if lib.is_null() {
            return None;
        }
        let f = crate::libdl::lookup(lib, NAMES[i].as_ptr());
        // SAFETY: `lib` came from dlopen above; this drops the reference it added.
        unsafe { libc::dlclose(lib) };
        (!f.is_null()).then_some(f as usize)
    });
    let found = found.or_else(|| {
        let f = crate::libdl::lookup(libc::RTLD_NEXT, NAMES[i].as_ptr());
        (!f.is_null()).then_some(f as usize)
    })?;
    let _ = REAL[i].compare_exchange(0, found, Ordering::AcqRel, Ordering::Acquire);
    Some(REAL[i].load(Ordering::Acquire))
}

/// Bytes per element of a `cudaDataType_t` (`None`: one Baton does not know, left whole).
pub(super) fn type_bytes(t: c_int) -> Option<usize> {
    Some(match t {
        3 | 8 | 28 | 29 => 1, // R_8I, R_8U, R_8F_E4M3, R_8F_E5M2
        2 | 14 | 20 => 2,     // R_16F, R_16BF, R_16I
        0 | 10 | 12 | 6 => 4, // R_32F, R_32I, R_32U, C_16F
        1 | 4 | 24 | 26 => 8, // R_64F, C_32F, R_64I, R_64U
        5 => 16,              // C_64F
        _ => return None,
    })
}
