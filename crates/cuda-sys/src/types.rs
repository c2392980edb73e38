//! Scalar types, handles, C enums and flag constants of `cuda.h`.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::ptr;

/// Opaque C structs behind the handle types. The module is private: the structs can be named
/// through the handle aliases but never constructed or dereferenced.
mod opaque {
    use std::marker::{PhantomData, PhantomPinned};

    macro_rules! opaque {
        ($($name:ident),* $(,)?) => {$(
            /// An opaque driver object; only pointers to it exist.
            #[repr(C)]
            pub struct $name {
                _data: [u8; 0],
                _marker: PhantomData<(*mut u8, PhantomPinned)>,
            }
        )*};
    }

    opaque!(
        CUctx_st,
        CUstream_st,
        CUevent_st,
        CUfunc_st,
        CUkern_st,
        CUlib_st,
        CUmod_st,
        CUgraph_st,
        CUgraphExec_st,
        CUgraphNode_st,
        CUmemPoolHandle_st,
        CUgreenCtx_st,
        CUgraphDeviceUpdatableNode_st,
        CUdevResourceDesc_st,
    );
}

/// A 32-bit unsigned value (`cuuint32_t`).
pub type cuuint32_t = u32;
/// A 64-bit unsigned value (`cuuint64_t`).
pub type cuuint64_t = u64;
/// A device ordinal (`CUdevice`, an `int`).
pub type CUdevice = c_int;
/// A device ordinal in the version-1 signatures (`CUdevice_v1`), the same `int`.
pub type CUdevice_v1 = c_int;
/// A device address (`CUdeviceptr`, 64 bits since CUDA 3.2).
pub type CUdeviceptr = u64;
/// A device address in the version-1 (pre-3.2) signatures: 32 bits wide.
pub type CUdeviceptr_v1 = c_uint;

/// A context handle.
pub type CUcontext = *mut opaque::CUctx_st;
/// A stream handle. NULL is the default stream of the calling convention in use;
/// [`CU_STREAM_LEGACY`] and [`CU_STREAM_PER_THREAD`] name the two default streams explicitly.
pub type CUstream = *mut opaque::CUstream_st;
/// An event handle.
pub type CUevent = *mut opaque::CUevent_st;
/// A function (kernel in one module and context) handle.
pub type CUfunction = *mut opaque::CUfunc_st;
/// A context-independent kernel handle of a library; accepted where a [`CUfunction`] is.
pub type CUkernel = *mut opaque::CUkern_st;
/// A context-independent library handle.
pub type CUlibrary = *mut opaque::CUlib_st;
/// A module handle.
pub type CUmodule = *mut opaque::CUmod_st;
/// A graph handle.
pub type CUgraph = *mut opaque::CUgraph_st;
/// An executable (instantiated) graph handle.
pub type CUgraphExec = *mut opaque::CUgraphExec_st;
/// A graph node handle.
pub type CUgraphNode = *mut opaque::CUgraphNode_st;
/// A memory pool handle.
pub type CUmemoryPool = *mut opaque::CUmemPoolHandle_st;
/// A green context handle.
pub type CUgreenCtx = *mut opaque::CUgreenCtx_st;
/// A resource descriptor (`cuDevResourceGenerateDesc`), from which a green context is made.
pub type CUdevResourceDesc = *mut opaque::CUdevResourceDesc_st;
/// A device-side handle of a device-updatable graph node.
pub type CUgraphDeviceNode = *mut opaque::CUgraphDeviceUpdatableNode_st;

/// The legacy default stream, named explicitly (`((CUstream)0x1)`).
pub const CU_STREAM_LEGACY: CUstream = ptr::without_provenance_mut(0x1);
/// The calling thread's per-thread default stream, named explicitly (`((CUstream)0x2)`).
pub const CU_STREAM_PER_THREAD: CUstream = ptr::without_provenance_mut(0x2);

/// A host function enqueued by `cuLaunchHostFunc` (`CUhostFn`); NULL is `None`.
pub type CUhostFn = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// A stream callback (`CUstreamCallback`): called with the stream, its status and the user data.
pub type CUstreamCallback =
    Option<unsafe extern "C" fn(stream: CUstream, status: crate::CUresult, user_data: *mut c_void)>;

/// A 16-byte device UUID (`CUuuid`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUuuid {
    /// The raw bytes.
    pub bytes: [c_char; 16],
}

impl CUuuid {
    /// The UUID of these bytes.
    pub fn from_bytes(b: [u8; 16]) -> CUuuid {
        CUuuid {
            bytes: b.map(|x| x as c_char),
        }
    }
}

