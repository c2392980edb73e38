//! The driver's entry points, resolved at run time.

use std::ffi::{CStr, c_uint, c_void};
use std::path::Path;

use baton_cuda_sys::*;

use crate::{DriverError, LibraryError};

macro_rules! driver {
    ($($name:ident: $pfn:ty;)*) => {
        /// The driver functions Baton calls, each `None` if the library does not export it.
        /// Field names are the exact exported symbol names.
        #[allow(non_snake_case)]
        #[derive(Clone, Copy, Default)]
        pub struct Driver {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub $name: Option<$pfn>,
            )*
        }

        impl Driver {
            /// The symbol names of every entry, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$(stringify!($name)),*];

            /// Resolves every entry through `lookup`, which receives a NUL-terminated symbol
            /// name and returns its address or null.
            ///
            /// # Safety
            /// `lookup` must return null or the address of the function exported under exactly
            /// that name by a CUDA driver, whose C signature the field's type states.
            pub unsafe fn resolve(mut lookup: impl FnMut(&CStr) -> *mut c_void) -> Driver {
                Driver {
                    $($name: {
                        let name = concat!(stringify!($name), "\0");
                        match CStr::from_bytes_with_nul(name.as_bytes()) {
                            Ok(c) => {
                                let p = lookup(c);
                                if p.is_null() {
                                    None
                                } else {
                                    // SAFETY: the caller guarantees `p` is this symbol, whose
                                    // signature is `$pfn`; function pointers and data pointers
                                    // have the same size on the platforms CUDA supports.
                                    Some(unsafe { std::mem::transmute::<*mut c_void, $pfn>(p) })
                                }
                            }
                            Err(_) => None,
                        }
                    },)*
                }
            }
        }
    };
}

