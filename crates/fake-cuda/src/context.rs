//! Contexts and the primary context.
//!
//! A context owns its streams' shared state ([`CtxStreams`]: its legacy default stream, the
//! lists of its other streams, whose lock doubles as the context's submission order lock, and
//! its sticky error; see [`crate::stream`]). Errors that make a real context unusable (an
//! illegal address in a kernel) are kept as the context's sticky error and returned by
//! synchronizing calls. The calling thread's current context is in `current.rs`; the entry
//! points are in `context_api.rs`.

use std::sync::Arc;

use baton_cuda_sys::{CUdevice, CUresult};

use crate::handle::Handle;
use crate::result::CuResult;
use crate::stream::CtxStreams;
use crate::sync::lock;

/// A context on one device.
pub(crate) struct Context {
    pub handle: Handle,
    pub flags: u32,
    /// Its device's ordinal in this process.
    pub device: CUdevice,
    pub streams: Arc<CtxStreams>,
}

impl Context {
    /// The context `handle` with creation flags `flags` on the device of ordinal `device`
    /// (physical device `physical`), whose legacy stream is `legacy`.
    pub fn new(
        handle: Handle,
        legacy: Handle,
        flags: u32,
        device: CUdevice,
        physical: u32,
    ) -> Arc<Context> {
        Arc::new(Context {
            handle,
            flags,
            device,
            streams: CtxStreams::new(handle, legacy, physical),
        })
    }

    /// Waits for all work of the context; fails while any of its streams captures.
    pub fn synchronize(&self) -> CuResult<()> {
        {
            let streams = lock(&self.streams.order);
            for stream in streams.blocking.iter().chain(&streams.nonblocking) {
                // Whatever the capture's mode (measured on an H100:
                // scripts/gpu/transparency/capture_probe.cu).
                if stream.is_capturing() {
                    stream.invalidate_capture();
                    return Err(CUresult::STREAM_CAPTURE_UNSUPPORTED);
                }
            }
        }
        for dep in self.streams.all_pending() {
            dep.wait();
        }
        self.streams.sticky()
    }
}

/// The primary context of a device and its reference count.
#[derive(Default)]
pub(crate) struct Primary {
    /// Made on first retain; never destroyed.
    pub ctx: Option<Arc<Context>>,
    pub refs: u32,
}
