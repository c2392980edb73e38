//! cuBLAS GEMMs split into short pieces while a scheduler may hold their stream back.
//!
//! A GEMM is one long kernel (an 8192³ bf16 GEMM holds every SM of an H200 for 1.4 ms): once
//! launched, a more urgent program's work waits for it, however early Baton holds the rest of
//! the job back. While the stream's queue is bounded by device time (some scheduler may
//! suspend and hold it: [`XQueue::may_run_unbounded`] off, [`XQueue::holdable`] on), each
//! GEMM call is made as several calls, each computing a band of the result's columns (or
//! rows) whole, about `BATON_GEMM_PIECE_US` of device time each ([`plan`]). Then the budget of
//! work in flight holds a few pieces, and what a hold waits for is one piece.
//!
//! The pieces must give the bits the whole call gives: before a shape is split the first time,
//! both are computed on the device into copies of `C` and compared byte for byte, and a shape
//! whose pieces differ, or cost more than a quarter more device time, is never split
//! ([`check`]). Alone (no scheduler can suspend the stream) nothing is split, checked or added
//! but one `cublasGetStream` per call.
//!
//! # How calls reach it
//!
//! The hooks are exported under cuBLAS's names. A program linked against `libcublas` binds to
//! them first (the interposer is preloaded); one that looks them up with `dlsym` in a cuBLAS it
//! opened itself gets them from Baton's `dlsym` ([`substitute`]). The real functions come from
//! that lookup, else from the cuBLAS already loaded in the process (by its soname, never
//! loading one).
//!
//! [`XQueue::may_run_unbounded`]: baton_cuda::core::XQueue::may_run_unbounded
//! [`XQueue::holdable`]: baton_cuda::core::XQueue::holdable

use std::collections::HashMap;
use std::ffi::{CStr, c_int, c_void};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use baton_cuda::core::locks;
use baton_cuda::sys::CUstream;
use serde::Serialize;

use crate::registry::Api;

mod check;
mod plan;

use check::Verdict;
use plan::Gemm;

/// cuBLAS's status codes Baton returns itself.
const CUBLAS_STATUS_SUCCESS: c_int = 0;
const CUBLAS_STATUS_NOT_INITIALIZED: c_int = 1;

type Handle = *mut c_void;
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
type GetStreamFn = unsafe extern "C" fn(Handle, *mut CUstream) -> c_int;
type GetMathModeFn = unsafe extern "C" fn(Handle, *mut c_int) -> c_int;

/// The cuBLAS functions Baton hooks or calls, in [`NAMES`]'s order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
enum Entry {
    GemmEx,
    GemmStridedBatchedEx,
    Sgemm,
    Dgemm,
    Hgemm,
    SgemmStridedBatched,
    DgemmStridedBatched,
    HgemmStridedBatched,
}

/// Hooked entry points, then the two helpers Baton calls.
const NAMES: [&CStr; 10] = [
    c"cublasGemmEx",
    c"cublasGemmStridedBatchedEx",
    c"cublasSgemm_v2",
    c"cublasDgemm_v2",
    c"cublasHgemm",
    c"cublasSgemmStridedBatched",
    c"cublasDgemmStridedBatched",
    c"cublasHgemmStridedBatched",
    c"cublasGetStream_v2",
    c"cublasGetMathMode",
];
const GET_STREAM: usize = 8;
const GET_MATH_MODE: usize = 9;
/// How cuBLAS's library is named, newest first: the one loaded is found by its soname.
const SONAMES: [&CStr; 4] = [
    c"libcublas.so.13",
    c"libcublas.so.12",
    c"libcublas.so.11",
    c"libcublas.so",
];

/// The real functions (0: not found yet).
static REAL: [AtomicUsize; NAMES.len()] = [const { AtomicUsize::new(0) }; NAMES.len()];

