//! The RM ABI: escape numbers, classes, control commands and parameter structures, mirrored
//! from NVIDIA's open kernel module headers (`nv_escape.h`, `nvos.h`, `nv-ioctl.h`,
//! `cla06c.h`, `ctrla06c.h`), with their sizes checked at compile time.

// The RM ABI carries pointers as 64-bit integers (`NvP64`) and sizes as 32-bit ones; Baton
// runs on 64-bit Linux only, where these conversions are exact.
#![allow(clippy::cast_possible_truncation)]

use std::ffi::c_ulong;

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
/// `NVA06C_CTRL_CMD_GPFIFO_SCHEDULE` (`{ NvBool bEnable; NvBool bSkipSubmit; NvBool
/// bSkipEnable }`; older drivers have no `bSkipEnable`).
pub const CTRL_GPFIFO_SCHEDULE: u32 = 0xa06c_0101;
/// `NV_ERR_INVALID_PARAM_STRUCT`: a control's parameters were not the size RM expects.
pub const NV_ERR_INVALID_PARAM_STRUCT: u32 = 0x3a;
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

pub(super) fn ioc_type(req: c_ulong) -> u32 {
    ((req >> 8) & 0xff) as u32
}

pub(super) fn ioc_nr(req: c_ulong) -> u32 {
    (req & 0xff) as u32
}

pub(super) fn ioc_size(req: c_ulong) -> usize {
    ((req >> 16) & 0x3fff) as usize
}

/// Whether `request` is one of the NVIDIA escapes
/// [`Capture::observe`](super::capture::Capture::observe) looks at — a cheap test to run on
/// every `ioctl` of the process.
pub fn is_rm_request(request: c_ulong) -> bool {
    ioc_type(request) == NV_IOCTL_MAGIC
        && matches!(
            ioc_nr(request),
            NV_ESC_RM_ALLOC | NV_ESC_RM_FREE | NV_ESC_IOCTL_XFER_CMD
        )
}