driver! {
    cuInit: PFN_cuInit;
    cuDriverGetVersion: PFN_cuDriverGetVersion;
    cuDeviceGet: PFN_cuDeviceGet;
    cuDeviceGetCount: PFN_cuDeviceGetCount;
    cuDeviceGetUuid_v2: PFN_cuDeviceGetUuid_v2;
    cuDeviceGetName: PFN_cuDeviceGetName;
    cuGetProcAddress: PFN_cuGetProcAddress;
    cuGetProcAddress_v2: PFN_cuGetProcAddress_v2;
    cuCtxGetCurrent: PFN_cuCtxGetCurrent;
    cuCtxSetCurrent: PFN_cuCtxSetCurrent;
    cuCtxPushCurrent_v2: PFN_cuCtxPushCurrent_v2;
    cuCtxPopCurrent_v2: PFN_cuCtxPopCurrent_v2;
    cuCtxGetDevice: PFN_cuCtxGetDevice;
    cuCtxSynchronize: PFN_cuCtxSynchronize;
    cuCtxSynchronize_v2: PFN_cuCtxSynchronize_v2;
    cuCtxDestroy_v2: PFN_cuCtxDestroy_v2;
    cuCtxGetStreamPriorityRange: PFN_cuCtxGetStreamPriorityRange;
    cuDevicePrimaryCtxRelease_v2: PFN_cuDevicePrimaryCtxRelease_v2;
    cuDevicePrimaryCtxRetain: PFN_cuDevicePrimaryCtxRetain;
    cuCtxCreate_v2: PFN_cuCtxCreate_v2;
    cuCtxCreate_v3: PFN_cuCtxCreate_v3;
    cuCtxCreate_v4: PFN_cuCtxCreate_v4;
    cuModuleLoadData: PFN_cuModuleLoadData;
    cuMemHostAlloc: PFN_cuMemHostAlloc;
    cuMemFreeHost: PFN_cuMemFreeHost;
    cuMemHostGetDevicePointer_v2: PFN_cuMemHostGetDevicePointer_v2;
    cuModuleGetFunction: PFN_cuModuleGetFunction;
    cuDevicePrimaryCtxReset_v2: PFN_cuDevicePrimaryCtxRelease_v2;
    cuThreadExchangeStreamCaptureMode: PFN_cuThreadExchangeStreamCaptureMode;
    cuPointerGetAttribute: PFN_cuPointerGetAttribute;
    cuFuncGetParamInfo: PFN_cuFuncGetParamInfo;
    cuKernelGetParamInfo: PFN_cuKernelGetParamInfo;
    cuLaunchKernel: PFN_cuLaunchKernel;
    cuLaunchKernel_ptsz: PFN_cuLaunchKernel;
    cuLaunchKernelEx: PFN_cuLaunchKernelEx;
    cuLaunchKernelEx_ptsz: PFN_cuLaunchKernelEx;
    cuLaunchCooperativeKernel: PFN_cuLaunchCooperativeKernel;
    cuLaunchCooperativeKernel_ptsz: PFN_cuLaunchCooperativeKernel;
    cuLaunchHostFunc: PFN_cuLaunchHostFunc;
    cuLaunchHostFunc_ptsz: PFN_cuLaunchHostFunc;
    cuStreamAddCallback: PFN_cuStreamAddCallback;
    cuStreamAddCallback_ptsz: PFN_cuStreamAddCallback;
    cuMemAllocAsync: PFN_cuMemAllocAsync;
    cuMemAllocAsync_ptsz: PFN_cuMemAllocAsync;
    cuMemFreeAsync: PFN_cuMemFreeAsync;
    cuMemFreeAsync_ptsz: PFN_cuMemFreeAsync;
    cuMemcpy: PFN_cuMemcpy;
    cuMemcpy_ptds: PFN_cuMemcpy;
    cuMemcpyAsync: PFN_cuMemcpyAsync;
    cuMemcpyAsync_ptsz: PFN_cuMemcpyAsync;
    cuMemcpyHtoD_v2: PFN_cuMemcpyHtoD_v2;
    cuMemcpyHtoD_v2_ptds: PFN_cuMemcpyHtoD_v2;
    cuMemcpyDtoH_v2: PFN_cuMemcpyDtoH_v2;
    cuMemcpyDtoH_v2_ptds: PFN_cuMemcpyDtoH_v2;
    cuMemcpyDtoD_v2: PFN_cuMemcpyDtoD_v2;
    cuMemcpyDtoD_v2_ptds: PFN_cuMemcpyDtoD_v2;
    cuMemcpyHtoDAsync_v2: PFN_cuMemcpyHtoDAsync_v2;
    cuMemcpyHtoDAsync_v2_ptsz: PFN_cuMemcpyHtoDAsync_v2;
    cuMemcpyDtoHAsync_v2: PFN_cuMemcpyDtoHAsync_v2;
    cuMemcpyDtoHAsync_v2_ptsz: PFN_cuMemcpyDtoHAsync_v2;
    cuMemcpyDtoDAsync_v2: PFN_cuMemcpyDtoDAsync_v2;
    cuMemcpyDtoDAsync_v2_ptsz: PFN_cuMemcpyDtoDAsync_v2;
    cuMemsetD8_v2: PFN_cuMemsetD8_v2;
    cuMemsetD8_v2_ptds: PFN_cuMemsetD8_v2;
    cuMemsetD16_v2: PFN_cuMemsetD16_v2;
    cuMemsetD16_v2_ptds: PFN_cuMemsetD16_v2;
    cuMemsetD32_v2: PFN_cuMemsetD32_v2;
    cuMemsetD32_v2_ptds: PFN_cuMemsetD32_v2;
    cuMemsetD8Async: PFN_cuMemsetD8Async;
    cuMemsetD8Async_ptsz: PFN_cuMemsetD8Async;
    cuMemsetD16Async: PFN_cuMemsetD16Async;
    cuMemsetD16Async_ptsz: PFN_cuMemsetD16Async;
    cuMemsetD32Async: PFN_cuMemsetD32Async;
    cuMemsetD32Async_ptsz: PFN_cuMemsetD32Async;
    cuStreamCreate: PFN_cuStreamCreate;
    cuStreamCreateWithPriority: PFN_cuStreamCreateWithPriority;
    cuStreamDestroy: PFN_cuStreamDestroy;
    cuStreamDestroy_v2: PFN_cuStreamDestroy_v2;
    cuStreamGetCtx: PFN_cuStreamGetCtx;
    cuStreamGetFlags: PFN_cuStreamGetFlags;
    cuStreamGetPriority: PFN_cuStreamGetPriority;
    cuStreamSynchronize: PFN_cuStreamSynchronize;
    cuStreamSynchronize_ptsz: PFN_cuStreamSynchronize;
    cuStreamQuery: PFN_cuStreamQuery;
    cuStreamQuery_ptsz: PFN_cuStreamQuery;
    cuStreamWaitEvent: PFN_cuStreamWaitEvent;
    cuStreamWaitEvent_ptsz: PFN_cuStreamWaitEvent;
    cuStreamBeginCapture: PFN_cuStreamBeginCapture;
    cuStreamBeginCapture_ptsz: PFN_cuStreamBeginCapture;
    cuStreamBeginCapture_v2: PFN_cuStreamBeginCapture_v2;
    cuStreamBeginCapture_v2_ptsz: PFN_cuStreamBeginCapture_v2;
    cuStreamBeginCaptureToGraph: PFN_cuStreamBeginCaptureToGraph;
    cuStreamBeginCaptureToGraph_ptsz: PFN_cuStreamBeginCaptureToGraph;
    cuStreamEndCapture: PFN_cuStreamEndCapture;
    cuStreamEndCapture_ptsz: PFN_cuStreamEndCapture;
    cuStreamIsCapturing: PFN_cuStreamIsCapturing;
    cuStreamIsCapturing_ptsz: PFN_cuStreamIsCapturing;
    cuStreamWaitValue32_v2: PFN_cuStreamWaitValue32_v2;
    cuStreamWaitValue32_v2_ptsz: PFN_cuStreamWaitValue32_v2;
    cuStreamWriteValue32_v2: PFN_cuStreamWriteValue32_v2;
    cuStreamWriteValue32_v2_ptsz: PFN_cuStreamWriteValue32_v2;
    cuEventCreate: PFN_cuEventCreate;
    cuDeviceGetDevResource: PFN_cuDeviceGetDevResource;
    cuDevSmResourceSplitByCount: PFN_cuDevSmResourceSplitByCount;
    cuDevResourceGenerateDesc: PFN_cuDevResourceGenerateDesc;
    cuGreenCtxCreate: PFN_cuGreenCtxCreate;
    cuGreenCtxDestroy: PFN_cuGreenCtxDestroy;
    cuGreenCtxStreamCreate: PFN_cuGreenCtxStreamCreate;
    cuEventDestroy: PFN_cuEventDestroy;
    cuEventDestroy_v2: PFN_cuEventDestroy_v2;
    cuEventRecord: PFN_cuEventRecord;
    cuEventRecord_ptsz: PFN_cuEventRecord;
    cuEventRecordWithFlags: PFN_cuEventRecordWithFlags;
    cuEventRecordWithFlags_ptsz: PFN_cuEventRecordWithFlags;
    cuEventQuery: PFN_cuEventQuery;
    cuEventSynchronize: PFN_cuEventSynchronize;
    cuEventElapsedTime: PFN_cuEventElapsedTime;
    cuEventElapsedTime_v2: PFN_cuEventElapsedTime_v2;
    cuGraphLaunch: PFN_cuGraphLaunch;
    cuGraphLaunch_ptsz: PFN_cuGraphLaunch;
    cuGraphUpload: PFN_cuGraphUpload;
    cuGraphUpload_ptsz: PFN_cuGraphUpload;
    cuMemcpy2D_v2: PFN_cuMemcpy2D_v2;
    cuMemcpy2D_v2_ptds: PFN_cuMemcpy2D_v2;
    cuMemcpy2DUnaligned_v2: PFN_cuMemcpy2DUnaligned_v2;
    cuMemcpy2DUnaligned_v2_ptds: PFN_cuMemcpy2DUnaligned_v2;
    cuMemcpy2DAsync_v2: PFN_cuMemcpy2DAsync_v2;
    cuMemcpy2DAsync_v2_ptsz: PFN_cuMemcpy2DAsync_v2;
    cuMemcpy3D_v2: PFN_cuMemcpy3D_v2;
    cuMemcpy3D_v2_ptds: PFN_cuMemcpy3D_v2;
    cuMemcpy3DAsync_v2: PFN_cuMemcpy3DAsync_v2;
    cuMemcpy3DAsync_v2_ptsz: PFN_cuMemcpy3DAsync_v2;
    cuMemcpyPeer: PFN_cuMemcpyPeer;
    cuMemcpyPeer_ptds: PFN_cuMemcpyPeer;
    cuMemcpyPeerAsync: PFN_cuMemcpyPeerAsync;
    cuMemcpyPeerAsync_ptsz: PFN_cuMemcpyPeerAsync;
    cuMemsetD2D8Async: PFN_cuMemsetD2D8Async;
    cuMemsetD2D8Async_ptsz: PFN_cuMemsetD2D8Async;
    cuMemsetD2D16Async: PFN_cuMemsetD2D16Async;
    cuMemsetD2D16Async_ptsz: PFN_cuMemsetD2D16Async;
    cuMemsetD2D32Async: PFN_cuMemsetD2D32Async;
    cuMemsetD2D32Async_ptsz: PFN_cuMemsetD2D32Async;
    cuMemPrefetchAsync: PFN_cuMemPrefetchAsync;
    cuMemPrefetchAsync_ptsz: PFN_cuMemPrefetchAsync;
    cuStreamWaitValue64_v2: PFN_cuStreamWaitValue64_v2;
    cuStreamWaitValue64_v2_ptsz: PFN_cuStreamWaitValue64_v2;
    cuStreamWriteValue64_v2: PFN_cuStreamWriteValue64_v2;
    cuStreamWriteValue64_v2_ptsz: PFN_cuStreamWriteValue64_v2;
    cuStreamBatchMemOp_v2: PFN_cuStreamBatchMemOp_v2;
    cuStreamBatchMemOp_v2_ptsz: PFN_cuStreamBatchMemOp_v2;
    cuGraphExecKernelNodeSetParams: PFN_cuGraphExecKernelNodeSetParams;
    cuGraphExecKernelNodeSetParams_v2: PFN_cuGraphExecKernelNodeSetParams;
    cuGraphExecMemcpyNodeSetParams: PFN_cuGraphExecMemcpyNodeSetParams;
    cuGraphExecMemsetNodeSetParams: PFN_cuGraphExecMemsetNodeSetParams;
    cuGraphExecHostNodeSetParams: PFN_cuGraphExecHostNodeSetParams;
    cuGraphExecChildGraphNodeSetParams: PFN_cuGraphExecChildGraphNodeSetParams;
    cuGraphExecEventRecordNodeSetEvent: PFN_cuGraphExecEventNodeSetEvent;
    cuGraphExecEventWaitNodeSetEvent: PFN_cuGraphExecEventNodeSetEvent;
    cuGraphExecNodeSetParams: PFN_cuGraphExecNodeSetParams;
    cuGraphNodeSetEnabled: PFN_cuGraphNodeSetEnabled;
    cuGraphExecUpdate: PFN_cuGraphExecUpdate;
    cuGraphExecUpdate_v2: PFN_cuGraphExecUpdate_v2;
    cuGraphExecDestroy: PFN_cuGraphExecDestroy;
    cuModuleUnload: PFN_cuModuleUnload;
    cuModuleLoad: PFN_cuModuleLoad;
    cuModuleLoadDataEx: PFN_cuModuleLoadDataEx;
    cuModuleLoadFatBinary: PFN_cuModuleLoadFatBinary;
    cuLibraryLoadData: PFN_cuLibraryLoadData;
    cuLibraryLoadFromFile: PFN_cuLibraryLoadFromFile;
    cuMemFree_v2: PFN_cuMemFree_v2;
    cuMemHostUnregister: PFN_cuMemHostUnregister;
    cuLibraryUnload: PFN_cuLibraryUnload;
    cuMemAlloc_v2: PFN_cuMemAlloc_v2;
    cuStreamWaitValue32: PFN_cuStreamWaitValue32;
    cuStreamWaitValue32_ptsz: PFN_cuStreamWaitValue32;
    cuStreamWriteValue32: PFN_cuStreamWriteValue32;
    cuStreamWriteValue32_ptsz: PFN_cuStreamWriteValue32;
    cuStreamWaitValue64: PFN_cuStreamWaitValue64;
    cuStreamWaitValue64_ptsz: PFN_cuStreamWaitValue64;
    cuStreamWriteValue64: PFN_cuStreamWriteValue64;
    cuStreamWriteValue64_ptsz: PFN_cuStreamWriteValue64;
    cuStreamBatchMemOp: PFN_cuStreamBatchMemOp;
    cuStreamBatchMemOp_ptsz: PFN_cuStreamBatchMemOp;
    cuMemPrefetchAsync_v2: PFN_cuMemPrefetchAsync_v2;
    cuMemPrefetchAsync_v2_ptsz: PFN_cuMemPrefetchAsync_v2;
    cuMemPrefetchBatchAsync: PFN_cuMemPrefetchBatchAsync;
    cuMemPrefetchBatchAsync_ptsz: PFN_cuMemPrefetchBatchAsync;
    cuMemDiscardBatchAsync: PFN_cuMemDiscardBatchAsync;
    cuMemDiscardBatchAsync_ptsz: PFN_cuMemDiscardBatchAsync;
    cuMemDiscardAndPrefetchBatchAsync: PFN_cuMemDiscardAndPrefetchBatchAsync;
    cuMemDiscardAndPrefetchBatchAsync_ptsz: PFN_cuMemDiscardAndPrefetchBatchAsync;
    cuMemcpyBatchAsync: PFN_cuMemcpyBatchAsync;
    cuMemcpyBatchAsync_ptsz: PFN_cuMemcpyBatchAsync;
    cuMemcpyBatchAsync_v2: PFN_cuMemcpyBatchAsync_v2;
    cuMemcpyBatchAsync_v2_ptsz: PFN_cuMemcpyBatchAsync_v2;
    cuMemcpy3DBatchAsync: PFN_cuMemcpy3DBatchAsync;
    cuMemcpy3DBatchAsync_ptsz: PFN_cuMemcpy3DBatchAsync;
    cuMemcpy3DBatchAsync_v2: PFN_cuMemcpy3DBatchAsync_v2;
    cuMemcpy3DBatchAsync_v2_ptsz: PFN_cuMemcpy3DBatchAsync_v2;
    cuMemBatchDecompressAsync: PFN_cuMemBatchDecompressAsync;
    cuMemBatchDecompressAsync_ptsz: PFN_cuMemBatchDecompressAsync;
    cuMemMapArrayAsync: PFN_cuMemMapArrayAsync;
    cuMemMapArrayAsync_ptsz: PFN_cuMemMapArrayAsync;
    cuMemcpy3DPeerAsync: PFN_cuMemcpy3DPeerAsync;
    cuMemcpy3DPeerAsync_ptsz: PFN_cuMemcpy3DPeerAsync;
    cuMemcpy3DPeer: PFN_cuMemcpy3DPeer;
    cuMemcpy3DPeer_ptds: PFN_cuMemcpy3DPeer;
    cuMemcpyAtoHAsync_v2: PFN_cuMemcpyAtoHAsync_v2;
    cuMemcpyAtoHAsync_v2_ptsz: PFN_cuMemcpyAtoHAsync_v2;
    cuMemcpyHtoAAsync_v2: PFN_cuMemcpyHtoAAsync_v2;
    cuMemcpyHtoAAsync_v2_ptsz: PFN_cuMemcpyHtoAAsync_v2;
    cuMemcpyAtoH_v2: PFN_cuMemcpyAtoH_v2;
    cuMemcpyAtoH_v2_ptds: PFN_cuMemcpyAtoH_v2;
    cuMemcpyHtoA_v2: PFN_cuMemcpyHtoA_v2;
    cuMemcpyHtoA_v2_ptds: PFN_cuMemcpyHtoA_v2;
    cuMemcpyDtoA_v2: PFN_cuMemcpyDtoA_v2;
    cuMemcpyDtoA_v2_ptds: PFN_cuMemcpyDtoA_v2;
    cuMemcpyAtoD_v2: PFN_cuMemcpyAtoD_v2;
    cuMemcpyAtoD_v2_ptds: PFN_cuMemcpyAtoD_v2;
    cuMemcpyAtoA_v2: PFN_cuMemcpyAtoA_v2;
    cuMemcpyAtoA_v2_ptds: PFN_cuMemcpyAtoA_v2;
    cuMemsetD2D8_v2: PFN_cuMemsetD2D8_v2;
    cuMemsetD2D8_v2_ptds: PFN_cuMemsetD2D8_v2;
    cuMemsetD2D16_v2: PFN_cuMemsetD2D16_v2;
    cuMemsetD2D16_v2_ptds: PFN_cuMemsetD2D16_v2;
    cuMemsetD2D32_v2: PFN_cuMemsetD2D32_v2;
    cuMemsetD2D32_v2_ptds: PFN_cuMemsetD2D32_v2;
    cuMemAllocFromPoolAsync: PFN_cuMemAllocFromPoolAsync;
    cuMemAllocFromPoolAsync_ptsz: PFN_cuMemAllocFromPoolAsync;
    cuSignalExternalSemaphoresAsync: PFN_cuSignalExternalSemaphoresAsync;
    cuSignalExternalSemaphoresAsync_ptsz: PFN_cuSignalExternalSemaphoresAsync;
    cuWaitExternalSemaphoresAsync: PFN_cuWaitExternalSemaphoresAsync;
    cuWaitExternalSemaphoresAsync_ptsz: PFN_cuWaitExternalSemaphoresAsync;
    cuStreamAttachMemAsync: PFN_cuStreamAttachMemAsync;
    cuStreamAttachMemAsync_ptsz: PFN_cuStreamAttachMemAsync;
    cuGraphicsMapResources: PFN_cuGraphicsMapResources;
    cuGraphicsMapResources_ptsz: PFN_cuGraphicsMapResources;
    cuGraphicsUnmapResources: PFN_cuGraphicsUnmapResources;
    cuGraphicsUnmapResources_ptsz: PFN_cuGraphicsUnmapResources;
    cuGraphInstantiateWithParams: PFN_cuGraphInstantiateWithParams;
    cuGraphInstantiateWithParams_ptsz: PFN_cuGraphInstantiateWithParams;
    cuLaunchGridAsync: PFN_cuLaunchGridAsync;
    cuFuncGetName: PFN_cuFuncGetName;
    cuFuncGetAttribute: PFN_cuFuncGetAttribute;
    cuFuncSetAttribute: PFN_cuFuncSetAttribute;
    cuKernelGetAttribute: PFN_cuKernelGetAttribute;
    cuKernelSetAttribute: PFN_cuKernelSetAttribute;
    cuKernelGetName: PFN_cuKernelGetName;
    cuKernelGetFunction: PFN_cuKernelGetFunction;
    cuStreamGetAttribute: PFN_cuStreamGetAttribute;
    cuStreamGetAttribute_ptsz: PFN_cuStreamGetAttribute;
    cuStreamSetAttribute: PFN_cuStreamSetAttribute;
    cuStreamSetAttribute_ptsz: PFN_cuStreamSetAttribute;
    cuStreamCopyAttributes: PFN_cuStreamCopyAttributes;
    cuStreamCopyAttributes_ptsz: PFN_cuStreamCopyAttributes;
    cuMemcpyWithAttributesAsync: PFN_cuMemcpyWithAttributesAsync;
    cuMemcpy3DWithAttributesAsync: PFN_cuMemcpy3DWithAttributesAsync;
    cuLaunchHostFunc_v2: PFN_cuLaunchHostFunc_v2;
    cuLaunchCooperativeKernelMultiDevice: PFN_cuLaunchCooperativeKernelMultiDevice;
    cuCtxRecordEvent: PFN_cuCtxRecordEvent;
    cuCtxWaitEvent: PFN_cuCtxWaitEvent;
    cuGreenCtxRecordEvent: PFN_cuGreenCtxRecordEvent;
    cuGreenCtxWaitEvent: PFN_cuGreenCtxWaitEvent;
    cuStreamGetCaptureInfo: PFN_cuStreamGetCaptureInfo;
    cuStreamGetCaptureInfo_ptsz: PFN_cuStreamGetCaptureInfo;
    cuStreamGetCaptureInfo_v2: PFN_cuStreamGetCaptureInfo_v2;
    cuStreamGetCaptureInfo_v2_ptsz: PFN_cuStreamGetCaptureInfo_v2;
    cuStreamGetCaptureInfo_v3: PFN_cuStreamGetCaptureInfo_v3;
    cuStreamGetCaptureInfo_v3_ptsz: PFN_cuStreamGetCaptureInfo_v3;
    cuStreamUpdateCaptureDependencies: PFN_cuStreamUpdateCaptureDependencies;
    cuStreamUpdateCaptureDependencies_ptsz: PFN_cuStreamUpdateCaptureDependencies;
    cuStreamUpdateCaptureDependencies_v2: PFN_cuStreamUpdateCaptureDependencies_v2;
    cuStreamUpdateCaptureDependencies_v2_ptsz: PFN_cuStreamUpdateCaptureDependencies_v2;
}

