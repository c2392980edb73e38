// The RM ABI carries sizes as 32-bit integers; the structures here are a few bytes long.
#![allow(clippy::cast_possible_truncation)]

use std::sync::Mutex as StdMutex;

use std::ffi::{c_int, c_ulong};
use std::time::Duration;

use super::*;

fn alloc64(
    client: u32,
    parent: u32,
    handle: u32,
    class: u32,
    params: &ChannelGroupAllocParams,
) -> Nvos64 {
    Nvos64 {
        h_root: client,
        h_object_parent: parent,
        h_object_new: handle,
        h_class: class,
        p_alloc_parms: params as *const _ as usize as u64,
        // As libcuda does (H100, driver 580): no size for this class's parameters.
        params_size: 0,
        ..Nvos64::default()
    }
}

/// A channel group's allocation under the device object every recorded group shares.
fn tsg(client: u32, handle: u32, params: &ChannelGroupAllocParams) -> Nvos64 {
    alloc64(client, 0xbeef_0001, handle, KEPLER_CHANNEL_GROUP_A, params)
}

fn engine(engine_type: u32) -> ChannelGroupAllocParams {
    ChannelGroupAllocParams {
        engine_type,
        ..ChannelGroupAllocParams::default()
    }
}

fn observe<T>(c: &Capture, fd: c_int, nr: u32, arg: &T, ret: c_int) {
    // SAFETY: `arg` is a live structure of the size the request names.
    unsafe { c.observe(fd, iowr(nr, size_of::<T>()), (arg as *const T).cast(), ret) }
}

/// What libcuda does when it creates a context, as seen on H100 / driver 580: a compute group
/// and three copy-engine groups on the control device, among other objects.
fn context_creation(c: &Capture, fd: c_int, client: u32) {
    let (gr, ce0, ce1, ce2) = (engine(ENGINE_GR0), engine(9), engine(10), engine(11));
    observe(
        c,
        fd,
        NV_ESC_RM_ALLOC,
        &alloc64(client, 0xbeef_0001, 0xcaf0_0010, 0x0080, &gr),
        0,
    );
    observe(c, fd, NV_ESC_RM_ALLOC, &tsg(client, 0xcaf0_0020, &gr), 0);
    let short = Nvos21 {
        h_root: client,
        h_object_parent: 0xbeef_0001,
        h_object_new: 0xcaf0_0021,
        h_class: KEPLER_CHANNEL_GROUP_A,
        p_alloc_parms: &ce0 as *const _ as usize as u64,
        params_size: size_of::<ChannelGroupAllocParams>() as u32,
        status: 0,
    };
    observe(c, fd, NV_ESC_RM_ALLOC, &short, 0);
    // The long form wrapped in an XFER command.
    let wrapped = tsg(client, 0xcaf0_0022, &ce1);
    let xfer = XferCmd {
        cmd: NV_ESC_RM_ALLOC,
        size: size_of::<Nvos64>() as u32,
        ptr: &wrapped as *const _ as usize as u64,
    };
    observe(c, fd, NV_ESC_IOCTL_XFER_CMD, &xfer, 0);
    observe(c, fd, NV_ESC_RM_ALLOC, &tsg(client, 0xcaf0_0023, &ce2), 0);
}

#[test]
fn a_recorded_context_creation_yields_its_compute_group_and_copy_groups() {
    let c = Capture::new();
    let mark = c.mark();
    context_creation(&c, 7, 0xc1d0_0001);
    let g = c.groups();
    assert_eq!(
        g.iter().map(|g| (g.handle, g.engine)).collect::<Vec<_>>(),
        vec![
            (0xcaf0_0020, ENGINE_GR0),
            (0xcaf0_0021, 9),
            (0xcaf0_0022, 10),
            (0xcaf0_0023, 11)
        ]
    );
    assert!(
        g.iter()
            .all(|g| g.fd == 7 && g.client == 0xc1d0_0001 && g.parent == 0xbeef_0001)
    );
    let compute = c.compute_since(mark);
    assert_eq!(compute.len(), 1);
    assert_eq!(compute[0].handle, 0xcaf0_0020);
    // Nothing new since a later mark.
    assert!(c.compute_since(c.mark()).is_empty());
}

