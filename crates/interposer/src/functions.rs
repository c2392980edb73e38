//! What Baton keeps per kernel function, by the handle the application launches it by: its
//! parameter layout (to copy the arguments of a launch that must wait) and, at Level 2, whether
//! it was launched before (a first launch may load the function, which waits for the device).
//! Both are forgotten when code is unloaded, since the driver reuses the handles.

use std::collections::HashSet;
use std::sync::RwLock;

use baton_cuda::ParamCache;
use baton_cuda::core::locks;
use baton_cuda::sys::CUfunction;

/// See the module documentation.
#[derive(Default)]
pub(crate) struct Functions {
    layouts: ParamCache,
    launched: RwLock<HashSet<usize>>,
}

impl Functions {
    /// Where launches find their functions' parameter layouts.
    pub(crate) fn layouts(&self) -> &ParamCache {
        &self.layouts
    }

    /// Whether `f` was launched before (see [`Functions::launched`]).
    pub(crate) fn launched_before(&self, f: CUfunction) -> bool {
        locks::read(&self.launched).contains(&(f as usize))
    }

    /// `f` has been launched.
    pub(crate) fn launched(&self, f: CUfunction) {
        locks::write(&self.launched).insert(f as usize);
    }

    /// Forgets every function: code was unloaded, and its handles may name others from now on.
    pub(crate) fn forget_all(&self) {
        self.layouts.forget_all();
        locks::write(&self.launched).clear();
    }
}
