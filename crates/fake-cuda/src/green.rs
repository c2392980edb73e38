//! Green contexts: a number of the device's SMs over the primary context.
//!
//! A green context's stream is an ordinary stream of the primary context that remembers its SM
//! count: the log marks what ran there (`sms`). Simplification: only SM resources exist, and
//! the count confines nothing on the host. The entry points are in `green_api.rs`.

use std::sync::Arc;

use crate::context::Context;
use crate::handle::Handle;

/// A green context.
pub(crate) struct Green {
    pub handle: Handle,
    pub sms: u32,
    /// The primary context it retains.
    pub ctx: Arc<Context>,
}
