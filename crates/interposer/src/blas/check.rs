//! The once-per-shape check: the whole call and its pieces computed on the device into two
//! copies of `C`, compared byte for byte, each timed.
//!
//! It runs on the application's thread, in the application's call, on its stream and through
//! Baton's own hooks (so it is ordered with what the stream holds back): the stream is
//! synchronized, `C` copied into scratch memory aligned as `C` is, the whole call made there
//! once to warm it up (a first call loads its kernels) and once between two events, then the
//! same for the pieces into a second copy, then each side again in turn, and both results read
//! back. A timing during which the stream was held counts the hold, so it is made again (and
//! the check left for a later call if every try was held). Another program's kernels beside
//! the stream (MPS, one process) slow whichever side runs with them, so each side counts its
//! fastest of [`ROUNDS`] timings, taken in turn with the other side's. The number of pieces
//! comes from the whole call's first timing, none narrower than two waves of tiles on the
//! device's SMs; the pieces' time says what splitting costs.

// Device pointers are 64-bit integers, sizes `usize` and dimensions `int` (at most 2³¹); Baton
// runs on 64-bit Linux only, where the conversions between them are exact.
#![allow(clippy::cast_possible_truncation)]

use std::ffi::c_void;

use baton_cuda::sys::{CUdeviceptr, CUevent, CUresult, CUstream};

use baton_cuda::CudaHwQueue;
use baton_cuda::core::XQueue;

use super::call::Call;
use super::found::CUBLAS_STATUS_SUCCESS;
use super::plan::{Gemm, Split};
use crate::report::GemmShape;
use crate::runtime::Runtime;

/// Pieces may take this much more device time than the whole call, in all. A job whose
/// stream may be held is split even while the service beside it is idle, where it should
/// keep 97 % of its speed; on an H200 every shape that split measured at most 4 % over the
/// whole (8192³ bf16: 2–3.5 %), every shape refused 32 % or more.
const MAX_COST: f64 = 1.05;

/// Timings made before the check gives up for now because the stream was held in each.
const TRIES: u32 = 3;

/// Timings of each side, taken in turn; the fastest of each is compared.
const ROUNDS: u32 = 3;

/// A piece gives the device at least this many rounds of tiles ([`Gemm::min_width`]).
const WAVES: u32 = 2;
/// The side of the tile that rounds count (cuBLAS's tiles are 64 to 256 a side).
const TILE: u32 = 128;

/// What a check measured of a split it tried: its pieces and the device time whole and in
/// pieces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Tried {
    pub(crate) pieces: u32,
    pub(crate) whole_us: f64,
    pub(crate) split_us: f64,
}

/// What the check of a shape found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Verdict {
    /// One piece's worth of device time or less: made whole.
    Short { whole_us: f64 },
    /// Split: the pieces were bit-identical and cost no more than [`MAX_COST`] times the whole.
    Split { split: Split, tried: Tried },
    /// The pieces' result differed from the whole call's: never split.
    Differs(Tried),
    /// The pieces cost more than [`MAX_COST`] times the whole call: never split.
    Costly(Tried),
    /// The check could not be made (no memory for the copies, a driver or cuBLAS error): made
    /// whole.
    Unchecked { code: u32 },
}

impl Verdict {
    /// The report's record of `call`'s shape and this verdict.
    pub(crate) fn shape(&self, call: &Call) -> GemmShape {
        let short = |whole_us| Tried {
            pieces: 1,
            whole_us,
            split_us: 0.0,
        };
        let none = Tried {
            pieces: 0,
            whole_us: 0.0,
            split_us: 0.0,
        };
        let (verdict, t, code) = match *self {
            Verdict::Short { whole_us } => ("short", short(whole_us), 0),
            Verdict::Split { tried, .. } => ("split", tried, 0),
            Verdict::Differs(tried) => ("differs", tried, 0),
            Verdict::Costly(tried) => ("costly", tried, 0),
            Verdict::Unchecked { code } => ("unchecked", none, code),
        };
        let g = &call.gemm;
        GemmShape {
            entry: call.entry.name(),
            m: g.m,
            n: g.n,
            k: g.k,
            batch: g.batch,
            types: call.types,
            verdict,
            pieces: t.pieces,
            whole_us: t.whole_us,
            split_us: t.split_us,
            code,
        }
    }
}

