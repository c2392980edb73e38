//! cuBLAS GEMMs split into short pieces while a scheduler may hold their stream back.
//!
//! A GEMM is one long kernel (an 8192³ bf16 GEMM holds every SM of an H200 for 1.4 ms): once
//! launched, a more urgent program's work waits for it, however early Baton holds the rest of
//! the job back. While the stream's queue is bounded by device time (some scheduler may
//! suspend and hold it: [`XQueue::may_run_unbounded`] off, [`XQueue::holdable`] on), each
//! GEMM call is made as several calls, each computing a band of the result's columns (or
//! rows) whole, about `BATON_GEMM_PIECE_US` of device time each and none too narrow to fill
//! the device ([`plan`]). Then the budget of work in flight holds a few pieces, and what a
//! hold waits for is one piece.
//!
//! The pieces must give the bits the whole call gives: before a shape is split the first time,
//! both are computed on the device into copies of `C` and compared byte for byte, and a shape
//! whose pieces differ, or cost more than 5 % more device time, is never split
//! ([`check`]). Alone (no scheduler can suspend the stream) nothing is split, checked or added
//! but one `cublasGetStream` per call.
//!
//! cuBLASLt's `cublasLtMatmul` (PyTorch's `Linear` and `addmm` with a bias, XLA) is split the
//! same way, by columns only, where its descriptor allows ([`lt`]).
//!
//! # How calls reach it
//!
//! The hooks are exported under cuBLAS's and cuBLASLt's names. A program linked against
//! `libcublas` or `libcublasLt` binds to them first (the interposer is preloaded); one that
//! looks them up with `dlsym` in a library it opened itself gets them from Baton's `dlsym`
//! ([`substitute`]). The real functions come from that lookup, else from the library already
//! loaded in the process (by its soname, never loading one). cuBLAS makes its own GEMMs through
//! `cublasLtMatmul`, so that hook also receives cuBLAS's calls: one made while this thread is
//! inside a hook (a cuBLAS call Baton makes, whole or a piece, or checks) is cuBLAS's own and
//! goes straight to cuBLASLt.
//!
//! [`XQueue::may_run_unbounded`]: baton_cuda::core::XQueue::may_run_unbounded
//! [`XQueue::holdable`]: baton_cuda::core::XQueue::holdable

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{CStr, c_int, c_void};
use std::sync::atomic::Ordering;
use std::sync::{Mutex, OnceLock};

use baton_cuda::core::locks;
use baton_cuda::sys::CUstream;

use crate::registry::Api;

mod call;
mod check;
mod found;
mod lt;
mod plan;

use call::{Call, Entry, GetMathModeFn};
use check::Verdict;
use found::{CUBLAS_STATUS_SUCCESS, GET_MATH_MODE, Handle, NAMES, REAL, real, type_bytes};
use lt::Lt;
use plan::Gemm;

/// SMs assumed where the driver does not say (an H100's or H200's).
const DEFAULT_SMS: u32 = 132;

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
fn hooks() -> [usize; 9] {
    [
        cublasGemmEx as *const () as usize,
        cublasGemmStridedBatchedEx as *const () as usize,
        cublasSgemm_v2 as *const () as usize,
        cublasDgemm_v2 as *const () as usize,
        cublasHgemm as *const () as usize,
        cublasSgemmStridedBatched as *const () as usize,
        cublasDgemmStridedBatched as *const () as usize,
        cublasHgemmStridedBatched as *const () as usize,
        cublasLtMatmul as *const () as usize,
    ]
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
    extra: [u64; lt::EXTRA],
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
            extra: call.extra,
        }
    }
}

/// What is known of a shape.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Known {
    /// Checked: what was found.
    Checked(Verdict),
    /// Its last `failures` checks were held through every timing; made whole for the next
    /// `wait` calls before it is checked again, each failure doubling the wait (up to
    /// [`MAX_HELD_WAIT`]), so that a check that keeps finding its stream held (beside a busy
    /// service) costs the job a bounded share of its GEMMs, not several times each call.
    Held { failures: u32, wait: u32 },
}

/// The most calls of a shape made whole between two checks that were held.
const MAX_HELD_WAIT: u32 = 256;