/// The real function `NAMES[i]`, found in the cuBLAS the process loaded.
fn real(i: usize) -> Option<usize> {
    let p = REAL[i].load(Ordering::Acquire);
    if p != 0 {
        return Some(p);
    }
    let found = SONAMES.iter().find_map(|soname| {
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
    })?;
    let _ = REAL[i].compare_exchange(0, found, Ordering::AcqRel, Ordering::Acquire);
    Some(REAL[i].load(Ordering::Acquire))
}

/// A `dlsym` answer for a cuBLAS name: the hook in place of the real function, which is kept
/// for the hook to call. Anything else is returned as found.
pub(crate) fn substitute(name: &CStr, found: *mut c_void) -> *mut c_void {
    let Some(i) = NAMES.iter().position(|n| *n == name) else {
        return found;
    };
    let hook = hooks().get(i).copied();
    if hook == Some(found as usize) {
        return found;
    }
    let _ = REAL[i].compare_exchange(0, found as usize, Ordering::AcqRel, Ordering::Acquire);
    match hook {
        // The real function found is the one kept (or another cuBLAS's): the hook calls it.
        Some(h) if REAL[i].load(Ordering::Acquire) == found as usize => h as *mut c_void,
        _ => found,
    }
}

/// The hooks, in [`NAMES`]'s order (the helpers have none).
fn hooks() -> [usize; 8] {
    [
        cublasGemmEx as *const () as usize,
        cublasGemmStridedBatchedEx as *const () as usize,
        cublasSgemm_v2 as *const () as usize,
        cublasDgemm_v2 as *const () as usize,
        cublasHgemm as *const () as usize,
        cublasSgemmStridedBatched as *const () as usize,
        cublasDgemmStridedBatched as *const () as usize,
        cublasHgemmStridedBatched as *const () as usize,
    ]
}

/// One GEMM call as the application made it.
#[derive(Clone, Copy)]
struct Call {
    entry: Entry,
    handle: Handle,
    alpha: *const c_void,
    beta: *const c_void,
    /// `Atype`, `Btype`, `Ctype`, `computeType` and `algo` of the `Ex` calls (0 otherwise).
    types: [c_int; 5],
    gemm: Gemm,
}

impl Call {
    /// Makes the call to cuBLAS for `g` (the whole call's arguments, or a piece's).
    fn run(&self, g: &Gemm) -> c_int {
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
            }
        }
    }
}

/// Bytes per element of a `cudaDataType_t` (`None`: one Baton does not know, left whole).
fn type_bytes(t: c_int) -> Option<usize> {
    Some(match t {
        3 | 8 | 28 | 29 => 1, // R_8I, R_8U, R_8F_E4M3, R_8F_E5M2
        2 | 14 | 20 => 2,     // R_16F, R_16BF, R_16I
        0 | 10 | 12 | 6 => 4, // R_32F, R_32I, R_32U, C_16F
        1 | 4 | 24 | 26 => 8, // R_64F, C_32F, R_64I, R_64U
        5 => 16,              // C_64F
        _ => return None,
    })
}

/// Everything cuBLAS may choose its kernels by: a check holds for calls equal in all of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    entry: Entry,
    handle: usize,
    math_mode: c_int,
    types: [c_int; 5],
    shape: [i64; 12],
    alignment: [u16; 3],
}

impl Key {
    fn of(call: &Call, math_mode: c_int) -> Key {
        let g = &call.gemm;
        Key {
            entry: call.entry,
            handle: call.handle as usize,
            math_mode,
            types: call.types,
            shape: [
                g.transa.into(),
                g.transb.into(),
                g.m.into(),
                g.n.into(),
                g.k.into(),
                g.lda.into(),
                g.ldb.into(),
                g.ldc.into(),
                g.stride_a,
                g.stride_b,
                g.stride_c,
                g.batch.into(),
            ],
            alignment: g.alignment(),
        }
    }
}

/// The shapes checked so far and what was found.
fn verdicts() -> &'static Mutex<HashMap<Key, Verdict>> {
    static V: OnceLock<Mutex<HashMap<Key, Verdict>>> = OnceLock::new();
    V.get_or_init(Mutex::default)
}