/// Opens the CUDA driver library: `path` if given (it must be absolute), otherwise
/// `libcuda.so.1` as the dynamic loader finds it. Reuses the copy already loaded if there is one.
/// Returns the `dlopen` handle, once the library is seen to export `cuInit` (a library that
/// opens but is no driver is refused, so nothing is ever forwarded into it).
pub fn open_library(path: Option<&Path>) -> Result<*mut c_void, LibraryError> {
    let name = match path {
        Some(p) => std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
            .map_err(|_| LibraryError::NulInPath(p.to_path_buf()))?,
        None => c"libcuda.so.1".to_owned(),
    };
    // SAFETY: `name` is a valid C string; dlopen has no other preconditions.
    let mut h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if h.is_null() {
        // SAFETY: as above.
        h = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    }
    if h.is_null() {
        // SAFETY: dlerror returns null or a valid C string owned by libc.
        let why = unsafe { libc::dlerror() };
        let why = if why.is_null() {
            "unknown reason".to_string()
        } else {
            // SAFETY: non-null dlerror results are valid C strings.
            unsafe { CStr::from_ptr(why) }
                .to_string_lossy()
                .into_owned()
        };
        return Err(LibraryError::Open {
            name: name.to_string_lossy().into_owned(),
            why,
        });
    }
    // SAFETY: `h` is a live handle from dlopen and the name a valid C string.
    if unsafe { libc::dlsym(h, c"cuInit".as_ptr()) }.is_null() {
        // SAFETY: `h` came from a successful dlopen above and is not used again.
        unsafe { libc::dlclose(h) };
        return Err(LibraryError::NotADriver {
            name: name.to_string_lossy().into_owned(),
        });
    }
    Ok(h)
}

