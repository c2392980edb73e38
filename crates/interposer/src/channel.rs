//! Level 3: the `ioctl` hook that watches libcuda's resource-manager calls for channel groups
//! ([`baton_cuda::rm::Capture`]), and which context each compute group belongs to.
//!
//! libcuda reaches the kernel through the C library's `ioctl`, so the preloaded interposer's
//! `ioctl` sees every call first. It makes the system call itself (never re-entering another
//! hook), then lets the capture look at allocations and frees on the NVIDIA device files; all
//! other requests cost one comparison.
//!
//! A context's compute group is allocated while the context is created, on the creating
//! thread: the context-creation hooks note the capture's counter before the real call and
//! claim the compute group that thread allocated during it. A context Baton did not see being
//! created (made before the interposer was loaded, or by a path not hooked) gets the one
//! compute group no other context claimed, if there is exactly one.

use std::collections::HashMap;
use std::ffi::{c_int, c_ulong, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicPtr, Ordering};

use baton_cuda::core::locks;
use baton_cuda::rm::{Capture, ChannelGroup, ComputeGroupOf, ExportedGroup, is_rm_request};
use baton_cuda::sys::CUcontext;

/// The process's channel-group capture and context claims.
#[derive(Default)]
pub(crate) struct Channels {
    pub(crate) capture: Capture,
    claims: Mutex<HashMap<usize, ChannelGroup>>,
}

static CHANNELS: AtomicPtr<Channels> = AtomicPtr::new(std::ptr::null_mut());

/// The process's channels, created on first use. Lock-free to reach, so a forked child can
/// drop the parent's (whose locks may be held) by resetting the pointer.
pub(crate) fn channels() -> &'static Channels {
    let p = CHANNELS.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: set once from a leaked Box and never freed.
        return unsafe { &*p };
    }
    let fresh = Box::into_raw(Box::default());
    match CHANNELS.compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: just published, never freed.
        Ok(_) => unsafe { &*fresh },
        Err(won) => {
            // SAFETY: `fresh` was never shared.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: as above.
            unsafe { &*won }
        }
    }
}

/// In a forked child: forget the parent's groups (they belong to its RM client).
pub(crate) fn reset_in_child() {
    CHANNELS.store(std::ptr::null_mut(), Ordering::Release);
}

impl Channels {
    /// A context was created on this thread after `mark`: it owns the compute group allocated
    /// meanwhile, if one was.
    pub(crate) fn claim(&self, ctx: CUcontext, mark: u64) {
        if let Some(g) = self.capture.compute_since(mark).last() {
            locks::lock(&self.claims).insert(ctx as usize, *g);
        }
    }

    /// The compute group of `ctx`: the claimed one if it is still alive, else the only
    /// unclaimed compute group of the process.
    pub(crate) fn group_of(&self, ctx: CUcontext) -> Option<ChannelGroup> {
        let live = self.capture.groups();
        let claims = locks::lock(&self.claims);
        if let Some(g) = claims.get(&(ctx as usize)) {
            return live.contains(g).then_some(*g);
        }
        let mut free = live
            .iter()
            .filter(|g| g.is_compute() && !claims.values().any(|c| c == *g));
        match (free.next(), free.next()) {
            (Some(g), None) => Some(*g),
            _ => None,
        }
    }
}

/// Baton's `ioctl`: the system call, then a look at NVIDIA resource-manager allocations.
///
/// Declared with a fixed third argument: on the Linux ABIs Baton supports (x86-64, AArch64)
/// a variadic caller passes it in the same register as this function reads it from.
///
/// # Safety
/// The `ioctl` contract: `arg` is whatever `request` expects.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    // SAFETY: the caller's arguments, unchanged, to the kernel.
    let ret = unsafe { libc::syscall(libc::SYS_ioctl, fd, request, arg) };
    // The kernel's ioctl returns an int.
    let ret = c_int::try_from(ret).unwrap_or(-1);
    if is_rm_request(request) {
        let errno = std::io::Error::last_os_error().raw_os_error();
        let _ = std::panic::catch_unwind(|| {
            // SAFETY: the call has just returned on this thread with these arguments.
            unsafe { channels().capture.observe(fd, request, arg, ret) }
        });
        if ret < 0 {
            // Keep the caller's errno as the system call left it.
            if let Some(e) = errno {
                // SAFETY: errno is thread-local and always writable.
                unsafe { *libc::__errno_location() = e };
            }
        }
    }
    ret
}