#[test]
fn failed_foreign_and_unrelated_calls_are_ignored() {
    let c = Capture::new();
    let gr = engine(ENGINE_GR0);
    let mut failed = alloc64(1, 2, 3, KEPLER_CHANNEL_GROUP_A, &gr);
    failed.status = 0x1f;
    observe(&c, 3, NV_ESC_RM_ALLOC, &failed, 0);
    observe(
        &c,
        3,
        NV_ESC_RM_ALLOC,
        &alloc64(1, 2, 4, KEPLER_CHANNEL_GROUP_A, &gr),
        -1,
    );
    observe(&c, 3, NV_ESC_RM_ALLOC, &alloc64(1, 2, 5, 0xc86f, &gr), 0);
    // A control escape is not an allocation even if its bytes look like one.
    observe(
        &c,
        3,
        NV_ESC_RM_CONTROL,
        &alloc64(1, 2, 6, KEPLER_CHANNEL_GROUP_A, &gr),
        0,
    );
    // Another driver's ioctl with the same number.
    let other = alloc64(1, 2, 7, KEPLER_CHANNEL_GROUP_A, &gr);
    // SAFETY: a live structure.
    unsafe {
        c.observe(
            3,
            iowr(NV_ESC_RM_ALLOC, 48) & !0xff00 | (b'T' as c_ulong) << 8,
            (&other as *const Nvos64).cast(),
            0,
        )
    };
    // No allocation parameters: recorded, engine unknown, not compute.
    let mut bare = alloc64(1, 2, 8, KEPLER_CHANNEL_GROUP_A, &gr);
    bare.p_alloc_parms = 0;
    observe(&c, 3, NV_ESC_RM_ALLOC, &bare, 0);
    let g = c.groups();
    assert_eq!(g.len(), 1, "{g:?}");
    assert!(!g[0].is_compute());
    assert!(is_rm_request(iowr(NV_ESC_RM_ALLOC, 48)));
    assert!(is_rm_request(iowr(NV_ESC_IOCTL_XFER_CMD, 16)));
    assert!(!is_rm_request(iowr(NV_ESC_RM_CONTROL, 32)));
}

#[test]
fn frees_remove_groups_by_handle_parent_or_client() {
    let c = Capture::new();
    context_creation(&c, 7, 0xa);
    context_creation(&c, 9, 0xb);
    let free = |client, object| Nvos00 {
        h_root: client,
        h_object_parent: 0,
        h_object_old: object,
        status: 0,
    };
    observe(&c, 7, NV_ESC_RM_FREE, &free(0xa, 0xcaf0_0020), 0);
    assert_eq!(c.groups().len(), 7);
    assert!(!c.groups().iter().any(|g| g.client == 0xa && g.is_compute()));
    observe(&c, 7, NV_ESC_RM_FREE, &free(0xa, 0xbeef_0001), 0);
    assert!(c.groups().iter().all(|g| g.client == 0xb));
    observe(&c, 9, NV_ESC_RM_FREE, &free(0xb, 0xb), 0);
    assert!(c.groups().is_empty());
}

#[test]
fn groups_are_attributed_to_the_allocating_thread() {
    let c = std::sync::Arc::new(Capture::new());
    let mark = c.mark();
    let other = c.clone();
    std::thread::spawn(move || context_creation(&other, 5, 0x1))
        .join()
        .unwrap();
    assert!(c.compute_since(mark).is_empty());
    context_creation(&c, 5, 0x2);
    assert_eq!(c.compute_since(mark).len(), 1);
    assert_eq!(c.compute_since(mark)[0].client, 0x2);
}

/// An RM that keeps one time slice and records every control.
#[derive(Default)]
struct FakeRm {
    slice: StdMutex<u64>,
    calls: StdMutex<Vec<(u32, u64)>>,
    refuse_sets: StdMutex<bool>,
    /// Off the run list; the size its schedule control takes (0: 3 bytes); refuse it.
    off: StdMutex<bool>,
    schedule_size: StdMutex<usize>,
    refuse_schedule: StdMutex<bool>,
}