/// What the report says of the GEMMs.
#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    split_calls: AtomicU64,
    pieces: AtomicU64,
    checks: AtomicU64,
    check_ns: AtomicU64,
}

static COUNTS: Counts = Counts {
    calls: AtomicU64::new(0),
    split_calls: AtomicU64::new(0),
    pieces: AtomicU64::new(0),
    checks: AtomicU64::new(0),
    check_ns: AtomicU64::new(0),
};

/// A hooked GEMM: split where its stream may be held and the check allows, else as called.
fn gemm(call: Call) -> c_int {
    let tried = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| split(&call)));
    match tried {
        Ok(Some(status)) => status,
        Ok(None) => call.run(&call.gemm),
        Err(_) => {
            tracing::error!(
                call = ?NAMES[call.entry as usize],
                "internal error in Baton; making the call whole"
            );
            call.run(&call.gemm)
        }
    }
}

/// The call made in pieces, its status; `None` to make it whole.
fn split(call: &Call) -> Option<c_int> {
    let rt = crate::runtime::get()?;
    let piece_ns = rt.cfg.gemm_piece_us().saturating_mul(1000);
    if !rt.hot.enabled || piece_ns == 0 {
        return None;
    }
    COUNTS.calls.fetch_add(1, Ordering::Relaxed);
    if !call.gemm.splittable() {
        return None;
    }
    let get_stream = real(GET_STREAM)?;
    let mut stream: CUstream = std::ptr::null_mut();
    // SAFETY: cuBLAS's cublasGetStream_v2 on the application's handle, into a local.
    let r =
        unsafe { std::mem::transmute::<usize, GetStreamFn>(get_stream)(call.handle, &mut stream) };
    if r != CUBLAS_STATUS_SUCCESS {
        return None;
    }
    let entry = rt.scheduled_entry(stream, Api::Plain)?;
    tracing::trace!(
        capturing = entry.capturing.load(Ordering::Acquire),
        unbounded = entry.xq.may_run_unbounded(),
        holdable = entry.xq.holdable(),
        "GEMM on a scheduled stream"
    );
    if entry.capturing.load(Ordering::Acquire)
        || entry.xq.may_run_unbounded()
        || !entry.xq.holdable()
    {
        return None;
    }
    let mut math_mode: c_int = 0;
    if let Some(f) = real(GET_MATH_MODE) {
        // SAFETY: cuBLAS's cublasGetMathMode on the application's handle, into a local.
        unsafe { std::mem::transmute::<usize, GetMathModeFn>(f)(call.handle, &mut math_mode) };
    }
    let key = Key::of(call, math_mode);
    let known = locks::lock(verdicts()).get(&key).copied();
    let verdict = match known {
        Some(v) => v,
        // Never during a capture anywhere in the process: the check synchronizes and
        // allocates, which a capture in the global mode forbids.
        None if rt.gate.active() => return None,
        None => {
            let since = std::time::Instant::now();
            let v = check::check(rt, call, stream, piece_ns);
            COUNTS.checks.fetch_add(1, Ordering::Relaxed);
            let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
            COUNTS.check_ns.fetch_add(ns, Ordering::Relaxed);
            tracing::debug!(?key, ?v, "GEMM shape checked");
            locks::lock(verdicts()).insert(key, v);
            record_shape(call, v);
            v
        }
    };
    let Verdict::Split { split, .. } = verdict else {
        return None;
    };
    COUNTS.split_calls.fetch_add(1, Ordering::Relaxed);
    for (start, width) in split.bands(&call.gemm) {
        COUNTS.pieces.fetch_add(1, Ordering::Relaxed);
        let r = call.run(&call.gemm.piece(split.axis, start, width));
        if r != CUBLAS_STATUS_SUCCESS {
            return Some(r);
        }
    }
    Some(CUBLAS_STATUS_SUCCESS)
}

