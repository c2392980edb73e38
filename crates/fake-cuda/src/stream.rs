//! Streams: FIFO command queues, each drained by its own worker thread, and what the streams of
//! one context share ([`CtxStreams`]: their lists, the legacy stream and the sticky error,
//! owned by the context).
//!
//! # Ordering
//!
//! A command is [`Command`]: an [`Op`] plus the dependencies it waits for before executing,
//! each a [`Dep`] ("stream S has completed at least N commands"). A worker takes its stream's
//! commands in submission order, waits for each one's dependencies, executes it, logs it, and
//! only then counts it as completed, so completion implies the log line exists.
//!
//! CUDA's legacy default stream semantics become dependencies at submission time, under the
//! context's `order` lock (so no other legacy-relevant submission interleaves):
//! - a command on the **legacy** stream depends on everything submitted so far to every
//!   blocking stream of the context (explicit blocking streams and per-thread default streams);
//! - a command on a **blocking** stream depends on everything submitted so far to the legacy
//!   stream;
//! - **non-blocking** streams get neither.
//!
//! `cuStreamWaitEvent` adds a dependency on the event's latest record. Every dependency points
//! to a command submitted earlier, so the dependency graph has no cycle and draining never
//! deadlocks (a `cuStreamWaitValue32` nobody satisfies blocks, as on a GPU).
//!
//! # Locks
//!
//! Order: an event's state, then a context's `order`, then a stream's `state`; a worker holds
//! no lock while it waits for dependencies or executes.
//!
//! Which stream a handle names for the calling thread (the NULL handle, the per-thread default
//! stream) is decided in `current.rs`.

use std::collections::VecDeque;
use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Instant;

use baton_cuda_sys::{CU_STREAM_LEGACY, CU_STREAM_PER_THREAD, CUresult, CUstream};

use crate::capture::{Shared, Slot};
use crate::handle::{Handle, to_ptr};
use crate::machine::machine;
use crate::ops::{self, ExecContext, Op, StreamInfo};
use crate::result::CuResult;
use crate::sync::{lock, wait, wait_until};

/// The greatest (most urgent) stream priority; 0 is the least.
pub(crate) const GREATEST_PRIORITY: c_int = -5;

/// Which default stream the NULL handle means for the symbol that was called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DefaultStream {
    /// The plain symbol (`cuLaunchKernel`): NULL is the legacy default stream.
    Legacy,
    /// The `_ptsz`/`_ptds` symbol: NULL is the calling thread's per-thread default stream.
    PerThread,
}

/// How a stream synchronizes with the legacy default stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// The legacy default stream of a context.
    Legacy,
    /// A per-thread default stream (blocking).
    PerThread,
    /// An explicit stream created without `CU_STREAM_NON_BLOCKING`.
    Blocking,
    /// An explicit stream created with `CU_STREAM_NON_BLOCKING`.
    NonBlocking,
}

/// "`stream` has completed at least `count` commands."
#[derive(Clone)]
pub(crate) struct Dep {
    pub stream: Arc<Stream>,
    pub count: u64,
}

impl Dep {
    pub fn is_done(&self) -> bool {
        lock(&self.stream.state).completed >= self.count
    }

    pub fn wait(&self) {
        let mut state = lock(&self.stream.state);
        while state.completed < self.count {
            state = wait(&self.stream.changed, state);
        }
    }

    /// Waits until done or `deadline`; whether it is done.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let mut state = lock(&self.stream.state);
        while state.completed < self.count {
            if Instant::now() >= deadline {
                return false;
            }
            state = wait_until(&self.stream.changed, state, deadline);
        }
        true
    }
}

/// One queued command.
struct Command {
    /// Its index on the stream (0-based submission order).
    index: u64,
    deps: Vec<Dep>,
    op: Op,
}

/// What became of a submitted operation.
pub(crate) enum Submitted {
    /// Queued; the dependency is its completion.
    Queued(Dep),
    /// Recorded into the stream's capture graph instead of executed.
    Captured,
}

impl Submitted {
    /// Blocks until a queued command has executed.
    pub fn wait(&self) {
        if let Submitted::Queued(done) = self {
            done.wait();
        }
    }
}

struct StreamState {
    queue: VecDeque<Command>,
    submitted: u64,
    completed: u64,
    worker: bool,
    closed: bool,
    /// The capture the stream records into: one it began, or one it joined.
    capture: Option<Slot>,
}

