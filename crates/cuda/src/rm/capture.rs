//! Capture: the channel groups libcuda allocates, read from the `ioctl`s the interposer
//! passes on; nothing here issues one.

// The RM ABI carries pointers as 64-bit integers (`NvP64`) and sizes as 32-bit ones; Baton
// runs on 64-bit Linux only, where these conversions are exact.
#![allow(clippy::cast_possible_truncation)]

use std::ffi::{c_int, c_ulong, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use baton_core::locks;

use super::abi::*;

/// A channel group libcuda allocated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelGroup {
    /// The file descriptor it was allocated on (controls must use it).
    pub fd: c_int,
    /// The RM client.
    pub client: u32,
    /// Its parent (the device object).
    pub parent: u32,
    /// Its handle.
    pub handle: u32,
    /// The engine it runs on ([`ENGINE_GR0`] for compute).
    pub engine: u32,
    /// The allocating thread (Linux thread id).
    pub thread: u64,
    /// Allocation order within the process.
    pub seq: u64,
}

impl ChannelGroup {
    /// Whether it is a compute group.
    pub fn is_compute(&self) -> bool {
        self.engine == ENGINE_GR0
    }
}

/// A channel group across the C ABI: what the interposer's `baton_compute_channel_group`
/// writes (see [`ComputeGroupOf`]), so that a program running under it — `baton doctor`'s
/// self-test — can send controls to its own context's group.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExportedGroup {
    /// The file descriptor RM controls must be sent on.
    pub fd: c_int,
    /// The RM client.
    pub client: u32,
    /// The group's handle.
    pub handle: u32,
    /// Its engine (`NV2080_ENGINE_TYPE_*`).
    pub engine: u32,
}

/// The signature of the interposer's `baton_compute_channel_group(ctx, out)`: 0 and `out`
/// filled, or -1 if the context's compute group is not known.
pub type ComputeGroupOf =
    unsafe extern "C" fn(baton_cuda_sys::CUcontext, *mut ExportedGroup) -> c_int;

impl From<ChannelGroup> for ExportedGroup {
    fn from(g: ChannelGroup) -> ExportedGroup {
        ExportedGroup {
            fd: g.fd,
            client: g.client,
            handle: g.handle,
            engine: g.engine,
        }
    }
}

impl From<ExportedGroup> for ChannelGroup {
    /// A group known only by what controls need (no parent, thread or allocation order).
    fn from(g: ExportedGroup) -> ChannelGroup {
        ChannelGroup {
            fd: g.fd,
            client: g.client,
            parent: 0,
            handle: g.handle,
            engine: g.engine,
            thread: 0,
            seq: 0,
        }
    }
}

/// Channel groups seen so far in the process.
#[derive(Debug, Default)]
pub struct Capture {
    groups: Mutex<Vec<ChannelGroup>>,
    seq: AtomicU64,
}

/// The calling thread's Linux id.
pub fn thread_id() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u64 }
}

impl Capture {
    /// An empty capture.
    pub const fn new() -> Capture {
        Capture {
            groups: Mutex::new(Vec::new()),
            seq: AtomicU64::new(0),
        }
    }

    /// Looks at an `ioctl(fd, request, arg)` that returned `ret`, after it returned.
    ///
    /// # Safety
    /// `arg` and the pointers inside the structure it points to are the ones the caller
    /// passed to that `ioctl`, still valid (the call has just returned on this thread).
    pub unsafe fn observe(&self, fd: c_int, request: c_ulong, arg: *const c_void, ret: c_int) {
        if ret != 0 || arg.is_null() || ioc_type(request) != NV_IOCTL_MAGIC {
            return;
        }
        let (cmd, size, params) = match ioc_nr(request) {
            NV_ESC_IOCTL_XFER_CMD if ioc_size(request) == size_of::<XferCmd>() => {
                // SAFETY: the escape's argument is an `nv_ioctl_xfer_t` (size checked).
                let x = unsafe { arg.cast::<XferCmd>().read_unaligned() };
                (x.cmd, x.size as usize, x.ptr as usize as *const c_void)
            }
            nr => (nr, ioc_size(request), arg),
        };
        if params.is_null() {
            return;
        }
        match cmd {
            NV_ESC_RM_ALLOC => {
                let (client, parent, handle, class, alloc, status) = if size == size_of::<Nvos64>()
                {
                    // SAFETY: an RM_ALLOC of the NVOS64 size carries an NVOS64.
                    let a = unsafe { params.cast::<Nvos64>().read_unaligned() };
                    let (r, p, n, c) = (a.h_root, a.h_object_parent, a.h_object_new, a.h_class);
                    (r, p, n, c, a.p_alloc_parms, a.status)
                } else if size == size_of::<Nvos21>() {
                    // SAFETY: as above, NVOS21.
                    let a = unsafe { params.cast::<Nvos21>().read_unaligned() };
                    let (r, p, n, c) = (a.h_root, a.h_object_parent, a.h_object_new, a.h_class);
                    (r, p, n, c, a.p_alloc_parms, a.status)
                } else {
                    return;
                };
                if class != KEPLER_CHANNEL_GROUP_A || status != NV_OK {
                    return;
                }
                // libcuda leaves `paramsSize` 0 for this class (RM knows the structure's size),
                // so the pointer alone says whether parameters were passed.
                let engine = if alloc != 0 {
                    // SAFETY: the class's allocation parameters, passed by libcuda and read by
                    // the kernel during the call that just returned.
                    unsafe {
                        (alloc as usize as *const ChannelGroupAllocParams)
                            .read_unaligned()
                            .engine_type
                    }
                } else {
                    u32::MAX
                };
                let g = ChannelGroup {
                    fd,
                    client,
                    parent,
                    handle,
                    engine,
                    thread: thread_id(),
                    seq: self.seq.fetch_add(1, Ordering::Relaxed),
                };
                locks::lock(&self.groups).push(g);
            }
            NV_ESC_RM_FREE if size == size_of::<Nvos00>() => {
                // SAFETY: an RM_FREE carries an NVOS00.
                let f = unsafe { params.cast::<Nvos00>().read_unaligned() };
                if f.status != NV_OK {
                    return;
                }
                locks::lock(&self.groups).retain(|g| {
                    !(g.client == f.h_root
                        && (g.handle == f.h_object_old
                            || g.parent == f.h_object_old
                            || f.h_object_old == f.h_root))
                });
            }
            _ => {}
        }
    }

    /// Every live group, in allocation order.
    pub fn groups(&self) -> Vec<ChannelGroup> {
        locks::lock(&self.groups).clone()
    }

    /// Where the allocation counter stands now: groups allocated later have a `seq` at least
    /// this.
    pub fn mark(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    /// The live compute groups allocated by the calling thread since `mark`.
    pub fn compute_since(&self, mark: u64) -> Vec<ChannelGroup> {
        let me = thread_id();
        locks::lock(&self.groups)
            .iter()
            .filter(|g| g.seq >= mark && g.thread == me && g.is_compute())
            .copied()
            .collect()
    }
}