impl RmControl for FakeRm {
    fn control(&self, _: &ChannelGroup, cmd: u32, params: &mut [u8]) -> Result<(), RmError> {
        if cmd == CTRL_GPFIFO_SCHEDULE {
            let size = match *self.schedule_size.lock().unwrap() {
                0 => 3,
                n => n,
            };
            self.calls
                .lock()
                .unwrap()
                .push((cmd, u64::from(params[0]) | (params.len() as u64) << 8));
            if params.len() != size {
                return Err(RmError::Status(NV_ERR_INVALID_PARAM_STRUCT));
            }
            if *self.refuse_schedule.lock().unwrap() {
                return Err(RmError::Status(0x1b));
            }
            *self.off.lock().unwrap() = params[0] == 0;
            return Ok(());
        }
        let v = u64::from_ne_bytes(params[..8].try_into().unwrap());
        self.calls.lock().unwrap().push((cmd, v));
        match cmd {
            CTRL_GET_TIMESLICE => params.copy_from_slice(&self.slice.lock().unwrap().to_ne_bytes()),
            CTRL_SET_TIMESLICE if *self.refuse_sets.lock().unwrap() => {
                return Err(RmError::Status(0x1b));
            }
            CTRL_SET_TIMESLICE => *self.slice.lock().unwrap() = v,
            _ => {}
        }
        Ok(())
    }
}

fn group() -> ChannelGroup {
    ChannelGroup {
        fd: 3,
        client: 1,
        parent: 2,
        handle: 3,
        engine: ENGINE_GR0,
        thread: 0,
        seq: 0,
    }
}

#[test]
fn a_given_running_slice_replaces_the_drivers() {
    let rm = std::sync::Arc::new(FakeRm::default());
    *rm.slice.lock().unwrap() = 2048;
    let s = ContextSlice::start(
        rm.clone(),
        group(),
        SliceValues {
            yield_us: 500,
            normal_us: Some(300),
            lead_us: 9_000,
            off_while_interrupted: false,
        },
    )
    .unwrap();
    assert_eq!((s.normal_us(), s.yield_us()), (300, 500));
    assert_eq!(*rm.slice.lock().unwrap(), 300);
    s.attach(false);
    assert!(s.settle(Duration::from_secs(5)) && *rm.slice.lock().unwrap() == 500);
    s.set_running(true);
    assert!(s.settle(Duration::from_secs(5)) && *rm.slice.lock().unwrap() == 300);
}

#[test]
fn the_slice_is_short_exactly_while_no_queue_of_the_context_runs_freely() {
    let rm = std::sync::Arc::new(FakeRm::default());
    *rm.slice.lock().unwrap() = 2048;
    let s = ContextSlice::start(
        rm.clone(),
        group(),
        SliceValues {
            yield_us: 1,
            normal_us: None,
            lead_us: 9_000,
            off_while_interrupted: false,
        },
    )
    .unwrap();
    assert_eq!((s.normal_us(), s.yield_us()), (2048, 1));
    let now = || *rm.slice.lock().unwrap();
    let settled = |want: u64| s.settle(Duration::from_secs(5)) && now() == want;
    // No queue yet: libcuda's slice stays.
    assert!(!s.yielding() && settled(2048));
    // Two preemptible queues: nothing runs freely, the context yields at once.
    s.attach(false);
    s.attach(false);
    assert!(s.yielding() && settled(1));
    // One becomes the queue nothing can suspend: the context keeps its slice.
    s.set_running(true);
    assert!(settled(2048));
    // It is interrupted after all (the other was never running).
    s.set_running(false);
    assert!(settled(1));
    // A third queue appears running freely.
    s.attach(true);
    assert!(settled(2048));
    // It goes away; the remaining two do not run freely.
    s.detach(SliceRole {
        running: true,
        leading: false,
    });
    assert!(settled(1));
    s.detach(SliceRole::default());
    s.detach(SliceRole::default());
    assert!(!s.yielding() && settled(2048));
    let (st, err) = s.stats();
    assert_eq!((st.changes, st.failures, err), (6, 0, None));
}

