//! Event entry points: creation, records, queries, waits, elapsed times and cross-stream waits
//! (`cuStreamWaitEvent`, exported with the stream entry points).
//!
//! Querying or waiting for an event last recorded in a capture still in progress is refused
//! (and invalidates the capture), whatever the capture modes; a stream that waits on such an
//! event joins the capture.

use std::ffi::{c_float, c_uint};
use std::sync::Arc;

use baton_cuda_sys::{
    CU_EVENT_BLOCKING_SYNC, CU_EVENT_DISABLE_TIMING, CU_EVENT_INTERPROCESS,
    CU_EVENT_RECORD_EXTERNAL, CUevent, CUresult, CUstream,
};

use crate::capture::Slot;
use crate::capture_api::potentially_unsafe;
use crate::current;
use crate::entry::exports;
use crate::events::Event;
use crate::handle::{Kind, raw_of, to_ptr};
use crate::ops::Op;
use crate::result::{CuResult, put};
use crate::state::initialized;
use crate::stream::DefaultStream;
use crate::sync::lock;

/// The event a handle names.
pub(crate) fn find(event: CUevent) -> CuResult<Arc<Event>> {
    initialized()?
        .events
        .get(raw_of(event))
        .ok_or(CUresult::INVALID_HANDLE)
}

unsafe fn create(out: *mut CUevent, flags: c_uint) -> CuResult<()> {
    let g = initialized()?;
    current::context()?;
    let known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    let interprocess_without_timing =
        flags & CU_EVENT_INTERPROCESS != 0 && flags & CU_EVENT_DISABLE_TIMING == 0;
    if out.is_null() || flags & !known != 0 || interprocess_without_timing {
        return Err(CUresult::INVALID_VALUE);
    }
    let event = Event::new(g.handle(Kind::Event), flags);
    g.events.insert(event.handle.raw, Arc::clone(&event));
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, to_ptr(event.handle.raw)) }
}

fn record(
    event: CUevent,
    raw_stream: CUstream,
    flags: c_uint,
    mode: DefaultStream,
) -> CuResult<()> {
    let event = find(event)?;
    if flags & !CU_EVENT_RECORD_EXTERNAL != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let stream = current::stream(raw_stream, mode)?;
    event.record_on(&stream)
}

/// Refuses to query or wait for an event last recorded in a capture still in progress (and
/// invalidates the capture), whatever the modes.
fn refuse_captured(event: &Event) -> CuResult<()> {
    if event.invalidate_capture() {
        return Err(CUresult::CAPTURED_EVENT);
    }
    Ok(())
}

fn query(event: CUevent) -> CuResult<()> {
    let event = find(event)?;
    refuse_captured(&event)?;
    potentially_unsafe()?;
    match event.latest() {
        Some(done) if !done.is_done() => Err(CUresult::NOT_READY),
        _ => Ok(()),
    }
}

fn synchronize(event: CUevent) -> CuResult<()> {
    let event = find(event)?;
    refuse_captured(&event)?;
    potentially_unsafe()?;
    let Some(done) = event.latest() else {
        return Ok(());
    };
    done.wait();
    match done.stream.ctx.upgrade() {
        Some(ctx) => ctx.sticky(),
        None => Ok(()),
    }
}

unsafe fn elapsed(out: *mut c_float, start: CUevent, end: CUevent) -> CuResult<()> {
    let (start, end) = (find(start)?, find(end)?);
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    if (start.flags | end.flags) & CU_EVENT_DISABLE_TIMING != 0 {
        return Err(CUresult::INVALID_HANDLE);
    }
    let (t0, t1) = (start.time_ns()?, end.time_ns()?);
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let ms = ((t1 as f64 - t0 as f64) / 1e6) as f32;
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, ms) }
}

fn destroy(event: CUevent) -> CuResult<()> {
    let g = initialized()?;
    g.events
        .remove(raw_of(event))
        .map(drop)
        .ok_or(CUresult::INVALID_HANDLE)
}