/// `CU_POINTER_ATTRIBUTE_MEMORY_TYPE`.
const POINTER_MEMORY_TYPE: c_uint = 2;
/// `CU_MEMORYTYPE_HOST`.
const MEMORYTYPE_HOST: c_uint = 1;
/// `CU_MEMORYTYPE_DEVICE`.
const MEMORYTYPE_DEVICE: c_uint = 2;
/// `CU_MEMORYTYPE_UNIFIED`.
const MEMORYTYPE_UNIFIED: c_uint = 4;

impl Driver {
    /// Whether `ptr` is memory the driver knows — device, managed or page-locked host memory —
    /// as opposed to pageable host memory an application may reuse the moment an asynchronous
    /// copy call returns. `false` when the driver cannot tell.
    pub fn is_driver_memory(&self, ptr: CUdeviceptr) -> bool {
        let Some(get) = self.cuPointerGetAttribute else {
            return false;
        };
        let mut kind: c_uint = 0;
        // SAFETY: `kind` is a valid out-pointer of the attribute's type; any address may be
        // asked about (unknown ones return an error).
        let r = unsafe { get((&mut kind as *mut c_uint).cast(), POINTER_MEMORY_TYPE, ptr) };
        r.is_success()
            && matches!(
                kind,
                MEMORYTYPE_HOST | MEMORYTYPE_DEVICE | MEMORYTYPE_UNIFIED
            )
    }