/// As `nvidia-smi -L` prints it: `GPU-` and the bytes in lowercase hexadecimal, grouped
/// 4-2-2-2-6.
impl std::fmt::Display for CUuuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GPU")?;
        for (i, x) in self.bytes.iter().enumerate() {
            if matches!(i, 0 | 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{:02x}", *x as u8)?;
        }
        Ok(())
    }
}

c_enum! {
    /// A device attribute queried by `cuDeviceGetAttribute` (`CUdevice_attribute`).
    CUdevice_attribute {
        /// Maximum threads per block.
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
        /// Maximum block dimension X.
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
        /// Maximum block dimension Y.
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
        /// Maximum block dimension Z.
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
        /// Maximum grid dimension X.
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
        /// Maximum grid dimension Y.
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
        /// Maximum grid dimension Z.
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
        /// Maximum shared memory per block, in bytes.
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
        /// Constant memory, in bytes.
        CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY = 9,
        /// Warp size, in threads.
        CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
        /// Maximum 32-bit registers per block.
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
        /// Typical clock frequency, in kHz.
        CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
        /// Number of streaming multiprocessors.
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
        /// Whether the device is integrated with host memory.
        CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
        /// Whether host memory can be mapped into the device address space.
        CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
        /// The compute mode.
        CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
        /// Whether kernels may run concurrently.
        CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
        /// PCI bus ID.
        CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
        /// PCI device ID.
        CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
        /// L2 cache size, in bytes.
        CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
        /// Maximum resident threads per multiprocessor.
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
        /// Number of asynchronous copy engines.
        CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40,
        /// Whether the device shares a unified address space with the host.
        CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
        /// Compute capability, major number.
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
        /// Compute capability, minor number.
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
        /// Whether stream priorities are supported.
        CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED = 78,
        /// Maximum shared memory per multiprocessor, in bytes.
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
        /// Maximum 32-bit registers per multiprocessor.
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
        /// Whether managed memory is supported.
        CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83,
        /// Whether cooperative launches are supported.
        CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = 95,
        /// Maximum opt-in shared memory per block, in bytes.
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
        /// Whether `cuMemAllocAsync` and memory pools are supported.
        CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
    }
}

c_enum! {
    /// The capture state of a stream (`CUstreamCaptureStatus`).
    CUstreamCaptureStatus {
        /// The stream is not capturing.
        CU_STREAM_CAPTURE_STATUS_NONE = 0,
        /// The stream is capturing.
        CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
        /// The capture was invalidated and must be ended.
        CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2,
    }
}

c_enum! {
    /// Which other threads' unsafe calls a capture forbids (`CUstreamCaptureMode`).
    CUstreamCaptureMode {
        /// Potentially unsafe calls are forbidden in every thread.
        CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
        /// Potentially unsafe calls are forbidden in the capturing thread.
        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
        /// No call is forbidden.
        CU_STREAM_CAPTURE_MODE_RELAXED = 2,
    }
}

c_enum! {
    /// Why `cuGetProcAddress_v2` did or did not find a symbol (`CUdriverProcAddressQueryResult`).
    CUdriverProcAddressQueryResult {
        /// The symbol was found.
        CU_GET_PROC_ADDRESS_SUCCESS = 0,
        /// No symbol has this name.
        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
        /// The symbol exists, but only from a later CUDA version than the one asked for.
        CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
    }
}

c_enum! {
    /// A JIT option key of `cuModuleLoadDataEx`/`cuLibraryLoadData` (`CUjit_option`).
    CUjit_option {
        /// Maximum registers per thread.
        CU_JIT_MAX_REGISTERS = 0,
    }
}

c_enum! {
    /// A library option key of `cuLibraryLoadData` (`CUlibraryOption`).
    CUlibraryOption {
        /// The host universal function and data table.
        CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0,
        /// The code buffer stays valid for the library's lifetime.
        CU_LIBRARY_BINARY_IS_PRESERVED = 1,
    }
}

c_enum! {
    /// The kind of an execution-affinity parameter (`CUexecAffinityType`).
    CUexecAffinityType {
        /// A limit on the number of SMs.
        CU_EXEC_AFFINITY_TYPE_SM_COUNT = 0,
    }
}

/// `cuGetProcAddress` flag: per-thread-ness as compiled (in a driver: legacy).
pub const CU_GET_PROC_ADDRESS_DEFAULT: cuuint64_t = 0;
/// `cuGetProcAddress` flag: the legacy-default-stream variants of the symbols.
pub const CU_GET_PROC_ADDRESS_LEGACY_STREAM: cuuint64_t = 1 << 0;
/// `cuGetProcAddress` flag: the per-thread-default-stream (`_ptsz`/`_ptds`) variants.
pub const CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM: cuuint64_t = 1 << 1;