/// Where the check runs: the application's stream, its queue, the device's SMs.
pub(crate) struct On<'a> {
    pub(crate) stream: CUstream,
    pub(crate) queue: &'a XQueue<CudaHwQueue>,
    pub(crate) sms: u32,
}

/// Checks `call`'s shape on `on` for pieces of about `piece_ns` of device time each; `None`
/// if the stream was held through every timing (check again at a later call).
pub(crate) fn check(rt: &Runtime, call: &Call, on: &On<'_>, piece_ns: u64) -> Option<Verdict> {
    let mut scratch = Scratch::new(rt, on.stream);
    match scratch.run(call, on, piece_ns) {
        Ok(v) => v,
        Err(code) => Some(Verdict::Unchecked { code }),
    }
}

/// The check's device memory and events, freed when it ends.
struct Scratch<'a> {
    rt: &'a Runtime,
    stream: CUstream,
    memory: Vec<CUdeviceptr>,
    events: Vec<CUevent>,
}

/// A driver error's code, or a cuBLAS status above 10 000.
type Failed = u32;

fn ok(r: CUresult) -> Result<(), Failed> {
    if r == CUresult::SUCCESS {
        Ok(())
    } else {
        Err(r.0)
    }
}

fn blas_ok(status: std::ffi::c_int) -> Result<(), Failed> {
    if status == CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(10_000 + status.unsigned_abs())
    }
}