impl Known {
    /// After a held check that followed `failures` held ones.
    fn held(failures: u32) -> Known {
        let failures = failures.saturating_add(1);
        Known::Held {
            failures,
            wait: 1u32
                .checked_shl(failures)
                .unwrap_or(u32::MAX)
                .min(MAX_HELD_WAIT),
        }
    }
}

/// The shapes checked so far and what was found.
fn verdicts() -> &'static Mutex<HashMap<Key, Known>> {
    static V: OnceLock<Mutex<HashMap<Key, Known>>> = OnceLock::new();
    V.get_or_init(Mutex::default)
}

/// Whether a shape is to be checked now, or what is known of it: `Ok(verdict)` when checked,
/// `Err(None)` to check it now, `Err(Some(failures))` when its held checks make it wait (one
/// call of the wait counted).
fn known(key: &Key) -> Result<Verdict, Option<u32>> {
    let mut v = locks::lock(verdicts());
    match v.get_mut(key) {
        Some(Known::Checked(verdict)) => Ok(*verdict),
        Some(Known::Held { failures, wait }) if *wait > 0 => {
            *wait -= 1;
            Err(Some(*failures))
        }
        Some(Known::Held { .. }) | None => Err(None),
    }
}

thread_local! {
    /// Whether this thread is inside a hook: cuBLAS makes its GEMMs through cuBLASLt's
    /// `cublasLtMatmul`, which Baton hooks too, and a call cuBLAS makes for the one Baton is
    /// making (or checking) is cuBLAS's own, made as cuBLAS made it.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Leaves the hook when dropped.
struct Inside;

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|i| i.set(false));
    }
}

/// A hooked GEMM: made in pieces where its stream may be held and the check allows, else as
/// called. Only the choice runs under `catch_unwind`: once a piece is made, the call is never
/// made again whole (a piece may have read and written part of C).
fn gemm(call: Call) -> c_int {
    if INSIDE.with(|i| i.replace(true)) {
        return call.run_as_made();
    }
    let _inside = Inside;
    let chosen = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pieces(&call)));
    let split = chosen.unwrap_or_else(|_| {
        tracing::error!(
            call = ?NAMES[call.entry as usize],
            "internal error in Baton; making the call whole"
        );
        None
    });
    let Some((call, split)) = split else {
        return call.run_as_made();
    };
    for (start, width) in split.bands(&call.gemm) {
        let r = call.run(&call.gemm.piece(split.axis, start, width));
        if r != CUBLAS_STATUS_SUCCESS {
            return r;
        }
    }
    CUBLAS_STATUS_SUCCESS
}

/// How to make the call in pieces (counted as split): the call with its operands read, and
/// the split; `None` to make it whole.
fn pieces(call: &Call) -> Option<(Call, plan::Split)> {
    let rt = crate::runtime::get()?;
    let piece_ns = rt.cfg.gemm_piece_us().saturating_mul(1000);
    if !rt.hot.enabled || piece_ns == 0 {
        return None;
    }
    rt.stats.gemm.calls.fetch_add(1, Ordering::Relaxed);
    if call.lt.is_none() && !call.gemm.splittable() {
        return None;
    }
    let stream = call.stream()?;
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
    let call = match call.parsed() {
        Ok(call) => call,
        Err(lt::Unsplit::RuledOut(why)) => {
            rt.stats.gemm.ruled_out(why);
            return None;
        }
        Err(lt::Unsplit::Narrow) => return None,
    };
    if !call.gemm.splittable() {
        return None;
    }
    let call = &call;
    let mut math_mode: c_int = 0;
    if let (None, Some(f)) = (call.lt, real(GET_MATH_MODE)) {
        // SAFETY: cuBLAS's cublasGetMathMode on the application's handle, into a local.
        unsafe { std::mem::transmute::<usize, GetMathModeFn>(f)(call.handle, &mut math_mode) };
    }
    let key = Key::of(call, math_mode);
    let verdict = match known(&key) {
        Ok(v) => v,
        // Waiting after held checks.
        Err(Some(_)) => return None,
        // Never during a capture anywhere in the process: the check synchronizes and
        // allocates, which a capture in the global mode forbids.
        Err(None) if rt.gate.active() => return None,
        Err(None) => {
            let since = std::time::Instant::now();
            let sms = {
                // SAFETY: the device of the stream's context, a device of this driver.
                let n = unsafe {
                    baton_cuda::SmPartition::device_sm_count(rt.driver, entry.ctx.device)
                };
                n.unwrap_or(DEFAULT_SMS)
            };
            let on = check::On {
                stream,
                queue: &entry.xq,
                sms,
            };
            let v = check::check(rt, call, &on, piece_ns);
            let g = &rt.stats.gemm;
            g.checks.fetch_add(1, Ordering::Relaxed);
            let ns = u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX);
            g.check_ns.fetch_add(ns, Ordering::Relaxed);
            tracing::debug!(?key, ?v, "GEMM shape checked");
            let Some(v) = v else {
                // Held through every timing: checked again after a wait.
                g.held_checks.fetch_add(1, Ordering::Relaxed);
                let mut known = locks::lock(verdicts());
                let failures = match known.get(&key) {
                    Some(Known::Held { failures, .. }) => *failures,
                    _ => 0,
                };
                known.insert(key, Known::held(failures));
                return None;
            };
            locks::lock(verdicts()).insert(key, Known::Checked(v));
            g.checked(v.shape(call));
            v
        }
    };
    let Verdict::Split { split, .. } = verdict else {
        return None;
    };
    rt.stats.gemm.split_calls.fetch_add(1, Ordering::Relaxed);
    rt.stats
        .gemm
        .pieces
        .fetch_add(u64::from(split.pieces(&call.gemm)), Ordering::Relaxed);
    Some((*call, split))
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
        extra: [0; lt::EXTRA],
        lt: None,
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
            only_n: false,
            c_in: None,
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