/// `cuStreamCreate` flag: a blocking stream (synchronizes with the legacy stream).
pub const CU_STREAM_DEFAULT: c_uint = 0x0;
/// `cuStreamCreate` flag: a stream that does not synchronize with the legacy stream.
pub const CU_STREAM_NON_BLOCKING: c_uint = 0x1;

/// `CUdevResourceType`: streaming multiprocessors.
pub const CU_DEV_RESOURCE_TYPE_SM: c_uint = 1;
/// `cuGreenCtxCreate` flag: give the green context a default stream (required).
pub const CU_GREEN_CTX_DEFAULT_STREAM: c_uint = 0x1;

/// A device resource (`CUdevResource`), here always SMs.
///
/// CUDA 12.4 defines 96 bytes of type and padding, then a 48-byte union whose SM member begins
/// with `smCount`; CUDA 13 appends a `nextResource` pointer. The driver writes arrays of these
/// (`cuDevSmResourceSplitByCount`), so this type is larger than any of those layouts and Baton
/// only ever passes arrays of one: the spare tail is never read as another element.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUdevResource {
    /// `CUdevResourceType`.
    pub type_: c_uint,
    /// Reserved by the driver.
    pub _internal_padding: [u8; 92],
    /// The SM member of the union: the number of SMs.
    pub sm_count: c_uint,
    /// The rest of the union (further SM fields in CUDA 13).
    pub _union_rest: [u8; 44],
    /// CUDA 13's `nextResource`.
    pub next: *mut CUdevResource,
    /// Room for later additions.
    pub _spare: [u8; 128],
}

const _: () = assert!(std::mem::offset_of!(CUdevResource, sm_count) == 96);
const _: () = assert!(std::mem::offset_of!(CUdevResource, next) == 144);

impl Default for CUdevResource {
    fn default() -> Self {
        CUdevResource {
            type_: 0,
            _internal_padding: [0; 92],
            sm_count: 0,
            _union_rest: [0; 44],
            next: ptr::null_mut(),
            _spare: [0; 128],
        }
    }
}

/// `cuEventCreate` flag: default event.
pub const CU_EVENT_DEFAULT: c_uint = 0x0;
/// `cuEventCreate` flag: synchronization blocks instead of spinning.
pub const CU_EVENT_BLOCKING_SYNC: c_uint = 0x1;
/// `cuEventCreate` flag: the event records no timestamp.
pub const CU_EVENT_DISABLE_TIMING: c_uint = 0x2;
/// `cuEventCreate` flag: the event may be shared between processes.
pub const CU_EVENT_INTERPROCESS: c_uint = 0x4;
/// `cuEventRecordWithFlags` flag: default record.
pub const CU_EVENT_RECORD_DEFAULT: c_uint = 0x0;
/// `cuEventRecordWithFlags` flag: an event record node during stream capture.
pub const CU_EVENT_RECORD_EXTERNAL: c_uint = 0x1;
/// `cuStreamWaitEvent` flag: default wait.
pub const CU_EVENT_WAIT_DEFAULT: c_uint = 0x0;
/// `cuStreamWaitEvent` flag: an event wait node during stream capture.
pub const CU_EVENT_WAIT_EXTERNAL: c_uint = 0x1;

/// `cuStreamWaitValue32` flag: wait until `(int32_t)(*addr - value) >= 0`.
pub const CU_STREAM_WAIT_VALUE_GEQ: c_uint = 0x0;
/// `cuStreamWaitValue32` flag: wait until `*addr == value`.
pub const CU_STREAM_WAIT_VALUE_EQ: c_uint = 0x1;
/// `cuStreamWaitValue32` flag: wait until `(*addr & value) != 0`.
pub const CU_STREAM_WAIT_VALUE_AND: c_uint = 0x2;
/// `cuStreamWaitValue32` flag: wait until `~(*addr | value) != 0`.
pub const CU_STREAM_WAIT_VALUE_NOR: c_uint = 0x3;
/// `cuStreamWaitValue32` flag: flush outstanding remote writes after the wait.
pub const CU_STREAM_WAIT_VALUE_FLUSH: c_uint = 1 << 30;
/// `cuStreamWriteValue32` flag: default (ordered) write.
pub const CU_STREAM_WRITE_VALUE_DEFAULT: c_uint = 0x0;
/// `cuStreamWriteValue32` flag: the write may be reordered with earlier writes.
pub const CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER: c_uint = 0x1;

/// `cuMemHostAlloc` flag: pinned for every context.
pub const CU_MEMHOSTALLOC_PORTABLE: c_uint = 0x01;
/// `cuMemHostAlloc` flag: mapped into the device address space.
pub const CU_MEMHOSTALLOC_DEVICEMAP: c_uint = 0x02;
/// `cuMemHostAlloc` flag: write-combined.
pub const CU_MEMHOSTALLOC_WRITECOMBINED: c_uint = 0x04;

