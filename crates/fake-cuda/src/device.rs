//! Initialization, the device, the driver version and error strings.
//!
//! Every device of the fake is shaped like an H100 (132 SMs, compute capability 9.0, 80 GiB);
//! which ones the process sees, under which ordinals, is `devices.rs`'s. The driver version is
//! 13000 (CUDA 13.0).

use std::ffi::{c_char, c_int, c_uint, c_void};

use baton_cuda_sys::{
    CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS,
    CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
    CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
    CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED,
    CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE, CUdevice, CUdevice_attribute, CUresult, CUuuid,
};

use crate::devices::Physical;
use crate::entry::exports;
use crate::kernels::device_sms;
use crate::machine::machine;
use crate::memory::TOTAL_MEMORY;
use crate::result::{CuResult, put, put_opt};
use crate::state::{global, initialized};

/// The driver version the fake reports (CUDA 13.0).
pub(crate) const DRIVER_VERSION: c_int = 13000;
/// The physical device behind ordinal `dev`, or `CUDA_ERROR_INVALID_DEVICE`.
pub(crate) fn check_device(dev: CUdevice) -> CuResult<Physical> {
    initialized()?;
    physical(dev)
}

/// The physical device behind ordinal `dev` (no initialization check).
pub(crate) fn physical(dev: CUdevice) -> CuResult<Physical> {
    machine().devices.get(dev).ok_or(CUresult::INVALID_DEVICE)
}

/// The value of a device attribute; 0 for attributes the fake does not model.
fn attribute(attrib: CUdevice_attribute, device: Physical) -> c_int {
    match attrib {
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        | CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X
        | CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y => 1024,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z => 64,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X => i32::MAX,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y | CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z => 65535,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK => 49152,
        CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY => 65536,
        CU_DEVICE_ATTRIBUTE_WARP_SIZE => 32,
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK
        | CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR => 65536,
        CU_DEVICE_ATTRIBUTE_CLOCK_RATE => 1_980_000,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT => device_sms() as i32,
        CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE => 50 << 20,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR => 2048,
        CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT => 3,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR => 9,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR => 0,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR => 233_472,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN => 232_448,
        CU_DEVICE_ATTRIBUTE_PCI_BUS_ID => i32::try_from(device.index).unwrap_or(0) + 1,
        CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY
        | CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS
        | CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING
        | CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED
        | CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY
        | CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
        | CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED => 1,
        _ => 0,
    }
}

fn init(flags: c_uint) -> CuResult<()> {
    if flags != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    if machine().devices.count() == 0 {
        return Err(CUresult::NO_DEVICE);
    }
    global().set_initialized();
    Ok(())
}

unsafe fn device_get(out: *mut CUdevice, ordinal: c_int) -> CuResult<()> {
    check_device(ordinal)?;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, ordinal) }
}

unsafe fn device_count(out: *mut c_int) -> CuResult<()> {
    initialized()?;
    let n = c_int::try_from(machine().devices.count()).unwrap_or(c_int::MAX);
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, n) }
}

unsafe fn device_name(out: *mut c_char, len: c_int, dev: CUdevice) -> CuResult<()> {
    let name = check_device(dev)?.name();
    let len = usize::try_from(len).unwrap_or(0);
    if out.is_null() || len == 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let n = name.len().min(len - 1);
    // SAFETY: the caller guarantees `out` is writable for `len` bytes; we write `n + 1 <= len`.
    unsafe {
        std::ptr::copy_nonoverlapping(name.as_ptr().cast::<c_char>(), out, n);
        out.add(n).write(0);
    }
    Ok(())
}

unsafe fn device_attribute(
    out: *mut c_int,
    attrib: CUdevice_attribute,
    dev: CUdevice,
) -> CuResult<()> {
    let device = check_device(dev)?;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, attribute(attrib, device)) }
}

unsafe fn device_uuid(out: *mut CUuuid, dev: CUdevice) -> CuResult<()> {
    let device = check_device(dev)?;
    let uuid = CUuuid::from_bytes(device.uuid());
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, uuid) }
}

unsafe fn total_mem(out: *mut usize, dev: CUdevice) -> CuResult<()> {
    check_device(dev)?;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, TOTAL_MEMORY) }
}

unsafe fn driver_version(out: *mut c_int) -> CuResult<()> {
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, DRIVER_VERSION) }
}

unsafe fn error_text(code: CUresult, out: *mut *const c_char, name: bool) -> CuResult<()> {
    let text = if name {
        code.name_c()
    } else {
        code.description()
    };
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, text.map_or(std::ptr::null(), |text| text.as_ptr()))? };
    text.map(drop).ok_or(CUresult::INVALID_VALUE)
}

unsafe fn export_table(out: *mut *const c_void, _id: *const CUuuid) -> CuResult<()> {
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put_opt(out, std::ptr::null()) };
    Err(CUresult::NOT_SUPPORTED)
}

exports! {
    /// Initializes the driver (flags must be 0).
    fn cuInit(flags: c_uint): PFN_cuInit => init(flags);
    /// Returns the driver version, 13000 (works before `cuInit`).
    fn cuDriverGetVersion(driverVersion: *mut c_int): PFN_cuDriverGetVersion => driver_version(driverVersion);
    /// Returns device `ordinal` (its handle is the ordinal, as on the real driver).
    fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int): PFN_cuDeviceGet => device_get(device, ordinal);
    /// Returns the number of devices the process sees.
    fn cuDeviceGetCount(count: *mut c_int): PFN_cuDeviceGetCount => device_count(count);
    /// Returns the device's name.
    fn cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice): PFN_cuDeviceGetName => device_name(name, len, dev);
    /// Returns a device attribute.
    fn cuDeviceGetAttribute(pi: *mut c_int, attrib: CUdevice_attribute, dev: CUdevice): PFN_cuDeviceGetAttribute
        => device_attribute(pi, attrib, dev);
    /// Returns the device's UUID (the same for every process, whatever its ordinal there).
    fn cuDeviceGetUuid(uuid: *mut CUuuid, dev: CUdevice): PFN_cuDeviceGetUuid => device_uuid(uuid, dev);
    /// Returns the device's UUID (no device of the fake is a MIG instance, so the same as
    /// `cuDeviceGetUuid`).
    fn cuDeviceGetUuid_v2(uuid: *mut CUuuid, dev: CUdevice): PFN_cuDeviceGetUuid_v2 => device_uuid(uuid, dev);
    /// Returns the device's memory size.
    fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice): PFN_cuDeviceTotalMem_v2 => total_mem(bytes, dev);
    /// Returns the message of an error code.
    fn cuGetErrorString(error: CUresult, pStr: *mut *const c_char): PFN_cuGetErrorString => error_text(error, pStr, false);
    /// Returns the name of an error code.
    fn cuGetErrorName(error: CUresult, pStr: *mut *const c_char): PFN_cuGetErrorName => error_text(error, pStr, true);
    /// Private export tables are not provided: `CUDA_ERROR_NOT_SUPPORTED`.
    fn cuGetExportTable(ppExportTable: *mut *const c_void, pExportTableId: *const CUuuid): PFN_cuGetExportTable
        => export_table(ppExportTable, pExportTableId);
}
