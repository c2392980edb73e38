//! Level 3 on NVIDIA GPUs: the channel group (TSG) of a CUDA context, found by watching the
//! resource-manager (RM) calls libcuda makes, and its time slice, set through those same RM
//! handles.
//!
//! A CUDA context owns one compute channel group (class `KEPLER_CHANNEL_GROUP_A`, `0xa06c`,
//! engine `GR0`) plus copy-engine groups. The GPU time-slices runnable groups of different
//! contexts; only the *running* group's slice decides how soon another context gets the GPU.
//! So a best-effort context whose compute group runs with a slice of a few microseconds yields
//! to any other runnable context within the hardware's switch time (~0.2–0.3 ms measured on
//! H100, driver 580), even in the middle of a kernel, and loses nothing when it runs alone.
//!
//! - [`Capture`] records channel-group allocations (and frees) from the `ioctl`s the process
//!   makes on the NVIDIA control device. The interposer feeds it every `ioctl`; nothing here
//!   issues one.
//! - [`RmControl`] sends an RM control to an object; [`Ioctl`] is the real one. Controls must
//!   go over the file descriptor libcuda allocated the group on (the RM client is bound to
//!   the open file), after libcuda's own initialization set its value.
//! - [`ContextSlice`] is one context's compute group as Level 3 for its queues: while *no*
//!   queue of the context runs freely — each is interrupted, or preemptible (a scheduler may
//!   suspend it, because a more urgent queue exists) — the group's slice is the short yield
//!   value, so the GPU is handed to another context as soon as that context has work, without
//!   waiting for a decision or an RM call. When a queue runs freely (nothing can suspend it
//!   now, and it is not interrupted), libcuda's slice comes back. The RM calls cost
//!   ~0.2–0.4 ms each, so they run on a background thread that applies only the latest wish:
//!   `interrupt` and `restore` never block and never call the driver.
//!
//! The structures below mirror NVIDIA's open kernel module headers (`nv_escape.h`,
//! `nvos.h`, `nv-ioctl.h`, `cla06c.h`, `ctrla06c.h`); their sizes are checked at compile time.

// The RM ABI carries pointers as 64-bit integers (`NvP64`) and sizes as 32-bit ones; Baton
// runs on 64-bit Linux only, where these conversions are exact.
#![allow(clippy::cast_possible_truncation)]

use std::ffi::{c_int, c_ulong, c_void};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The ioctl "type" byte of the NVIDIA device files.
pub const NV_IOCTL_MAGIC: u32 = b'F' as u32;
/// `NV_ESC_RM_FREE`: frees an RM object (`NVOS00_PARAMETERS`).
pub const NV_ESC_RM_FREE: u32 = 0x29;
/// `NV_ESC_RM_CONTROL`: an RM control call (`NVOS54_PARAMETERS`).
pub const NV_ESC_RM_CONTROL: u32 = 0x2a;
/// `NV_ESC_RM_ALLOC`: allocates an RM object (`NVOS21_PARAMETERS` or `NVOS64_PARAMETERS`).
pub const NV_ESC_RM_ALLOC: u32 = 0x2b;
/// `NV_ESC_IOCTL_XFER_CMD`: a command whose parameters are too large for the ioctl number's
/// size field, passed by pointer (`nv_ioctl_xfer_t`).
pub const NV_ESC_IOCTL_XFER_CMD: u32 = 200 + 11;
/// `KEPLER_CHANNEL_GROUP_A`: a channel group (TSG).
pub const KEPLER_CHANNEL_GROUP_A: u32 = 0xa06c;
/// `NV2080_ENGINE_TYPE_GR0`: the graphics/compute engine.
pub const ENGINE_GR0: u32 = 0x1;
/// `NVA06C_CTRL_CMD_SET_TIMESLICE` (`{ NvU64 timesliceUs }`).
pub const CTRL_SET_TIMESLICE: u32 = 0xa06c_0103;
/// `NVA06C_CTRL_CMD_GET_TIMESLICE` (`{ NvU64 timesliceUs }`).
pub const CTRL_GET_TIMESLICE: u32 = 0xa06c_0104;
/// `NVA06C_CTRL_CMD_PREEMPT` (`{ NvBool bWait; NvBool bManualTimeout; NvU32 timeoutUs }`).
pub const CTRL_PREEMPT: u32 = 0xa06c_0105;
/// `NV_OK`.
pub const NV_OK: u32 = 0;

/// `NVOS21_PARAMETERS`: the short form of `NV_ESC_RM_ALLOC`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Nvos21 {
    /// The RM client.
    pub h_root: u32,
    /// The parent object.
    pub h_object_parent: u32,
    /// The new object's handle.
    pub h_object_new: u32,
    /// The new object's class.
    pub h_class: u32,
    /// The class's allocation parameters (a pointer in the caller's memory).
    pub p_alloc_parms: u64,
    /// Their size.
    pub params_size: u32,
    /// RM status (`NV_OK` on success).
    pub status: u32,
}

