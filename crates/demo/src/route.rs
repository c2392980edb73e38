//! How a client reaches the simulated device: straight to its stream, or through an XQueue.

use std::sync::Arc;

use baton_core::{HwQueue, XQueue, XQueueError};
use baton_sim::{SimCommand, SimQueue, StreamId};

/// A client's way to the device.
pub enum Route {
    /// Straight to the stream (native).
    Raw(SimQueue),
    /// Through an XQueue a scheduler may suspend.
    Scheduled(Arc<XQueue<SimQueue>>),
}

impl Route {
    /// Submits `cmd`.
    pub fn submit(&self, cmd: SimCommand) -> Result<(), XQueueError> {
        match self {
            Route::Raw(hw) => hw.launch(cmd).map_err(XQueueError::from),
            Route::Scheduled(q) => q.submit(cmd).map(|_| ()),
        }
    }

    /// Lets an externally driven XQueue launch and learn completions.
    pub fn poll(&self) {
        if let Route::Scheduled(q) = self {
            q.poll();
        }
    }

    /// The stream underneath.
    pub fn stream(&self) -> StreamId {
        match self {
            Route::Raw(hw) => hw.stream(),
            Route::Scheduled(q) => q.hw().stream(),
        }
    }

    /// The XQueue, if scheduled.
    pub fn queue(&self) -> Option<&Arc<XQueue<SimQueue>>> {
        match self {
            Route::Raw(_) => None,
            Route::Scheduled(q) => Some(q),
        }
    }
}
