//! The cuBLAS and cuBLASLt functions Baton calls, found in the libraries the process loaded, and
//! one GEMM call as the application made it, which can be made again for any piece of it.

use std::ffi::{CStr, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

use baton_cuda::sys::CUstream;

use super::lt::{Lt, Unsplit};
use super::plan::Gemm;

/// cuBLAS's status codes Baton returns itself.
pub(super) const CUBLAS_STATUS_SUCCESS: c_int = 0;
pub(super) const CUBLAS_STATUS_NOT_INITIALIZED: c_int = 1;

pub(super) type Handle = *mut c_void;
type GemmExFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    c_int,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    c_int,
    c_int,
) -> c_int;
type StridedExFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    i64,
    c_int,
    c_int,
    c_int,
) -> c_int;
type TypedFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    *const c_void,
    c_int,
    *const c_void,
    *mut c_void,
    c_int,
) -> c_int;
type TypedStridedFn = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    i64,
    *const c_void,
    c_int,
    i64,
    *const c_void,
    *mut c_void,
    c_int,
    i64,
    c_int,
) -> c_int;
pub(super) type GetStreamFn = unsafe extern "C" fn(Handle, *mut CUstream) -> c_int;
pub(super) type GetMathModeFn = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;

/// The cuBLAS functions Baton hooks or calls, in [`NAMES`]'s order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Entry {
    GemmEx,
    GemmStridedBatchedEx,
    Sgemm,
    Dgemm,
    Hgemm,
    SgemmStridedBatched,
    DgemmStridedBatched,
    HgemmStridedBatched,
    LtMatmul,
}

impl Entry {
    /// Its name in the report.
    pub(super) fn name(self) -> &'static str {
        match self {
            Entry::GemmEx => "gemm_ex",
            Entry::GemmStridedBatchedEx => "gemm_strided_batched_ex",
            Entry::Sgemm => "sgemm",
            Entry::Dgemm => "dgemm",
            Entry::Hgemm => "hgemm",
            Entry::SgemmStridedBatched => "sgemm_strided_batched",
            Entry::DgemmStridedBatched => "dgemm_strided_batched",
            Entry::HgemmStridedBatched => "hgemm_strided_batched",
            Entry::LtMatmul => "lt_matmul",
        }
    }
}

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

/// One GEMM call as the application made it.
#[derive(Clone, Copy)]
pub(super) struct Call {
    pub(super) entry: Entry,
    pub(super) handle: Handle,
    pub(super) alpha: *const c_void,
    pub(super) beta: *const c_void,
    /// `Atype`, `Btype`, `Ctype`, `computeType` and `algo` of the `Ex` calls (0 for the typed
    /// ones); for cuBLASLt the types of `A`, `B` and `D`, `computeType` and `scaleType`.
    pub(super) types: [c_int; 5],
    /// For cuBLASLt, whatever else its kernels are chosen by ([`Lt::key`]); zeros otherwise.
    pub(super) extra: [u64; 16],
    /// What cuBLASLt's call names beyond the operands (`None` for cuBLAS).
    pub(super) lt: Option<Lt>,
    /// Where it is [`Call::parsed`]: the operands, `D` (for cuBLASLt) in the place of `C`.
    pub(super) gemm: Gemm,
}

impl Call {
    /// The call's stream: cuBLASLt names it, cuBLAS keeps it in the handle.
    pub(super) fn stream(&self) -> Option<CUstream> {
        if let Some(lt) = &self.lt {
            return Some(lt.stream);
        }
        let get_stream = real(GET_STREAM)?;
        let mut stream: CUstream = std::ptr::null_mut();
        // SAFETY: cuBLAS's cublasGetStream_v2 on the application's handle, into a local.
        let r = unsafe {
            std::mem::transmute::<usize, GetStreamFn>(get_stream)(self.handle, &mut stream)
        };
        (r == CUBLAS_STATUS_SUCCESS).then_some(stream)
    }

    /// The call with its operands read, ready to be planned, or why a cuBLASLt call is made
    /// whole. A cuBLAS call's operands are its arguments; a cuBLASLt call's are read from its
    /// descriptors only here, once its stream may be held.
    pub(super) fn parsed(&self) -> Result<Call, Unsplit> {
        match &self.lt {
            None => Ok(*self),
            Some(lt) => lt.parse(self),
        }
    }

    /// Makes the call exactly as the application made it.
    pub(super) fn run_as_made(&self) -> c_int {
        match &self.lt {
            Some(lt) => lt.run_as_made(self),
            None => self.run(&self.gemm),
        }
    }

    /// Makes the call to cuBLAS for `g` (the whole call's arguments, or a piece's) of a
    /// [`Call::parsed`] call.
    pub(super) fn run(&self, g: &Gemm) -> c_int {
        if let Some(lt) = &self.lt {
            return lt.run(self, g);
        }
        let Some(f) = real(self.entry as usize) else {
            return CUBLAS_STATUS_NOT_INITIALIZED;
        };
        let (h, al, be) = (self.handle, self.alpha, self.beta);
        let (a, b, c) = (
            g.a as *const c_void,
            g.b as *const c_void,
            g.c as *mut c_void,
        );
        let [at, bt, ct, compute, algo] = self.types;
        // SAFETY: `f` is cuBLAS's function of this entry (found under its name), called with
        // the application's arguments, or a piece's: the same operands moved to a band that
        // lies inside the matrices the whole call names (`plan`), so cuBLAS reads and writes
        // only memory the application gave it.
        unsafe {
            match self.entry {
                Entry::GemmEx => std::mem::transmute::<usize, GemmExFn>(f)(
                    h, g.transa, g.transb, g.m, g.n, g.k, al, a, at, g.lda, b, bt, g.ldb, be, c,
                    ct, g.ldc, compute, algo,
                ),
                Entry::GemmStridedBatchedEx => std::mem::transmute::<usize, StridedExFn>(f)(
                    h, g.transa, g.transb, g.m, g.n, g.k, al, a, at, g.lda, g.stride_a, b, bt,
                    g.ldb, g.stride_b, be, c, ct, g.ldc, g.stride_c, g.batch, compute, algo,
                ),
                Entry::Sgemm | Entry::Dgemm | Entry::Hgemm => {
                    std::mem::transmute::<usize, TypedFn>(f)(
                        h, g.transa, g.transb, g.m, g.n, g.k, al, a, g.lda, b, g.ldb, be, c, g.ldc,
                    )
                }
                Entry::SgemmStridedBatched
                | Entry::DgemmStridedBatched
                | Entry::HgemmStridedBatched => std::mem::transmute::<usize, TypedStridedFn>(f)(
                    h, g.transa, g.transb, g.m, g.n, g.k, al, a, g.lda, g.stride_a, b, g.ldb,
                    g.stride_b, be, c, g.ldc, g.stride_c, g.batch,
                ),
                // Made by `Lt::run` above.
                Entry::LtMatmul => CUBLAS_STATUS_NOT_INITIALIZED,
            }
        }
    }
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