/// A stream of a context.
pub(crate) struct Stream {
    pub handle: Handle,
    pub kind: StreamKind,
    pub flags: u32,
    pub priority: i32,
    /// What the streams of its context share; gone once the context is destroyed.
    pub ctx: Weak<CtxStreams>,
    /// For a green context's stream: the SMs its kernels run on.
    pub sms: Option<u32>,
    state: Mutex<StreamState>,
    changed: Condvar,
}

impl Stream {
    pub fn new(
        handle: Handle,
        kind: StreamKind,
        flags: u32,
        priority: i32,
        ctx: Weak<CtxStreams>,
        sms: Option<u32>,
    ) -> Arc<Stream> {
        let state = StreamState {
            queue: VecDeque::new(),
            submitted: 0,
            completed: 0,
            worker: false,
            closed: false,
            capture: None,
        };
        Arc::new(Stream {
            handle,
            kind,
            flags,
            priority,
            ctx,
            sms,
            state: Mutex::new(state),
            changed: Condvar::new(),
        })
    }

    /// The stream as the log describes it.
    fn info(&self) -> StreamInfo {
        StreamInfo {
            short: self.handle.short,
            sms: self.sms,
            legacy: self.kind == StreamKind::Legacy,
            ptds: self.kind == StreamKind::PerThread,
        }
    }

    /// Whether the stream synchronizes with the legacy stream as a blocking stream.
    pub fn is_blocking(&self) -> bool {
        matches!(self.kind, StreamKind::Blocking | StreamKind::PerThread)
    }

    /// The completion of everything submitted so far, if anything is outstanding.
    pub fn pending(self: &Arc<Self>) -> Option<Dep> {
        let state = lock(&self.state);
        (state.completed < state.submitted).then(|| Dep {
            stream: Arc::clone(self),
            count: state.submitted,
        })
    }

    /// What synchronizing this stream waits for: its own work and, for the legacy stream,
    /// everything submitted so far to the context's blocking streams.
    pub fn sync_deps(self: &Arc<Self>) -> CuResult<Vec<Dep>> {
        let ctx = self.ctx.upgrade().ok_or(CUresult::INVALID_CONTEXT)?;
        let mut deps: Vec<Dep> = self.pending().into_iter().collect();
        if self.kind == StreamKind::Legacy {
            deps.extend(lock(&ctx.order).blocking.iter().filter_map(Stream::pending));
        }
        Ok(deps)
    }

    /// Queues `op` behind everything submitted before it (see the module documentation), or
    /// records it if the stream is capturing.
    pub fn submit(self: &Arc<Self>, op: Op, mut deps: Vec<Dep>) -> CuResult<Submitted> {
        let ctx = self.ctx.upgrade().ok_or(CUresult::INVALID_CONTEXT)?;
        let order = (self.kind != StreamKind::NonBlocking).then(|| lock(&ctx.order));
        if let Some(order) = &order {
            if self.kind == StreamKind::Legacy {
                for stream in &order.blocking {
                    if stream.is_capturing() {
                        stream.invalidate_capture();
                        return Err(CUresult::STREAM_CAPTURE_IMPLICIT);
                    }
                    deps.extend(stream.pending());
                }
            } else {
                deps.extend(ctx.legacy.pending());
            }
        }
        let mut state = lock(&self.state);
        if let Some(capture) = Self::active(&mut state) {
            lock(&capture).record(op)?;
            return Ok(Submitted::Captured);
        }
        if state.closed {
            return Err(CUresult::INVALID_HANDLE);
        }
        if !state.worker {
            let stream = Arc::clone(self);
            std::thread::Builder::new()
                .name(format!("fake-cuda-s{}", self.handle.short))
                .spawn(move || run(&stream))
                .map_err(|_| CUresult::OUT_OF_MEMORY)?;
            state.worker = true;
        }
        let index = state.submitted;
        state.queue.push_back(Command { index, deps, op });
        state.submitted += 1;
        drop(state);
        drop(order);
        self.changed.notify_all();
        Ok(Submitted::Queued(Dep {
            stream: Arc::clone(self),
            count: index + 1,
        }))
    }

    /// Lets the worker exit once the queue is drained; later submissions fail.
    pub fn close(&self) {
        lock(&self.state).closed = true;
        self.changed.notify_all();
    }

    /// The capture in `state`'s slot, if it has not ended (a stream that joined a capture
    /// leaves it when the capture ends).
    fn active(state: &mut StreamState) -> Option<Shared> {
        let slot = state.capture.as_ref()?;
        if lock(&slot.capture).ended {
            state.capture = None;
            return None;
        }
        Some(Arc::clone(&slot.capture))
    }

    /// The capture the stream records into, if any.
    pub fn capture(&self) -> Option<Shared> {
        Self::active(&mut lock(&self.state))
    }