/// `NVOS64_PARAMETERS`: the long form of `NV_ESC_RM_ALLOC`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Nvos64 {
    /// The RM client.
    pub h_root: u32,
    /// The parent object.
    pub h_object_parent: u32,
    /// The new object's handle.
    pub h_object_new: u32,
    /// The new object's class.
    pub h_class: u32,
    /// The class's allocation parameters (a pointer in the caller's memory).
    pub p_alloc_parms: u64,
    /// Access rights requested (a pointer, may be 0).
    pub p_rights_requested: u64,
    /// Size of the allocation parameters.
    pub params_size: u32,
    /// Allocation flags.
    pub flags: u32,
    /// RM status (`NV_OK` on success).
    pub status: u32,
}

/// `NVOS54_PARAMETERS`: `NV_ESC_RM_CONTROL`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Nvos54 {
    /// The RM client.
    pub h_client: u32,
    /// The object controlled.
    pub h_object: u32,
    /// The control command.
    pub cmd: u32,
    /// Control flags.
    pub flags: u32,
    /// The command's parameters (a pointer).
    pub params: u64,
    /// Their size.
    pub params_size: u32,
    /// RM status (`NV_OK` on success).
    pub status: u32,
}

/// `NVOS00_PARAMETERS`: `NV_ESC_RM_FREE`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Nvos00 {
    /// The RM client.
    pub h_root: u32,
    /// The freed object's parent.
    pub h_object_parent: u32,
    /// The freed object (the client itself frees everything it owns).
    pub h_object_old: u32,
    /// RM status.
    pub status: u32,
}

/// `nv_ioctl_xfer_t`: `NV_ESC_IOCTL_XFER_CMD`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct XferCmd {
    /// The inner escape (e.g. [`NV_ESC_RM_ALLOC`]).
    pub cmd: u32,
    /// Size of the inner parameters.
    pub size: u32,
    /// The inner parameters (a pointer).
    pub ptr: u64,
}

/// `NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS`: the allocation parameters of a channel group.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ChannelGroupAllocParams {
    /// Error notifier.
    pub h_object_error: u32,
    /// ECC error notifier.
    pub h_object_ecc_error: u32,
    /// The address space.
    pub h_va_space: u32,
    /// `NV2080_ENGINE_TYPE_*` the group runs on.
    pub engine_type: u32,
    /// Whether a vGPU plugin allocates it.
    pub b_is_calling_context_vgpu_plugin: u8,
}

const _: () = {
    assert!(size_of::<Nvos21>() == 32);
    assert!(size_of::<Nvos64>() == 48);
    assert!(size_of::<Nvos54>() == 32);
    assert!(size_of::<Nvos00>() == 16);
    assert!(size_of::<XferCmd>() == 16);
    assert!(size_of::<ChannelGroupAllocParams>() == 20);
    assert!(std::mem::offset_of!(ChannelGroupAllocParams, engine_type) == 12);
};

/// Linux `_IOWR(type, nr, size)`.
pub const fn iowr(nr: u32, size: usize) -> c_ulong {
    ((3u32 << 30) | ((size as u32 & 0x3fff) << 16) | (NV_IOCTL_MAGIC << 8) | nr) as c_ulong
}

fn ioc_type(req: c_ulong) -> u32 {
    ((req >> 8) & 0xff) as u32
}

fn ioc_nr(req: c_ulong) -> u32 {
    (req & 0xff) as u32
}

fn ioc_size(req: c_ulong) -> usize {
    ((req >> 16) & 0x3fff) as usize
}

/// Whether `request` is one of the NVIDIA escapes [`Capture::observe`] looks at — a cheap test
/// to run on every `ioctl` of the process.
pub fn is_rm_request(request: c_ulong) -> bool {
    ioc_type(request) == NV_IOCTL_MAGIC
        && matches!(
            ioc_nr(request),
            NV_ESC_RM_ALLOC | NV_ESC_RM_FREE | NV_ESC_IOCTL_XFER_CMD
        )
}

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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
                lock(&self.groups).push(g);
            }
            NV_ESC_RM_FREE if size == size_of::<Nvos00>() => {
                // SAFETY: an RM_FREE carries an NVOS00.
                let f = unsafe { params.cast::<Nvos00>().read_unaligned() };
                if f.status != NV_OK {
                    return;
                }
                lock(&self.groups).retain(|g| {
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
        lock(&self.groups).clone()
    }

    /// Where the allocation counter stands now: groups allocated later have a `seq` at least
    /// this.
    pub fn mark(&self) -> u64 {
        self.seq.load(Ordering::Relaxed)
    }

    /// The live compute groups allocated by the calling thread since `mark`.
    pub fn compute_since(&self, mark: u64) -> Vec<ChannelGroup> {
        let me = thread_id();
        lock(&self.groups)
            .iter()
            .filter(|g| g.seq >= mark && g.thread == me && g.is_compute())
            .copied()
            .collect()
    }
}

/// An RM control refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmError {
    /// The `ioctl` itself failed with this `errno`.
    Os(i32),
    /// RM answered with this status.
    Status(u32),
    /// A value set did not read back.
    Readback {
        /// What was set.
        set: u64,
        /// What was read.
        read: u64,
    },
}

