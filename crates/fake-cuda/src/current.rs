//! What the calling thread sees: its context stack (the current context), its per-thread
//! default streams and its stream-capture mode, and so the stream a handle names for it.
//!
//! The stack is what `cuCtxPushCurrent`, `cuCtxPopCurrent` and `cuCtxSetCurrent` manipulate.
//! Thread-local state carries the pid of the process it belongs to: inherited across `fork()`,
//! it is reset, never dropped (the parent's objects are not the child's to drop).

use std::cell::RefCell;
use std::sync::Arc;

use baton_cuda_sys::{
    CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, CUresult, CUstream, CUstreamCaptureMode,
};

use crate::context::Context;
use crate::handle::{Kind, raw_of};
use crate::process::current_pid;
use crate::result::CuResult;
use crate::state::initialized;
use crate::stream::{DefaultStream, Stream, StreamKind};

/// What a thread knows: its context stack and its per-thread default streams, for one pid.
#[derive(Default)]
pub(crate) struct ThreadState {
    pid: u32,
    /// The raw handles of the contexts pushed, the current one last.
    pub stack: Vec<u64>,
    /// Per-thread default streams by raw context handle.
    pub per_thread: Vec<(u64, Arc<Stream>)>,
    /// `cuThreadExchangeStreamCaptureMode`'s mode (0, global, by default).
    pub capture_mode: CUstreamCaptureMode,
}

thread_local! {
    static THREAD: RefCell<ThreadState> = RefCell::new(ThreadState::default());
}

/// Runs `f` on this thread's state, reset if it was inherited from a parent process.
pub(crate) fn with_thread<R>(f: impl FnOnce(&mut ThreadState) -> R) -> CuResult<R> {
    THREAD
        .try_with(|cell| {
            let mut state = cell.borrow_mut();
            let pid = current_pid();
            if state.pid != pid {
                // Inherited across fork: the parent's objects are not ours to drop.
                std::mem::forget(std::mem::replace(
                    &mut *state,
                    ThreadState {
                        pid,
                        ..ThreadState::default()
                    },
                ));
            }
            f(&mut state)
        })
        .map_err(|_| CUresult::DEINITIALIZED)
}

/// The calling thread's stream-capture interaction mode.
pub(crate) fn capture_mode() -> CuResult<CUstreamCaptureMode> {
    with_thread(|t| t.capture_mode)
}

/// The calling thread's current context.
pub(crate) fn context() -> CuResult<Arc<Context>> {
    let g = initialized()?;
    let top = with_thread(|t| t.stack.last().copied())?.ok_or(CUresult::INVALID_CONTEXT)?;
    g.contexts.get(top).ok_or(CUresult::INVALID_CONTEXT)
}

/// The calling thread's per-thread default stream in `ctx`, created on first use.
pub(crate) fn per_thread_stream(ctx: &Arc<Context>) -> CuResult<Arc<Stream>> {
    let g = initialized()?;
    with_thread(|t| {
        if let Some((_, stream)) = t.per_thread.iter().find(|(raw, _)| *raw == ctx.handle.raw) {
            return Arc::clone(stream);
        }
        let stream = Stream::new(
            g.handle(Kind::Stream),
            StreamKind::PerThread,
            0,
            0,
            Arc::downgrade(&ctx.streams),
            None,
        );
        ctx.streams.add_stream(Arc::clone(&stream));
        t.per_thread.push((ctx.handle.raw, Arc::clone(&stream)));
        stream
    })
}

/// The stream a handle names, for a symbol whose NULL stream means `mode`.
pub(crate) fn stream(raw: CUstream, mode: DefaultStream) -> CuResult<Arc<Stream>> {
    let g = initialized()?;
    let per_thread =
        raw == CU_STREAM_PER_THREAD || (raw.is_null() && mode == DefaultStream::PerThread);
    if per_thread {
        return per_thread_stream(&context()?);
    }
    if raw.is_null() || raw == CU_STREAM_LEGACY {
        return Ok(Arc::clone(&context()?.streams.legacy));
    }
    g.streams.get(raw_of(raw)).ok_or(CUresult::INVALID_HANDLE)
}