/// The compute channel group of `ctx`, as identified for Level 3 (used by `baton doctor`'s
/// self-test, which runs under the interposer). Returns 0 and fills `out`, or -1 if it is not
/// known. Its signature is [`ComputeGroupOf`].
///
/// # Safety
/// `out` is null or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn baton_compute_channel_group(
    ctx: CUcontext,
    out: *mut ExportedGroup,
) -> c_int {
    let found = std::panic::catch_unwind(|| channels().group_of(ctx))
        .ok()
        .flatten();
    match found {
        Some(g) if !out.is_null() => {
            // SAFETY: the caller's out-pointer, checked non-null.
            unsafe { out.write(g.into()) };
            0
        }
        _ => -1,
    }
}

// The export matches the type callers use.
const _: ComputeGroupOf = baton_compute_channel_group;

#[cfg(test)]
mod tests {
    use baton_cuda::rm::{
        ChannelGroupAllocParams, ENGINE_GR0, KEPLER_CHANNEL_GROUP_A, NV_ESC_RM_ALLOC,
        NV_ESC_RM_FREE, Nvos00, Nvos64, iowr,
    };

    use super::*;

    /// Replays what libcuda does for one context: a compute group and a copy group.
    fn context(ch: &Channels, client: u32, compute: u32) {
        for (handle, engine) in [(compute, ENGINE_GR0), (compute + 1, 9)] {
            let params = ChannelGroupAllocParams {
                engine_type: engine,
                ..ChannelGroupAllocParams::default()
            };
            let a = Nvos64 {
                h_root: client,
                h_object_parent: 0x10,
                h_object_new: handle,
                h_class: KEPLER_CHANNEL_GROUP_A,
                p_alloc_parms: &params as *const _ as usize as u64,
                ..Nvos64::default()
            };
            let req = iowr(NV_ESC_RM_ALLOC, size_of::<Nvos64>());
            // SAFETY: `a` and its parameters are live for the call.
            unsafe { ch.capture.observe(5, req, (&a as *const Nvos64).cast(), 0) };
        }
    }

    fn ctx(n: usize) -> CUcontext {
        n as CUcontext
    }

    #[test]
    fn a_context_owns_the_compute_group_its_creation_allocated() {
        let ch = Channels::default();
        let mark = ch.capture.mark();
        context(&ch, 1, 0x100);
        ch.claim(ctx(0xa), mark);
        let mark = ch.capture.mark();
        context(&ch, 1, 0x200);
        ch.claim(ctx(0xb), mark);
        assert_eq!(ch.group_of(ctx(0xa)).map(|g| g.handle), Some(0x100));
        assert_eq!(ch.group_of(ctx(0xb)).map(|g| g.handle), Some(0x200));
        // A context Baton did not see created: both compute groups are claimed.
        assert!(ch.group_of(ctx(0xc)).is_none());
        // A freed group is nobody's.
        let free = Nvos00 {
            h_root: 1,
            h_object_parent: 0x10,
            h_object_old: 0x100,
            status: 0,
        };
        let req = iowr(NV_ESC_RM_FREE, size_of::<Nvos00>());
        // SAFETY: `free` is live for the call.
        unsafe {
            ch.capture
                .observe(5, req, (&free as *const Nvos00).cast(), 0)
        };
        assert!(ch.group_of(ctx(0xa)).is_none());
    }

    #[test]
    fn an_unseen_context_gets_the_only_unclaimed_compute_group_and_no_guess_otherwise() {
        let ch = Channels::default();
        context(&ch, 1, 0x100);
        assert_eq!(ch.group_of(ctx(0xa)).map(|g| g.handle), Some(0x100));
        context(&ch, 1, 0x200);
        assert!(ch.group_of(ctx(0xa)).is_none(), "two candidates: no guess");
    }
}