impl<'a> Scratch<'a> {
    fn new(rt: &'a Runtime, stream: CUstream) -> Scratch<'a> {
        Scratch {
            rt,
            stream,
            memory: Vec::new(),
            events: Vec::new(),
        }
    }

    fn run(&mut self, call: &Call, on: &On<'_>, piece_ns: u64) -> Result<Option<Verdict>, Failed> {
        let g = call.gemm;
        let bytes = g.c_extent();
        // SAFETY: Baton's own hook, on the application's stream.
        ok(unsafe { crate::hooks::cuStreamSynchronize(on.stream) })?;
        // Copies aligned as C is, so that cuBLAS chooses for them what it chooses for C.
        let offset = (g.c % 256) as CUdeviceptr;
        let whole_c = self.alloc(bytes + 256)? + offset;
        let split_c = self.alloc(bytes + 256)? + offset;
        let whole = [g.with_c(whole_c as usize)];
        let Some(mut whole_ns) = self.timed(call, on, whole_c, &whole, true)? else {
            return Ok(None);
        };
        let min_width = g.min_width(on.sms, WAVES, TILE);
        let Some(split) = g.split(whole_ns.div_ceil(piece_ns.max(1)) as u32, min_width) else {
            return Ok(Some(Verdict::Short {
                whole_us: whole_ns as f64 / 1e3,
            }));
        };
        let in_pieces = g.with_c(split_c as usize);
        let pieces: Vec<Gemm> = split
            .bands(&in_pieces)
            .map(|(s, w)| in_pieces.piece(split.axis, s, w))
            .collect();
        let Some(mut split_ns) = self.timed(call, on, split_c, &pieces, true)? else {
            return Ok(None);
        };
        for _ in 1..ROUNDS {
            if let Some(ns) = self.timed(call, on, whole_c, &whole, false)? {
                whole_ns = whole_ns.min(ns);
            }
            if let Some(ns) = self.timed(call, on, split_c, &pieces, false)? {
                split_ns = split_ns.min(ns);
            }
        }
        let whole_us = whole_ns as f64 / 1e3;
        let tried = Tried {
            pieces: split.pieces(&g),
            whole_us,
            split_us: split_ns as f64 / 1e3,
        };
        Ok(Some(
            if self.read(whole_c, bytes)? != self.read(split_c, bytes)? {
                Verdict::Differs(tried)
            } else if tried.split_us > whole_us * MAX_COST {
                Verdict::Costly(tried)
            } else {
                Verdict::Split { split, tried }
            },
        ))
    }

    /// The device time of `calls` (the whole call or its pieces, writing into `into`), warmed
    /// up first when `warm_up`, each time made on a fresh copy of `C`, so that `into` ends
    /// holding their result; `None` if the stream was held in every try.
    fn timed(
        &mut self,
        call: &Call,
        on: &On<'_>,
        into: CUdeviceptr,
        calls: &[Gemm],
        warm_up: bool,
    ) -> Result<Option<u64>, Failed> {
        let g = call.gemm;
        let (start, end) = (self.event()?, self.event()?);
        for attempt in 0..=TRIES {
            // SAFETY: Baton's hook; `into` holds C's extent, and `C` spans it from `g.c` (the
            // extent the call itself reads and writes).
            ok(unsafe {
                crate::hooks::cuMemcpyDtoDAsync_v2(
                    into,
                    g.c as CUdeviceptr,
                    g.c_extent(),
                    on.stream,
                )
            })?;
            let held_before = on.queue.inflight_at_suspend().suspensions;
            let suspended = on.queue.status().suspended;
            self.record(start, on.stream)?;
            for piece in calls {
                blas_ok(call.run(piece))?;
            }
            self.record(end, on.stream)?;
            self.wait(end)?;
            let held = suspended || on.queue.inflight_at_suspend().suspensions != held_before;
            // A first round warms up: its kernels are loaded as they are first launched.
            if (attempt > 0 || !warm_up) && !held {
                return Ok(Some(self.elapsed(start, end)?));
            }
        }
        Ok(None)
    }

    fn alloc(&mut self, bytes: usize) -> Result<CUdeviceptr, Failed> {
        let f = self.rt.driver.cuMemAlloc_v2.ok_or(CUresult::NOT_FOUND.0)?;
        let mut p: CUdeviceptr = 0;
        // SAFETY: the driver's allocation into a local.
        ok(unsafe { f(&mut p, bytes) })?;
        self.memory.push(p);
        Ok(p)
    }

    fn event(&mut self) -> Result<CUevent, Failed> {
        let f = self.rt.driver.cuEventCreate.ok_or(CUresult::NOT_FOUND.0)?;
        let mut e: CUevent = std::ptr::null_mut();
        // SAFETY: the driver's event creation (default flags: timed) into a local.
        ok(unsafe { f(&mut e, 0) })?;
        self.events.push(e);
        Ok(e)
    }

    fn record(&self, e: CUevent, stream: CUstream) -> Result<(), Failed> {
        // SAFETY: Baton's hook, with an event this check created, on the application's stream.
        ok(unsafe { crate::hooks::cuEventRecord(e, stream) })
    }

    fn wait(&self, e: CUevent) -> Result<(), Failed> {
        // SAFETY: Baton's hook, with an event this check created and recorded.
        ok(unsafe { crate::hooks::cuEventSynchronize(e) })
    }

    fn elapsed(&self, from: CUevent, to: CUevent) -> Result<u64, Failed> {
        let f = self
            .rt
            .driver
            .cuEventElapsedTime
            .ok_or(CUresult::NOT_FOUND.0)?;
        let mut ms: f32 = 0.0;
        // SAFETY: two completed events of this check, into a local.
        ok(unsafe { f(&mut ms, from, to) })?;
        Ok((f64::from(ms) * 1e6).max(0.0) as u64)
    }

    fn read(&self, from: CUdeviceptr, bytes: usize) -> Result<Vec<u8>, Failed> {
        let f = self
            .rt
            .driver
            .cuMemcpyDtoH_v2
            .ok_or(CUresult::NOT_FOUND.0)?;
        let mut host = vec![0u8; bytes];
        // SAFETY: `host` holds `bytes`; `from` is this check's memory, whose work completed.
        ok(unsafe { f(host.as_mut_ptr().cast::<c_void>(), from, bytes) })?;
        Ok(host)
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        if !self.memory.is_empty() {
            // A check that failed part-way may have work on its copies still held back or
            // running: it ends before they are freed.
            // SAFETY: Baton's hook, on the application's stream.
            let _ = unsafe { crate::hooks::cuStreamSynchronize(self.stream) };
        }
        if let Some(destroy) = self.rt.driver.cuEventDestroy_v2 {
            for e in self.events.drain(..) {
                // SAFETY: an event this check created; nothing waits for it any more.
                unsafe { destroy(e) };
            }
        }
        if let Some(free) = self.rt.driver.cuMemFree_v2 {
            for p in self.memory.drain(..) {
                // SAFETY: memory this check allocated, whose work has ended (above).
                unsafe { free(p) };
            }
        }
    }
}