impl fmt::Display for RmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RmError::Os(e) => write!(f, "ioctl failed: {}", std::io::Error::from_raw_os_error(*e)),
            RmError::Status(s) => write!(f, "the GPU driver refused it (RM status {s:#x})"),
            RmError::Readback { set, read } => {
                write!(
                    f,
                    "the time slice did not take: set {set} µs, read back {read} µs"
                )
            }
        }
    }
}

impl std::error::Error for RmError {}

/// Sends RM controls.
pub trait RmControl: Send + Sync {
    /// Runs control `cmd` on `group` with `params` (the command's parameter structure, in and
    /// out).
    fn control(&self, group: &ChannelGroup, cmd: u32, params: &mut [u8]) -> Result<(), RmError>;
}

/// The real [`RmControl`]: an `NV_ESC_RM_CONTROL` ioctl on the group's file descriptor.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ioctl;

impl RmControl for Ioctl {
    fn control(&self, group: &ChannelGroup, cmd: u32, params: &mut [u8]) -> Result<(), RmError> {
        let mut p = Nvos54 {
            h_client: group.client,
            h_object: group.handle,
            cmd,
            flags: 0,
            params: params.as_mut_ptr() as usize as u64,
            params_size: params.len() as u32,
            status: 0,
        };
        // SAFETY: a well-formed NVOS54 whose parameter pointer and size describe `params`,
        // which outlives the call; the kernel writes only within them and into `p`. The raw
        // system call avoids re-entering an `ioctl` hook.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ioctl,
                group.fd,
                iowr(NV_ESC_RM_CONTROL, size_of::<Nvos54>()),
                &mut p as *mut Nvos54,
            )
        };
        if r < 0 {
            return Err(RmError::Os(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ));
        }
        if p.status != NV_OK {
            return Err(RmError::Status(p.status));
        }
        Ok(())
    }
}

/// The group's time slice in µs.
pub fn get_timeslice(ctl: &dyn RmControl, group: &ChannelGroup) -> Result<u64, RmError> {
    let mut p = [0u8; 8];
    ctl.control(group, CTRL_GET_TIMESLICE, &mut p)?;
    Ok(u64::from_ne_bytes(p))
}

/// Sets the group's time slice in µs.
pub fn set_timeslice(ctl: &dyn RmControl, group: &ChannelGroup, us: u64) -> Result<(), RmError> {
    ctl.control(group, CTRL_SET_TIMESLICE, &mut us.to_ne_bytes())
}

/// Preempts the group off the GPU now (`wait`: return once it is off).
pub fn preempt(ctl: &dyn RmControl, group: &ChannelGroup, wait: bool) -> Result<(), RmError> {
    // { NvBool bWait; NvBool bManualTimeout; NvU32 timeoutUs } — 8 bytes, timeout at 4.
    let mut p = [0u8; 8];
    p[0] = u8::from(wait);
    ctl.control(group, CTRL_PREEMPT, &mut p)
}

/// Counters of a [`ContextSlice`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SliceStats {
    /// Slice changes sent to the GPU.
    pub changes: u64,
    /// Time those calls took, in total.
    pub busy: Duration,
    /// The longest one.
    pub longest: Duration,
    /// Calls the driver refused.
    pub failures: u64,
}

#[derive(Debug)]
struct SliceState {
    queues: usize,
    /// Queues running freely: neither interrupted nor preemptible.
    running: usize,
    /// What the slice should be now.
    want_yield: bool,
    /// What was last applied.
    yielded: bool,
    shutdown: bool,
    stats: SliceStats,
    last_error: Option<RmError>,
}

/// One context's compute channel group as the Level-3 mechanism of its queues. See the module
/// documentation.
pub struct ContextSlice {
    inner: Arc<SliceInner>,
}

struct SliceInner {
    group: ChannelGroup,
    normal_us: u64,
    yield_us: u64,
    state: Mutex<SliceState>,
    cv: Condvar,
}

impl fmt::Debug for ContextSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContextSlice")
            .field("group", &self.inner.group)
            .field("normal_us", &self.inner.normal_us)
            .field("yield_us", &self.inner.yield_us)
            .finish_non_exhaustive()
    }
}

