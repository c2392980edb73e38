//! Control: RM controls sent to a channel group over libcuda's own file descriptor, and the
//! time-slice and preemption commands built on them.

// The RM ABI carries pointers as 64-bit integers (`NvP64`) and sizes as 32-bit ones; Baton
// runs on 64-bit Linux only, where these conversions are exact.
#![allow(clippy::cast_possible_truncation)]

use super::abi::{
    CTRL_GET_TIMESLICE, CTRL_GPFIFO_SCHEDULE, CTRL_PREEMPT, CTRL_SET_TIMESLICE,
    NV_ERR_INVALID_PARAM_STRUCT, NV_ESC_RM_CONTROL, NV_OK, Nvos54, iowr,
};
use super::capture::ChannelGroup;

/// An RM control refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RmError {
    /// The `ioctl` itself failed with this `errno`.
    #[error("ioctl failed: {}", std::io::Error::from_raw_os_error(*.0))]
    Os(i32),
    /// RM answered with this status.
    #[error("the GPU driver refused it (RM status {0:#x})")]
    Status(u32),
    /// A value set did not read back.
    #[error("the time slice did not take: set {set} µs, read back {read} µs")]
    Readback {
        /// What was set.
        set: u64,
        /// What was read.
        read: u64,
    },
}

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

/// Puts the group on the GPU's run list (`enable`) or takes it off: off, none of its channels
/// is scheduled, the work it has on the GPU is switched out and waits, and the GPU's time goes
/// to the other contexts with work; back on, that work continues where it stopped.
pub fn schedule(ctl: &dyn RmControl, group: &ChannelGroup, enable: bool) -> Result<(), RmError> {
    // { bEnable, bSkipSubmit, bSkipEnable }; drivers before bSkipEnable take the first two.
    let mut p = [u8::from(enable), 0, 0];
    match ctl.control(group, CTRL_GPFIFO_SCHEDULE, &mut p) {
        Err(RmError::Status(NV_ERR_INVALID_PARAM_STRUCT)) => {
            ctl.control(group, CTRL_GPFIFO_SCHEDULE, &mut p[..2])
        }
        r => r,
    }
}