#[test]
fn queues_tell_the_slice_when_they_run_freely() {
    // The CUDA queue's side: preemptible or interrupted means not running freely.
    use crate::{CaptureGate, CudaHwQueue, Driver, EventPool};
    use baton_core::{HwQueue, InflightRange, Level};
    let rm = std::sync::Arc::new(FakeRm::default());
    *rm.slice.lock().unwrap() = 2048;
    let slice = std::sync::Arc::new(
        ContextSlice::start(
            rm.clone(),
            group(),
            SliceValues {
                yield_us: 1,
                normal_us: None,
                lead_us: 9_000,
                off_while_interrupted: false,
            },
        )
        .unwrap(),
    );
    let driver: &'static Driver = Box::leak(Box::new(Driver::default()));
    let q = CudaHwQueue::new(
        driver,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        EventPool::new(driver, std::ptr::null_mut()),
        std::sync::Arc::new(CaptureGate::default()),
    )
    .with_slice(slice.clone());
    assert_eq!(q.max_level(), Level::L3);
    assert!(q.supports(Level::L3) && q.supports(Level::L1) && !q.supports(Level::L2));
    let now = || *rm.slice.lock().unwrap();
    let settled = |want: u64| slice.settle(Duration::from_secs(5)) && now() == want;
    assert!(settled(1));
    q.set_preemptible(false);
    assert!(settled(2048));
    q.interrupt().unwrap();
    assert!(settled(1));
    let none = InflightRange {
        start: baton_core::CommandSeq(0),
        end: baton_core::CommandSeq(0),
    };
    q.restore(none).unwrap();
    assert!(settled(2048));
    // Running freely and outranking other work: the long slice; preemptible again, the short.
    q.set_leading(true);
    assert!(settled(9_000));
    q.set_preemptible(true);
    assert!(settled(1));
    q.set_preemptible(false);
    assert!(settled(9_000));
    q.set_leading(false);
    assert!(settled(2048));
    q.set_leading(true);
    assert!(settled(9_000));
    // Gone while leading: the context goes back to the driver's slice.
    drop(q);
    assert!(settled(2048) && !slice.yielding());
}

#[test]
fn a_refused_change_is_reported_and_stops_further_calls() {
    let rm = std::sync::Arc::new(FakeRm::default());
    *rm.slice.lock().unwrap() = 2048;
    let s = ContextSlice::start(
        rm.clone(),
        group(),
        SliceValues {
            yield_us: 50,
            normal_us: None,
            lead_us: 9_000,
            off_while_interrupted: false,
        },
    )
    .unwrap();
    *rm.refuse_sets.lock().unwrap() = true;
    s.attach(false);
    assert!(!s.settle(Duration::from_secs(5)));
    let (st, err) = s.stats();
    assert_eq!(
        (st.changes, st.failures, err),
        (0, 1, Some(RmError::Status(0x1b)))
    );
    let before = rm.calls.lock().unwrap().len();
    s.set_running(true);
    s.set_running(false);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(rm.calls.lock().unwrap().len(), before);
}

#[test]
fn taking_control_checks_that_a_change_reads_back() {
    struct Stuck;
    impl RmControl for Stuck {
        fn control(&self, _: &ChannelGroup, cmd: u32, params: &mut [u8]) -> Result<(), RmError> {
            if cmd == CTRL_GET_TIMESLICE {
                params.copy_from_slice(&7u64.to_ne_bytes());
            }
            Ok(())
        }
    }
    // GET always says 7: setting 7 reads back 7, so control is taken.
    assert!(
        ContextSlice::start(
            std::sync::Arc::new(Stuck),
            group(),
            SliceValues {
                yield_us: 1,
                normal_us: None,
                lead_us: 9_000,
                off_while_interrupted: false,
            }
        )
        .is_ok()
    );
    let rm = std::sync::Arc::new(FakeRm::default());
    *rm.refuse_sets.lock().unwrap() = true;
    assert_eq!(
        ContextSlice::start(
            rm,
            group(),
            SliceValues {
                yield_us: 1,
                normal_us: None,
                lead_us: 9_000,
                off_while_interrupted: false,
            }
        )
        .unwrap_err(),
        RmError::Status(0x1b)
    );
}

#[test]
fn the_real_control_reports_a_descriptor_that_is_not_the_gpu() {
    let f = std::fs::File::open("/dev/null").unwrap();
    let g = ChannelGroup {
        fd: std::os::fd::AsRawFd::as_raw_fd(&f),
        ..group()
    };
    assert_eq!(get_timeslice(&Ioctl, &g), Err(RmError::Os(libc::ENOTTY)));
    assert_eq!(preempt(&Ioctl, &g, true), Err(RmError::Os(libc::ENOTTY)));
}