    /// Puts the calling thread in relaxed stream-capture mode: the application's captures, in
    /// whatever mode, then never forbid it the calls that are merely "potentially unsafe"
    /// during a capture (querying or synchronizing other streams and events, allocating).
    /// Measured on an H100 (`scripts/gpu/transparency/capture_probe.cu`): while any thread
    /// captures in global mode, such a call from a thread in the default mode fails and
    /// invalidates the capture; from a relaxed thread it succeeds. For Baton's own threads, which act for the
    /// application at moments it did not choose.
    pub fn relax_capture_mode(&self) {
        if let Some(exchange) = self.cuThreadExchangeStreamCaptureMode {
            let mut mode = CU_STREAM_CAPTURE_MODE_RELAXED;
            // SAFETY: `mode` is a valid in/out pointer.
            let _ = unsafe { exchange(&mut mode) };
        }
    }

    /// The entry point called `name`, or the error a call to it would give.
    pub fn require<F: Copy>(f: Option<F>, name: &'static str) -> Result<F, DriverError> {
        f.ok_or(DriverError {
            code: CUresult::NOT_FOUND,
            call: name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolving_from_nothing_gives_empty_entries() {
        // SAFETY: the lookup returns null for everything, which is always allowed.
        let d = unsafe { Driver::resolve(|_| std::ptr::null_mut()) };
        assert!(d.cuLaunchKernel.is_none());
        let err = Driver::require(d.cuLaunchKernel, "cuLaunchKernel").unwrap_err();
        assert_eq!(err.code, CUresult::NOT_FOUND);
        assert!(Driver::NAMES.contains(&"cuLaunchKernel_ptsz"));
    }

    #[test]
    fn a_missing_library_is_an_error_not_a_panic() {
        use std::os::unix::ffi::OsStrExt;
        let e = open_library(Some(Path::new("/nonexistent/libcuda.so.1"))).unwrap_err();
        assert!(matches!(e, LibraryError::Open { .. }), "{e:?}");
        assert!(e.to_string().contains("cannot open the CUDA driver"), "{e}");
        // A library that opens but is no driver (the C maths library).
        let e = open_library(Some(Path::new("libm.so.6"))).unwrap_err();
        assert_eq!(
            e,
            LibraryError::NotADriver {
                name: "libm.so.6".into()
            }
        );
        let nul = std::ffi::OsStr::from_bytes(b"/a\0b");
        assert_eq!(
            open_library(Some(Path::new(nul))).unwrap_err(),
            LibraryError::NulInPath(nul.into())
        );
    }
}
