//! The once-per-shape check: the whole call and its pieces computed on the device into two
//! copies of `C`, compared byte for byte, each timed.
//!
//! It runs on the application's thread, in the application's call, on its stream and through
//! Baton's own hooks (so it is ordered with what the stream holds back): the stream is
//! synchronized, `C` copied twice into scratch memory aligned as `C` is, the whole call made
//! into one copy between two events, the pieces into the other, both read back. The number of
//! pieces comes from the whole call's device time; the pieces' time says what splitting costs.

// Device pointers are 64-bit integers, sizes `usize` and dimensions `int` (at most 2³¹); Baton
// runs on 64-bit Linux only, where the conversions between them are exact.
#![allow(clippy::cast_possible_truncation)]

use std::ffi::c_void;

use baton_cuda::sys::{CUdeviceptr, CUevent, CUresult, CUstream};
use serde::Serialize;

use super::plan::Split;
use super::{CUBLAS_STATUS_SUCCESS, Call};
use crate::runtime::Runtime;

/// Pieces may take this much more device time than the whole call, in all.
const MAX_COST: f64 = 1.25;

/// What the check of a shape found.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// One piece's worth of device time or less: made whole.
    Short { whole_us: f64 },
    /// Split: the pieces were bit-identical and cost `split_us` against `whole_us`.
    Split {
        #[serde(skip)]
        split: Split,
        pieces: u32,
        whole_us: f64,
        split_us: f64,
    },
    /// The pieces' result differed from the whole call's: never split.
    Differs {
        pieces: u32,
        whole_us: f64,
        split_us: f64,
    },
    /// The pieces cost more than [`MAX_COST`] times the whole call: never split.
    Costly {
        pieces: u32,
        whole_us: f64,
        split_us: f64,
    },
    /// The check could not be made (no memory for the copies, a driver or cuBLAS error): made
    /// whole.
    Unchecked { code: u32 },
}

/// Checks `call`'s shape on `stream` for pieces of about `piece_ns` of device time each.
pub(crate) fn check(rt: &Runtime, call: &Call, stream: CUstream, piece_ns: u64) -> Verdict {
    let mut scratch = Scratch::new(rt, stream);
    match scratch.run(call, stream, piece_ns) {
        Ok(v) => v,
        Err(code) => Verdict::Unchecked { code },
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

    fn run(&mut self, call: &Call, stream: CUstream, piece_ns: u64) -> Result<Verdict, Failed> {
        let g = call.gemm;
        let bytes = g.c_extent();
        // SAFETY: Baton's own hook, on the application's stream.
        ok(unsafe { crate::hooks::cuStreamSynchronize(stream) })?;
        // Copies aligned as C is, so that cuBLAS chooses for them what it chooses for C.
        let offset = (g.c % 256) as CUdeviceptr;
        let whole_c = self.alloc(bytes + 256)? + offset;
        let split_c = self.alloc(bytes + 256)? + offset;
        for dst in [whole_c, split_c] {
            // SAFETY: Baton's hook; `dst` holds `bytes`, and `C` spans `bytes` from `g.c`
            // (the extent the call itself reads and writes).
            ok(unsafe {
                crate::hooks::cuMemcpyDtoDAsync_v2(dst, g.c as CUdeviceptr, bytes, stream)
            })?;
        }
        let [start, mid, end] = [self.event()?, self.event()?, self.event()?];
        self.record(start, stream)?;
        blas_ok(call.run(&g.with_c(whole_c as usize)))?;
        self.record(mid, stream)?;
        self.wait(mid)?;
        let whole_ns = self.elapsed(start, mid)?;
        let whole_us = whole_ns as f64 / 1e3;
        let Some(split) = g.split(whole_ns.div_ceil(piece_ns.max(1)) as u32) else {
            return Ok(Verdict::Short { whole_us });
        };
        let in_pieces = g.with_c(split_c as usize);
        for (s, w) in split.bands(&in_pieces) {
            blas_ok(call.run(&in_pieces.piece(split.axis, s, w)))?;
        }
        self.record(end, stream)?;
        self.wait(end)?;
        let split_us = self.elapsed(mid, end)? as f64 / 1e3;
        let pieces = split.pieces(&g);
        if self.read(whole_c, bytes)? != self.read(split_c, bytes)? {
            return Ok(Verdict::Differs {
                pieces,
                whole_us,
                split_us,
            });
        }
        if split_us > whole_us * MAX_COST {
            return Ok(Verdict::Costly {
                pieces,
                whole_us,
                split_us,
            });
        }
        Ok(Verdict::Split {
            split,
            pieces,
            whole_us,
            split_us,
        })
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