fn off_slice(rm: &std::sync::Arc<FakeRm>) -> ContextSlice {
    *rm.slice.lock().unwrap() = 2048;
    ContextSlice::start(
        rm.clone(),
        group(),
        SliceValues {
            yield_us: 100,
            normal_us: None,
            lead_us: 9_000,
            off_while_interrupted: true,
        },
    )
    .unwrap()
}

#[test]
fn the_group_is_off_the_run_list_exactly_while_every_queue_is_interrupted() {
    let rm = std::sync::Arc::new(FakeRm::default());
    let s = off_slice(&rm);
    let off = || *rm.off.lock().unwrap();
    let settled = |want: bool| s.settle(Duration::from_secs(5)) && off() == want && s.off() == want;
    s.attach(false);
    s.attach(false);
    assert!(settled(false));
    // One of two interrupted: the other may still have work to run.
    s.set_interrupted(true);
    assert!(settled(false));
    s.set_interrupted(true);
    assert!(settled(true));
    assert_eq!(
        *rm.slice.lock().unwrap(),
        100,
        "the slice stays the yield one"
    );
    // One restored: back on, its work continues.
    s.set_interrupted(false);
    assert!(settled(false));
    // A queue that goes away interrupted is restored first; the last one leaving puts the
    // group back.
    s.set_interrupted(true);
    assert!(settled(true));
    s.set_interrupted(false);
    s.detach(SliceRole::default());
    s.set_interrupted(false);
    s.detach(SliceRole::default());
    assert!(settled(false));
    let (st, err) = s.stats();
    assert_eq!((st.offs, st.ons, st.failures, err), (2, 2, 0, None));
}

#[test]
fn a_driver_without_the_third_field_or_refusing_it_is_handled() {
    // Drivers before bSkipEnable take two bytes: the control is sent again with two.
    let rm = std::sync::Arc::new(FakeRm::default());
    *rm.schedule_size.lock().unwrap() = 2;
    let s = off_slice(&rm);
    s.attach(false);
    s.set_interrupted(true);
    assert!(s.settle(Duration::from_secs(5)) && *rm.off.lock().unwrap());
    let sizes: Vec<u64> = rm
        .calls
        .lock()
        .unwrap()
        .iter()
        .filter(|(c, _)| *c == CTRL_GPFIFO_SCHEDULE)
        .map(|(_, v)| v >> 8)
        .collect();
    assert_eq!(sizes, vec![3, 2]);
    // A driver that refuses it: the group stays on, asked once, and the slice still follows.
    let rm = std::sync::Arc::new(FakeRm::default());
    *rm.refuse_schedule.lock().unwrap() = true;
    let s = off_slice(&rm);
    s.attach(false);
    s.set_interrupted(true);
    assert!(s.settle(Duration::from_secs(5)) && !s.off());
    s.set_interrupted(false);
    s.set_running(true);
    assert!(s.settle(Duration::from_secs(5)) && *rm.slice.lock().unwrap() == 2048);
    s.set_running(false);
    s.set_interrupted(true);
    assert!(s.settle(Duration::from_secs(5)) && !s.off());
    let (st, err) = s.stats();
    assert_eq!((st.offs, st.failures, err), (0, 1, None));
}

#[test]
fn a_refused_slice_change_while_off_does_not_keep_the_group_off() {
    // A refusal stops further slice changes; the group must still go back on the run list
    // when its queues are restored, or nothing of the context would run again.
    let rm = std::sync::Arc::new(FakeRm::default());
    let s = off_slice(&rm);
    s.attach(true);
    s.set_interrupted(true);
    assert!(s.settle(Duration::from_secs(5)) && s.off());
    *rm.refuse_sets.lock().unwrap() = true;
    s.set_running(false);
    assert!(
        !s.settle(Duration::from_secs(5)),
        "the slice change was refused"
    );
    s.set_interrupted(false);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while s.off() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(!s.off() && !*rm.off.lock().unwrap(), "back on the run list");
}