impl ContextSlice {
    /// Takes control of `group`'s slice: reads its current value (restored on resume) and
    /// checks that a change takes (by setting that same value and reading it back), then
    /// starts the thread that applies changes. Fails if the driver refuses either.
    pub fn start(
        ctl: Arc<dyn RmControl>,
        group: ChannelGroup,
        yield_us: u64,
    ) -> Result<ContextSlice, RmError> {
        let normal_us = get_timeslice(&*ctl, &group)?;
        set_timeslice(&*ctl, &group, normal_us)?;
        let back = get_timeslice(&*ctl, &group)?;
        if back != normal_us {
            return Err(RmError::Readback {
                set: normal_us,
                read: back,
            });
        }
        let inner = Arc::new(SliceInner {
            group,
            normal_us,
            yield_us: yield_us.max(1),
            state: Mutex::new(SliceState {
                queues: 0,
                running: 0,
                want_yield: false,
                yielded: false,
                shutdown: false,
                stats: SliceStats::default(),
                last_error: None,
            }),
            cv: Condvar::new(),
        });
        let worker = inner.clone();
        std::thread::Builder::new()
            .name("baton-timeslice".into())
            .spawn(move || worker.apply_loop(&*ctl))
            .map_err(|e| RmError::Os(e.raw_os_error().unwrap_or(0)))?;
        Ok(ContextSlice { inner })
    }

    /// The group controlled.
    pub fn group(&self) -> ChannelGroup {
        self.inner.group
    }

    /// The slice the context runs with normally, in µs (libcuda's value).
    pub fn normal_us(&self) -> u64 {
        self.inner.normal_us
    }

    /// The slice while every queue is interrupted, in µs.
    pub fn yield_us(&self) -> u64 {
        self.inner.yield_us
    }

    /// A queue of the context appeared; `running`: it runs freely (see the module
    /// documentation).
    pub fn attach(&self, running: bool) {
        self.inner.change(|st| {
            st.queues += 1;
            st.running += usize::from(running);
        });
    }

    /// A queue of the context went away; `running` as last reported.
    pub fn detach(&self, running: bool) {
        self.inner.change(|st| {
            st.queues = st.queues.saturating_sub(1);
            if running {
                st.running = st.running.saturating_sub(1);
            }
        });
    }

    /// A queue of the context started (`true`) or stopped (`false`) running freely. Never
    /// blocks on the driver.
    pub fn set_running(&self, running: bool) {
        self.inner.change(|st| {
            if running {
                st.running = (st.running + 1).min(st.queues);
            } else {
                st.running = st.running.saturating_sub(1);
            }
        });
    }

    /// Whether the slice is (or is about to be) the yield value.
    pub fn yielding(&self) -> bool {
        lock(&self.inner.state).want_yield
    }

    /// Counters so far, and the last refusal if any.
    pub fn stats(&self) -> (SliceStats, Option<RmError>) {
        let st = lock(&self.inner.state);
        (st.stats, st.last_error)
    }

    /// Blocks until the slice applied matches the wish, or a refusal, or `timeout` (for tests
    /// and measurements). Returns whether it matches.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = lock(&self.inner.state);
        while st.yielded != st.want_yield && st.last_error.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = self
                .inner
                .cv
                .wait_timeout(st, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        st.yielded == st.want_yield
    }
}

impl Drop for ContextSlice {
    fn drop(&mut self) {
        self.inner.change(|st| st.shutdown = true);
    }
}

impl SliceInner {
    fn change(&self, f: impl FnOnce(&mut SliceState)) {
        let mut st = lock(&self.state);
        f(&mut st);
        st.want_yield = st.queues > 0 && st.running == 0;
        self.cv.notify_all();
    }

    /// The background thread: applies the latest wish, coalescing flips that happen while a
    /// call is in progress. Ends when the [`ContextSlice`] is dropped (its context is going
    /// away, so nothing is restored).
    fn apply_loop(&self, ctl: &dyn RmControl) {
        loop {
            let target = {
                let mut st = lock(&self.state);
                loop {
                    if st.shutdown {
                        return;
                    }
                    if st.want_yield != st.yielded && st.last_error.is_none() {
                        break st.want_yield;
                    }
                    st = self.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
                }
            };
            let us = if target {
                self.yield_us
            } else {
                self.normal_us
            };
            let t0 = Instant::now();
            let r = set_timeslice(ctl, &self.group, us);
            let took = t0.elapsed();
            let mut st = lock(&self.state);
            st.stats.busy += took;
            st.stats.longest = st.stats.longest.max(took);
            match r {
                Ok(()) => {
                    st.stats.changes += 1;
                    st.yielded = target;
                }
                Err(e) => {
                    // A refusal stops further changes (the queues still stop launching, as at
                    // Level 1); it is reported through `stats`.
                    st.stats.failures += 1;
                    st.last_error = Some(e);
                }
            }
            self.cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests;