/// `cuStreamWaitEvent`: a command on `raw_stream` that waits for the event's latest record.
pub(crate) fn stream_wait(
    raw_stream: CUstream,
    event: CUevent,
    flags: c_uint,
    mode: DefaultStream,
) -> CuResult<()> {
    let event = find(event)?;
    if flags & !CU_EVENT_RECORD_EXTERNAL != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let stream = current::stream(raw_stream, mode)?;
    let captured = event.capture();
    if let Some(capture) = captured {
        return match stream.capture() {
            Some(mine) if Arc::ptr_eq(&mine, &capture) => Ok(()),
            Some(mine) => {
                lock(&mine).invalidated = true;
                lock(&capture).invalidated = true;
                Err(CUresult::STREAM_CAPTURE_MERGE)
            }
            None => {
                stream.with_slot(|slot| {
                    *slot = Some(Slot {
                        capture,
                        origin: false,
                    });
                });
                Ok(())
            }
        };
    }
    let latest = event.latest();
    if stream.is_capturing() {
        if latest.is_some() {
            // A dependency on work outside the capture (cross-stream capture is not modelled).
            stream.invalidate_capture();
            return Err(CUresult::STREAM_CAPTURE_ISOLATION);
        }
        return Ok(());
    }
    stream
        .submit(
            Op::EventWait {
                event: event.handle.short,
            },
            latest.into_iter().collect(),
        )
        .map(drop)
}

exports! {
    /// Creates an event.
    fn cuEventCreate(phEvent: *mut CUevent, flags: c_uint): PFN_cuEventCreate => create(phEvent, flags);
    /// Records an event on a stream.
    fn cuEventRecord(hEvent: CUevent, hStream: CUstream): PFN_cuEventRecord
        => record(hEvent, hStream, 0, DefaultStream::Legacy);
    /// Per-thread-default-stream form of `cuEventRecord`.
    fn cuEventRecord_ptsz(hEvent: CUevent, hStream: CUstream): PFN_cuEventRecord
        => record(hEvent, hStream, 0, DefaultStream::PerThread);
    /// Records an event on a stream, with flags.
    fn cuEventRecordWithFlags(hEvent: CUevent, hStream: CUstream, flags: c_uint): PFN_cuEventRecordWithFlags
        => record(hEvent, hStream, flags, DefaultStream::Legacy);
    /// Per-thread-default-stream form of `cuEventRecordWithFlags`.
    fn cuEventRecordWithFlags_ptsz(hEvent: CUevent, hStream: CUstream, flags: c_uint): PFN_cuEventRecordWithFlags
        => record(hEvent, hStream, flags, DefaultStream::PerThread);
    /// `CUDA_SUCCESS` once the latest record executed, `CUDA_ERROR_NOT_READY` before.
    fn cuEventQuery(hEvent: CUevent): PFN_cuEventQuery => query(hEvent);
    /// Waits for the latest record.
    fn cuEventSynchronize(hEvent: CUevent): PFN_cuEventSynchronize => synchronize(hEvent);
    /// Milliseconds between two executed records.
    fn cuEventElapsedTime(ms: *mut c_float, hStart: CUevent, hEnd: CUevent): PFN_cuEventElapsedTime => elapsed(ms, hStart, hEnd);
    /// Milliseconds between two executed records.
    fn cuEventElapsedTime_v2(ms: *mut c_float, hStart: CUevent, hEnd: CUevent): PFN_cuEventElapsedTime_v2
        => elapsed(ms, hStart, hEnd);
    /// Destroys an event (a pending record still completes).
    fn cuEventDestroy(hEvent: CUevent): PFN_cuEventDestroy => destroy(hEvent);
    /// Destroys an event (a pending record still completes).
    fn cuEventDestroy_v2(hEvent: CUevent): PFN_cuEventDestroy_v2 => destroy(hEvent);
}