/// One checked shape, for the report.
#[derive(Clone, Copy, Debug, Serialize)]
pub(crate) struct Shape {
    entry: Entry,
    m: c_int,
    n: c_int,
    k: c_int,
    batch: c_int,
    types: [c_int; 5],
    verdict: Verdict,
}

/// How many checked shapes the report lists.
const SHAPES: usize = 32;

fn shapes() -> &'static Mutex<Vec<Shape>> {
    static S: OnceLock<Mutex<Vec<Shape>>> = OnceLock::new();
    S.get_or_init(Mutex::default)
}

fn record_shape(call: &Call, verdict: Verdict) {
    let mut s = locks::lock(shapes());
    if s.len() < SHAPES {
        let g = &call.gemm;
        s.push(Shape {
            entry: call.entry,
            m: g.m,
            n: g.n,
            k: g.k,
            batch: g.batch,
            types: call.types,
            verdict,
        });
    }
}

/// The report's `gemm` section.
#[derive(Debug, Serialize)]
pub(crate) struct GemmReport {
    /// GEMM calls made through the hooks while Baton schedules.
    calls: u64,
    /// Of them, those made in pieces, and the pieces.
    split_calls: u64,
    pieces: u64,
    /// Shapes checked on the device, and the time the checks took on the calling threads.
    checks: u64,
    check_ms: f64,
    /// The first checked shapes and what was found.
    shapes: Vec<Shape>,
}

pub(crate) fn report() -> GemmReport {
    let c = &COUNTS;
    GemmReport {
        calls: c.calls.load(Ordering::Relaxed),
        split_calls: c.split_calls.load(Ordering::Relaxed),
        pieces: c.pieces.load(Ordering::Relaxed),
        checks: c.checks.load(Ordering::Relaxed),
        check_ms: c.check_ns.load(Ordering::Relaxed) as f64 / 1e6,
        shapes: locks::lock(shapes()).clone(),
    }
}

/// Defines an exported cuBLAS hook that builds the [`Call`] and hands it to [`gemm`].
macro_rules! blas_hook {
    ($name:ident, $entry:ident ($($a:ident: $t:ty),* $(,)?) => $call:expr) => {
        /// Baton's hook for the cuBLAS function of the same name (see the module
        /// documentation).
        ///
        /// # Safety
        /// cuBLAS's contract for this function.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
            let entry = Entry::$entry;
            gemm($call(entry))
        }
    };
}

/// A typed GEMM's [`Call`] (`bytes` per element).
#[allow(clippy::too_many_arguments)]
fn typed(
    entry: Entry,
    bytes: usize,
    handle: Handle,
    (transa, transb, m, n, k): (c_int, c_int, c_int, c_int, c_int),
    (alpha, beta): (*const c_void, *const c_void),
    (a, lda, stride_a): (*const c_void, c_int, i64),
    (b, ldb, stride_b): (*const c_void, c_int, i64),
    (c, ldc, stride_c): (*mut c_void, c_int, i64),
    batch: c_int,
) -> Call {
    Call {
        entry,
        handle,
        alpha,
        beta,
        types: [0; 5],
        gemm: Gemm {
            transa,
            transb,
            m,
            n,
            k,
            a: a as usize,
            lda,
            stride_a,
            b: b as usize,
            ldb,
            stride_b,
            c: c as usize,
            ldc,
            stride_c,
            batch,
            bytes: [bytes; 3],
        },
    }
}