/// Baton's hook for cuBLASLt's `cublasLtMatmul` (see the module documentation and [`lt`]).
///
/// # Safety
/// cuBLASLt's contract for this function.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn cublasLtMatmul(
    handle: Handle,
    desc: *mut c_void,
    alpha: *const c_void,
    a: *const c_void,
    adesc: *mut c_void,
    b: *const c_void,
    bdesc: *mut c_void,
    beta: *const c_void,
    c: *const c_void,
    cdesc: *mut c_void,
    d: *mut c_void,
    ddesc: *mut c_void,
    algo: *const c_void,
    workspace: *mut c_void,
    workspace_bytes: usize,
    stream: CUstream,
) -> c_int {
    let lt = Lt::new(
        (handle, alpha, beta),
        desc,
        [adesc, bdesc, cdesc, ddesc],
        [a as usize, b as usize, c as usize, d as usize],
        algo,
        workspace,
        workspace_bytes,
        stream,
    );
    gemm(Call {
        entry: Entry::LtMatmul,
        handle,
        alpha,
        beta,
        types: [0; 5],
        extra: [0; lt::EXTRA],
        lt: Some(lt),
        gemm: Gemm::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(handle: usize) -> Key {
        Key {
            entry: Entry::GemmEx,
            handle,
            math_mode: 0,
            types: [0; 5],
            shape: [0; 12],
            alignment: [0; 3],
            extra: [0; lt::EXTRA],
        }
    }

    #[test]
    fn a_shape_whose_checks_are_held_waits_twice_as_long_after_each() {
        let k = key(0x5eed_0001);
        assert_eq!(known(&k).err(), Some(None), "never checked: check now");
        // Each held check doubles the calls made whole before the next, up to the cap.
        let mut failures = 0;
        for expect_wait in [2, 4, 8, 16, 32, 64, 128, 256, 256, 256] {
            let next = Known::held(failures);
            let Known::Held { failures: f, wait } = next else {
                panic!("{next:?}")
            };
            assert_eq!(wait, expect_wait);
            locks::lock(verdicts()).insert(k, next);
            for _ in 0..wait {
                assert_eq!(known(&k).err(), Some(Some(f)), "waiting");
            }
            assert_eq!(
                known(&k).err(),
                Some(None),
                "checked again after {wait} calls"
            );
            failures = f;
        }
        assert_eq!(Known::held(u32::MAX - 1), Known::held(u32::MAX));
    }

    #[test]
    fn a_checked_shape_keeps_its_verdict() {
        let k = key(0x5eed_0002);
        let v = Verdict::Short { whole_us: 42.0 };
        locks::lock(verdicts()).insert(k, Known::Checked(v));
        assert_eq!(known(&k), Ok(v));
        assert_eq!(known(&k), Ok(v));
    }
}