/// Context flag: automatic scheduling.
pub const CU_CTX_SCHED_AUTO: c_uint = 0x00;
/// Context flag: spin while waiting.
pub const CU_CTX_SCHED_SPIN: c_uint = 0x01;
/// Context flag: yield while waiting.
pub const CU_CTX_SCHED_YIELD: c_uint = 0x02;
/// Context flag: block while waiting.
pub const CU_CTX_SCHED_BLOCKING_SYNC: c_uint = 0x04;
/// Context flag: the mask of scheduling flags.
pub const CU_CTX_SCHED_MASK: c_uint = 0x07;
/// Context flag: support mapped pinned allocations (deprecated, always on).
pub const CU_CTX_MAP_HOST: c_uint = 0x08;
/// Context flag: keep local memory after launch.
pub const CU_CTX_LMEM_RESIZE_TO_MAX: c_uint = 0x10;
/// Context flag: the mask of all context flags.
pub const CU_CTX_FLAGS_MASK: c_uint = 0xFF;

/// Function attribute (`CUfunction_attribute`): the most dynamic shared memory a launch of the
/// function may ask for, set by `cuFuncSetAttribute`/`cuKernelSetAttribute` before launches
/// that need more than the default 48 KiB.
pub const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_uint = 8;
/// Function attribute: the preferred split of L1 cache and shared memory, a percentage of the
/// most shared memory (a preference: the driver gives a launch what it needs whatever it says).
pub const CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: c_uint = 9;
/// Function attribute: whether launches may use a cluster larger than the portable size.
pub const CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: c_uint = 14;
/// Function attribute: how the blocks of a cluster are preferably spread (a preference).
pub const CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: c_uint = 15;

/// End of the `extra` array of `cuLaunchKernel` (`CU_LAUNCH_PARAM_END`).
pub const CU_LAUNCH_PARAM_END: *mut c_void = ptr::null_mut();
/// `extra` key: the next entry points to a packed buffer of all kernel parameters.
pub const CU_LAUNCH_PARAM_BUFFER_POINTER: *mut c_void = ptr::without_provenance_mut(0x01);
/// `extra` key: the next entry points to a `size_t` holding the packed buffer's size.
pub const CU_LAUNCH_PARAM_BUFFER_SIZE: *mut c_void = ptr::without_provenance_mut(0x02);

/// The "no device" ordinal (`CU_DEVICE_INVALID`).
pub const CU_DEVICE_INVALID: CUdevice = -2;
/// The host as a device (`CU_DEVICE_CPU`).
pub const CU_DEVICE_CPU: CUdevice = -1;

/// A memory location (`CUmemLocation`): a type (`CUmemLocationType`) and an id; passed by value
/// to `cuMemPrefetchAsync_v2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUmemLocation {
    /// `CUmemLocationType`.
    pub type_: c_int,
    /// The device ordinal or NUMA node, as the type says.
    pub id: c_int,
}

/// Upload the executable graph on `hUploadStream` as part of instantiation
/// (`CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`).
pub const CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD: cuuint64_t = 2;

/// `cuGraphInstantiateWithParams`' parameters (`CUDA_GRAPH_INSTANTIATE_PARAMS`).
#[allow(non_snake_case)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUDA_GRAPH_INSTANTIATE_PARAMS {
    /// `CUDA_GRAPH_INSTANTIATE_FLAG_*`.
    pub flags: cuuint64_t,
    /// The stream the upload is ordered on, with [`CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD`].
    pub hUploadStream: CUstream,
    /// Out: the node an error was found at.
    pub hErrNode_out: CUgraphNode,
    /// Out: a `CUgraphInstantiateResult`.
    pub result_out: c_int,
}

const _: () = {
    assert!(std::mem::size_of::<CUmemLocation>() == 8);
    assert!(std::mem::size_of::<CUDA_GRAPH_INSTANTIATE_PARAMS>() == 32);
    assert!(std::mem::offset_of!(CUDA_GRAPH_INSTANTIATE_PARAMS, hUploadStream) == 8);
    assert!(std::mem::size_of::<CUuuid>() == 16);
    assert!(std::mem::size_of::<CUstream>() == 8);
    assert!(std::mem::size_of::<CUhostFn>() == 8);
};

#[cfg(test)]
mod tests {
    use super::CUuuid;

    #[test]
    fn a_uuid_prints_as_nvidia_smi_does() {
        let mut b = [0u8; 16];
        b[0] = 0xab;
        b[15] = 0x01;
        b[4] = 0xff;
        assert_eq!(
            CUuuid::from_bytes(b).to_string(),
            "GPU-ab000000-ff00-0000-0000-000000000001"
        );
    }
}