/// An `Ex` GEMM's [`Call`]; a type Baton does not know makes it one that is never split.
#[allow(clippy::too_many_arguments)]
fn ex(
    entry: Entry,
    handle: Handle,
    dims: (c_int, c_int, c_int, c_int, c_int),
    scalars: (*const c_void, *const c_void),
    (a, atype, lda, stride_a): (*const c_void, c_int, c_int, i64),
    (b, btype, ldb, stride_b): (*const c_void, c_int, c_int, i64),
    (c, ctype, ldc, stride_c): (*mut c_void, c_int, c_int, i64),
    batch: c_int,
    (compute, algo): (c_int, c_int),
) -> Call {
    let mut call = typed(
        entry,
        0,
        handle,
        dims,
        scalars,
        (a, lda, stride_a),
        (b, ldb, stride_b),
        (c, ldc, stride_c),
        batch,
    );
    call.types = [atype, btype, ctype, compute, algo];
    call.gemm.bytes = [atype, btype, ctype].map(|t| type_bytes(t).unwrap_or(0));
    call
}

blas_hook!(cublasGemmEx, GemmEx(
    handle: Handle, transa: c_int, transb: c_int, m: c_int, n: c_int, k: c_int,
    alpha: *const c_void, a: *const c_void, atype: c_int, lda: c_int,
    b: *const c_void, btype: c_int, ldb: c_int, beta: *const c_void,
    c: *mut c_void, ctype: c_int, ldc: c_int, compute: c_int, algo: c_int,
) => |e| ex(e, handle, (transa, transb, m, n, k), (alpha, beta), (a, atype, lda, 0),
           (b, btype, ldb, 0), (c, ctype, ldc, 0), 1, (compute, algo)));

blas_hook!(cublasGemmStridedBatchedEx, GemmStridedBatchedEx(
    handle: Handle, transa: c_int, transb: c_int, m: c_int, n: c_int, k: c_int,
    alpha: *const c_void, a: *const c_void, atype: c_int, lda: c_int, stride_a: i64,
    b: *const c_void, btype: c_int, ldb: c_int, stride_b: i64, beta: *const c_void,
    c: *mut c_void, ctype: c_int, ldc: c_int, stride_c: i64, batch: c_int,
    compute: c_int, algo: c_int,
) => |e| ex(e, handle, (transa, transb, m, n, k), (alpha, beta), (a, atype, lda, stride_a),
           (b, btype, ldb, stride_b), (c, ctype, ldc, stride_c), batch, (compute, algo)));

macro_rules! typed_hook {
    ($name:ident, $entry:ident, $bytes:expr) => {
        blas_hook!($name, $entry(
            handle: Handle, transa: c_int, transb: c_int, m: c_int, n: c_int, k: c_int,
            alpha: *const c_void, a: *const c_void, lda: c_int, b: *const c_void, ldb: c_int,
            beta: *const c_void, c: *mut c_void, ldc: c_int,
        ) => |e| typed(e, $bytes, handle, (transa, transb, m, n, k), (alpha, beta),
                      (a, lda, 0), (b, ldb, 0), (c, ldc, 0), 1));
    };
}

macro_rules! typed_strided_hook {
    ($name:ident, $entry:ident, $bytes:expr) => {
        blas_hook!($name, $entry(
            handle: Handle, transa: c_int, transb: c_int, m: c_int, n: c_int, k: c_int,
            alpha: *const c_void, a: *const c_void, lda: c_int, stride_a: i64,
            b: *const c_void, ldb: c_int, stride_b: i64, beta: *const c_void,
            c: *mut c_void, ldc: c_int, stride_c: i64, batch: c_int,
        ) => |e| typed(e, $bytes, handle, (transa, transb, m, n, k), (alpha, beta),
                      (a, lda, stride_a), (b, ldb, stride_b), (c, ldc, stride_c), batch));
    };
}

typed_hook!(cublasSgemm_v2, Sgemm, 4);
typed_hook!(cublasDgemm_v2, Dgemm, 8);
typed_hook!(cublasHgemm, Hgemm, 2);
typed_strided_hook!(cublasSgemmStridedBatched, SgemmStridedBatched, 4);
typed_strided_hook!(cublasDgemmStridedBatched, DgemmStridedBatched, 8);
typed_strided_hook!(cublasHgemmStridedBatched, HgemmStridedBatched, 2);
