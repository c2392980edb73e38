//! One GEMM call as the application made it, which can be made again for any piece of it.

use std::ffi::{c_int, c_void};

use baton_cuda::sys::CUstream;

use super::found::{
    CUBLAS_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_SUCCESS, GET_STREAM, Handle, real,
};
use super::lt::{EXTRA, Lt, Unsplit};
use super::plan::Gemm;

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

/// The cuBLAS functions Baton hooks, in [`NAMES`](super::found::NAMES)'s order.
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
    /// For cuBLASLt, whatever else its kernels are chosen by (`lt::Parsed::extra`); zeros
    /// otherwise.
    pub(super) extra: [u64; EXTRA],
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
            Some(lt) => lt.parse().map(|p| Call {
                types: p.types,
                extra: p.extra,
                lt: Some(p.lt),
                gemm: p.gemm,
                ..*self
            }),
        }
    }

    /// Makes the call exactly as the application made it.
    pub(super) fn run_as_made(&self) -> c_int {
        match &self.lt {
            Some(lt) => lt.run_as_made(),
            None => self.run(&self.gemm),
        }
    }

    /// Makes the call to cuBLAS for `g` (the whole call's arguments, or a piece's) of a
    /// [`Call::parsed`] call.
    pub(super) fn run(&self, g: &Gemm) -> c_int {
        if let Some(lt) = &self.lt {
            return lt.run(&self.gemm, g);
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