    pub fn is_capturing(&self) -> bool {
        self.capture().is_some()
    }

    /// Marks an active capture as invalidated (a prohibited call happened during it).
    pub fn invalidate_capture(&self) {
        if let Some(capture) = self.capture() {
            lock(&capture).invalidated = true;
        }
    }

    /// Runs `f` on the stream's capture slot (after dropping an ended capture from it).
    pub fn with_slot<R>(&self, f: impl FnOnce(&mut Option<Slot>) -> R) -> R {
        let mut state = lock(&self.state);
        Self::active(&mut state);
        f(&mut state.capture)
    }
}

/// The explicit and per-thread streams of a context.
#[derive(Default)]
pub(crate) struct StreamLists {
    /// Explicit blocking streams and per-thread default streams.
    pub blocking: Vec<Arc<Stream>>,
    pub nonblocking: Vec<Arc<Stream>>,
}

/// What the streams of one context share: its handle, its legacy default stream, the lists of
/// its other streams (whose mutex is the context's submission order lock) and its sticky error.
///
/// The context owns it; each stream points back to it weakly, as to its context.
pub(crate) struct CtxStreams {
    /// The context's handle.
    pub handle: Handle,
    /// The physical device the context is on.
    pub device: u32,
    pub legacy: Arc<Stream>,
    pub order: Mutex<StreamLists>,
    sticky: Mutex<Option<CUresult>>,
}

impl CtxStreams {
    /// The streams of the context `handle` on physical device `device`: its legacy stream
    /// (handle `legacy`) so far.
    pub fn new(handle: Handle, legacy: Handle, device: u32) -> Arc<CtxStreams> {
        Arc::new_cyclic(|weak| CtxStreams {
            handle,
            device,
            legacy: Stream::new(legacy, StreamKind::Legacy, 0, 0, weak.clone(), None),
            order: Mutex::new(StreamLists::default()),
            sticky: Mutex::new(None),
        })
    }

    /// Everything outstanding on every stream of the context.
    pub fn all_pending(&self) -> Vec<Dep> {
        let streams = lock(&self.order);
        let all = streams
            .blocking
            .iter()
            .chain(&streams.nonblocking)
            .chain(std::iter::once(&self.legacy));
        all.filter_map(Stream::pending).collect()
    }

    /// Records an error that makes the context unusable.
    pub fn set_sticky(&self, code: CUresult) {
        lock(&self.sticky).get_or_insert(code);
    }

    /// The sticky error, as the result of a synchronizing call.
    pub fn sticky(&self) -> CuResult<()> {
        lock(&self.sticky).map_or(Ok(()), Err)
    }

    /// Adds an explicit or per-thread stream to the context.
    pub fn add_stream(&self, stream: Arc<Stream>) {
        let mut streams = lock(&self.order);
        if stream.is_blocking() {
            streams.blocking.push(stream)
        } else {
            streams.nonblocking.push(stream)
        }
    }

    /// Removes a stream from the context.
    pub fn remove_stream(&self, stream: &Stream) {
        let mut streams = lock(&self.order);
        streams.blocking.retain(|s| s.handle != stream.handle);
        streams.nonblocking.retain(|s| s.handle != stream.handle);
    }
}

impl ExecContext for CtxStreams {
    fn short(&self) -> u64 {
        self.handle.short
    }

    fn device(&self) -> u32 {
        self.device
    }

    fn sticky(&self) -> CuResult<()> {
        CtxStreams::sticky(self)
    }

    fn set_sticky(&self, code: CUresult) {
        CtxStreams::set_sticky(self, code);
    }
}

/// The worker loop of `stream`.
fn run(stream: &Arc<Stream>) {
    loop {
        let command = {
            let mut state = lock(&stream.state);
            loop {
                if let Some(command) = state.queue.pop_front() {
                    break command;
                }
                if state.closed {
                    return;
                }
                state = wait(&stream.changed, state);
            }
        };
        for dep in &command.deps {
            dep.wait();
        }
        ops::run_command(&command.op, &stream.ctx, stream.info(), command.index);
        lock(&stream.state).completed += 1;
        stream.changed.notify_all();
        machine().completed.fetch_add(1, Ordering::Release);
    }
}

/// The handle value to hand back for `stream`.
pub(crate) fn handle_of(stream: &Stream) -> CUstream {
    match stream.kind {
        StreamKind::Legacy => CU_STREAM_LEGACY,
        StreamKind::PerThread => CU_STREAM_PER_THREAD,
        _ => to_ptr(stream.handle.raw),
    }
}
