//! Function-pointer types of the driver symbols Baton uses, one per exported symbol name.
//!
//! `PFN_cuX` is the C signature of the symbol `cuX`; its `_ptsz`/`_ptds` variant (the
//! per-thread-default-stream form) has the same type. Version-1 symbols keep their original
//! 32-bit types (`cuMemAlloc` takes a [`CUdeviceptr_v1`] and an `unsigned int` size), which is why
//! applications ask for `cuMemAlloc_v2` by name or get it from `cuGetProcAddress`. Each doc line
//! gives the CUDA version from which `cuGetProcAddress` returns that symbol for its base name.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_float, c_int, c_uint, c_ulonglong, c_ushort, c_void};

use crate::{
    CUDA_GRAPH_INSTANTIATE_PARAMS, CUcontext, CUctxCreateParams, CUdevResource, CUdevResourceDesc,
    CUdevice, CUdevice_attribute, CUdeviceptr, CUdeviceptr_v1, CUdriverProcAddressQueryResult,
    CUevent, CUexecAffinityParam, CUfunction, CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphNode,
    CUgreenCtx, CUhostFn, CUjit_option, CUkernel, CUlaunchConfig, CUlibrary, CUlibraryOption,
    CUmemLocation, CUmemoryPool, CUmodule, CUresult, CUstream, CUstreamCallback,
    CUstreamCaptureMode, CUstreamCaptureStatus, CUuuid, cuuint32_t, cuuint64_t,
};

macro_rules! pfn {
    ($($(#[doc = $doc:literal])* $name:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        $(#[doc = $doc])*
        pub type $name = unsafe extern "C" fn($($arg: $ty),*) -> CUresult;
    )*};
}

pfn! {
    /// `cuGetErrorString` (6.0).
    PFN_cuGetErrorString(error: CUresult, pStr: *mut *const c_char);
    /// `cuGetErrorName` (6.0).
    PFN_cuGetErrorName(error: CUresult, pStr: *mut *const c_char);
    /// `cuInit` (2.0).
    PFN_cuInit(Flags: c_uint);
    /// `cuDriverGetVersion` (2.2).
    PFN_cuDriverGetVersion(driverVersion: *mut c_int);
    /// `cuGetExportTable` (3.0).
    PFN_cuGetExportTable(ppExportTable: *mut *const c_void, pExportTableId: *const CUuuid);
    /// `cuGetProcAddress` (11.3): the version-1 form, without `symbolStatus`.
    PFN_cuGetProcAddress(symbol: *const c_char, pfn: *mut *mut c_void, cudaVersion: c_int, flags: cuuint64_t);
    /// `cuGetProcAddress_v2` (12.0).
    PFN_cuGetProcAddress_v2(
        symbol: *const c_char,
        pfn: *mut *mut c_void,
        cudaVersion: c_int,
        flags: cuuint64_t,
        symbolStatus: *mut CUdriverProcAddressQueryResult,
    );

    /// `cuDeviceGet` (2.0).
    PFN_cuDeviceGet(device: *mut CUdevice, ordinal: c_int);
    /// `cuDeviceGetCount` (2.0).
    PFN_cuDeviceGetCount(count: *mut c_int);
    /// `cuDeviceGetUuid` (9.2): the physical GPU's UUID, even for a MIG instance.
    PFN_cuDeviceGetUuid(uuid: *mut CUuuid, dev: CUdevice);
    /// `cuDeviceGetUuid_v2` (11.4).
    PFN_cuDeviceGetUuid_v2(uuid: *mut CUuuid, dev: CUdevice);
    /// `cuDeviceGetName` (2.0).
    PFN_cuDeviceGetName(name: *mut c_char, len: c_int, dev: CUdevice);
    /// `cuDeviceGetAttribute` (2.0).
    PFN_cuDeviceGetAttribute(pi: *mut c_int, attrib: CUdevice_attribute, dev: CUdevice);
    /// `cuDeviceTotalMem_v2` (3.2).
    PFN_cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice);
    /// `cuDevicePrimaryCtxRetain` (7.0).
    PFN_cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice);
    /// `cuDevicePrimaryCtxRelease` (7.0).
    PFN_cuDevicePrimaryCtxRelease(dev: CUdevice);
    /// `cuDevicePrimaryCtxRelease_v2` (11.0).
    PFN_cuDevicePrimaryCtxRelease_v2(dev: CUdevice);
    /// `cuDevicePrimaryCtxGetState` (7.0).
    PFN_cuDevicePrimaryCtxGetState(dev: CUdevice, flags: *mut c_uint, active: *mut c_int);

    /// `cuCtxCreate` (2.0).
    PFN_cuCtxCreate(pctx: *mut CUcontext, flags: c_uint, dev: CUdevice);
    /// `cuCtxCreate_v2` (3.2).
    PFN_cuCtxCreate_v2(pctx: *mut CUcontext, flags: c_uint, dev: CUdevice);
    /// `cuCtxCreate_v3` (11.4).
    PFN_cuCtxCreate_v3(
        pctx: *mut CUcontext,
        paramsArray: *mut CUexecAffinityParam,
        numParams: c_int,
        flags: c_uint,
        dev: CUdevice,
    );
    /// `cuCtxCreate_v4` (12.5).
    PFN_cuCtxCreate_v4(pctx: *mut CUcontext, ctxCreateParams: *mut CUctxCreateParams, flags: c_uint, dev: CUdevice);
    /// `cuCtxDestroy` (2.0).
    PFN_cuCtxDestroy(ctx: CUcontext);
    /// `cuCtxDestroy_v2` (4.0).
    PFN_cuCtxDestroy_v2(ctx: CUcontext);
    /// `cuCtxPushCurrent` (2.0).
    PFN_cuCtxPushCurrent(ctx: CUcontext);
    /// `cuCtxPushCurrent_v2` (4.0).
    PFN_cuCtxPushCurrent_v2(ctx: CUcontext);
    /// `cuCtxPopCurrent` (2.0).
    PFN_cuCtxPopCurrent(pctx: *mut CUcontext);
    /// `cuCtxPopCurrent_v2` (4.0).
    PFN_cuCtxPopCurrent_v2(pctx: *mut CUcontext);
    /// `cuCtxSetCurrent` (4.0).
    PFN_cuCtxSetCurrent(ctx: CUcontext);
    /// `cuCtxGetCurrent` (4.0).
    PFN_cuCtxGetCurrent(pctx: *mut CUcontext);
    /// `cuCtxGetDevice` (2.0).
    PFN_cuCtxGetDevice(device: *mut CUdevice);
    /// `cuCtxSynchronize` (2.0).
    PFN_cuCtxSynchronize();
    /// `cuCtxSynchronize_v2` (13.0): the given context (the current one if NULL).
    PFN_cuCtxSynchronize_v2(ctx: CUcontext);
    /// `cuCtxGetStreamPriorityRange` (5.5).
    PFN_cuCtxGetStreamPriorityRange(leastPriority: *mut c_int, greatestPriority: *mut c_int);

    /// `cuMemGetInfo_v2` (3.2).
    PFN_cuMemGetInfo_v2(free: *mut usize, total: *mut usize);
    /// `cuMemAlloc` (2.0): 32-bit address and size.
    PFN_cuMemAlloc(dptr: *mut CUdeviceptr_v1, bytesize: c_uint);
    /// `cuMemAlloc_v2` (3.2).
    PFN_cuMemAlloc_v2(dptr: *mut CUdeviceptr, bytesize: usize);
    /// `cuMemFree` (2.0): 32-bit address.
    PFN_cuMemFree(dptr: CUdeviceptr_v1);
    /// `cuMemFree_v2` (3.2).
    PFN_cuMemFree_v2(dptr: CUdeviceptr);
    /// `cuMemAllocHost` (2.0): 32-bit size.
    PFN_cuMemAllocHost(pp: *mut *mut c_void, bytesize: c_uint);
    /// `cuMemAllocHost_v2` (3.2).
    PFN_cuMemAllocHost_v2(pp: *mut *mut c_void, bytesize: usize);
    /// `cuMemFreeHost` (2.0).
    PFN_cuMemFreeHost(p: *mut c_void);
    /// `cuMemHostAlloc` (2.2).
    PFN_cuMemHostAlloc(pp: *mut *mut c_void, bytesize: usize, Flags: c_uint);
    /// `cuMemHostGetDevicePointer_v2` (3.2).
    PFN_cuMemHostGetDevicePointer_v2(pdptr: *mut CUdeviceptr, p: *mut c_void, Flags: c_uint);
    /// `cuMemAllocAsync` (11.2), and `_ptsz`.
    PFN_cuMemAllocAsync(dptr: *mut CUdeviceptr, bytesize: usize, hStream: CUstream);
    /// `cuMemFreeAsync` (11.2), and `_ptsz`.
    PFN_cuMemFreeAsync(dptr: CUdeviceptr, hStream: CUstream);

    /// `cuMemcpy` (4.0), and `_ptds`.
    PFN_cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, ByteCount: usize);
    /// `cuMemcpyAsync` (4.0), and `_ptsz`.
    PFN_cuMemcpyAsync(dst: CUdeviceptr, src: CUdeviceptr, ByteCount: usize, hStream: CUstream);
    /// `cuMemcpyHtoD` (2.0): 32-bit address and size.
    PFN_cuMemcpyHtoD(dstDevice: CUdeviceptr_v1, srcHost: *const c_void, ByteCount: c_uint);
    /// `cuMemcpyHtoD_v2` (3.2), and `_v2_ptds`.
    PFN_cuMemcpyHtoD_v2(dstDevice: CUdeviceptr, srcHost: *const c_void, ByteCount: usize);
    /// `cuMemcpyDtoH` (2.0): 32-bit address and size.
    PFN_cuMemcpyDtoH(dstHost: *mut c_void, srcDevice: CUdeviceptr_v1, ByteCount: c_uint);
    /// `cuMemcpyDtoH_v2` (3.2), and `_v2_ptds`.
    PFN_cuMemcpyDtoH_v2(dstHost: *mut c_void, srcDevice: CUdeviceptr, ByteCount: usize);
    /// `cuMemcpyDtoD` (2.0): 32-bit addresses and size.
    PFN_cuMemcpyDtoD(dstDevice: CUdeviceptr_v1, srcDevice: CUdeviceptr_v1, ByteCount: c_uint);
    /// `cuMemcpyDtoD_v2` (3.2), and `_v2_ptds`.
    PFN_cuMemcpyDtoD_v2(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, ByteCount: usize);
    /// `cuMemcpyHtoDAsync` (2.0): 32-bit address and size.
    PFN_cuMemcpyHtoDAsync(dstDevice: CUdeviceptr_v1, srcHost: *const c_void, ByteCount: c_uint, hStream: CUstream);
    /// `cuMemcpyHtoDAsync_v2` (3.2), and `_v2_ptsz`.
    PFN_cuMemcpyHtoDAsync_v2(dstDevice: CUdeviceptr, srcHost: *const c_void, ByteCount: usize, hStream: CUstream);
    /// `cuMemcpyDtoHAsync` (2.0): 32-bit address and size.
    PFN_cuMemcpyDtoHAsync(dstHost: *mut c_void, srcDevice: CUdeviceptr_v1, ByteCount: c_uint, hStream: CUstream);
    /// `cuMemcpyDtoHAsync_v2` (3.2), and `_v2_ptsz`.
    PFN_cuMemcpyDtoHAsync_v2(dstHost: *mut c_void, srcDevice: CUdeviceptr, ByteCount: usize, hStream: CUstream);
    /// `cuMemcpyDtoDAsync` (3.0): 32-bit addresses and size.
    PFN_cuMemcpyDtoDAsync(dstDevice: CUdeviceptr_v1, srcDevice: CUdeviceptr_v1, ByteCount: c_uint, hStream: CUstream);
    /// `cuMemcpyDtoDAsync_v2` (3.2), and `_v2_ptsz`.
    PFN_cuMemcpyDtoDAsync_v2(dstDevice: CUdeviceptr, srcDevice: CUdeviceptr, ByteCount: usize, hStream: CUstream);
    /// `cuMemsetD8` (2.0): 32-bit address and count.
    PFN_cuMemsetD8(dstDevice: CUdeviceptr_v1, uc: u8, N: c_uint);
    /// `cuMemsetD8_v2` (3.2), and `_v2_ptds`.
    PFN_cuMemsetD8_v2(dstDevice: CUdeviceptr, uc: u8, N: usize);
    /// `cuMemsetD16` (2.0): 32-bit address and count.
    PFN_cuMemsetD16(dstDevice: CUdeviceptr_v1, us: c_ushort, N: c_uint);
    /// `cuMemsetD16_v2` (3.2), and `_v2_ptds`.
    PFN_cuMemsetD16_v2(dstDevice: CUdeviceptr, us: c_ushort, N: usize);
    /// `cuMemsetD32` (2.0): 32-bit address and count.
    PFN_cuMemsetD32(dstDevice: CUdeviceptr_v1, ui: c_uint, N: c_uint);
    /// `cuMemsetD32_v2` (3.2), and `_v2_ptds`.
    PFN_cuMemsetD32_v2(dstDevice: CUdeviceptr, ui: c_uint, N: usize);
    /// `cuMemsetD8Async` (3.2), and `_ptsz`.
    PFN_cuMemsetD8Async(dstDevice: CUdeviceptr, uc: u8, N: usize, hStream: CUstream);
    /// `cuMemsetD16Async` (3.2), and `_ptsz`.
    PFN_cuMemsetD16Async(dstDevice: CUdeviceptr, us: c_ushort, N: usize, hStream: CUstream);
    /// `cuMemsetD32Async` (3.2), and `_ptsz`.
    PFN_cuMemsetD32Async(dstDevice: CUdeviceptr, ui: c_uint, N: usize, hStream: CUstream);

    /// `cuModuleLoadData` (2.0).
    PFN_cuModuleLoadData(module: *mut CUmodule, image: *const c_void);
    /// `cuModuleGetFunction` (2.0).
    PFN_cuModuleGetFunction(hfunc: *mut CUfunction, hmod: CUmodule, name: *const c_char);
    /// `cuModuleUnload` (2.0).
    PFN_cuModuleUnload(hmod: CUmodule);
    /// `cuLibraryLoadData` (12.0).
    PFN_cuLibraryLoadData(
        library: *mut CUlibrary,
        code: *const c_void,
        jitOptions: *mut CUjit_option,
        jitOptionsValues: *mut *mut c_void,
        numJitOptions: c_uint,
        libraryOptions: *mut CUlibraryOption,
        libraryOptionValues: *mut *mut c_void,
        numLibraryOptions: c_uint,
    );
    /// `cuModuleLoad` (2.0).
    PFN_cuModuleLoad(module: *mut CUmodule, fname: *const c_char);
    /// `cuModuleLoadDataEx` (2.1).
    PFN_cuModuleLoadDataEx(module: *mut CUmodule, image: *const c_void, numOptions: c_uint, options: *mut CUjit_option, optionValues: *mut *mut c_void);
    /// `cuModuleLoadFatBinary` (2.0).
    PFN_cuModuleLoadFatBinary(module: *mut CUmodule, fatCubin: *const c_void);
    /// `cuLibraryLoadFromFile` (12.0).
    PFN_cuLibraryLoadFromFile(
        library: *mut CUlibrary,
        fileName: *const c_char,
        jitOptions: *mut CUjit_option,
        jitOptionsValues: *mut *mut c_void,
        numJitOptions: c_uint,
        libraryOptions: *mut CUlibraryOption,
        libraryOptionValues: *mut *mut c_void,
        numLibraryOptions: c_uint,
    );
    /// `cuMemHostUnregister` (4.0).
    PFN_cuMemHostUnregister(p: *mut c_void);
    /// `cuLibraryUnload` (12.0).
    PFN_cuLibraryUnload(library: CUlibrary);
    /// `cuLibraryGetKernel` (12.0).
    PFN_cuLibraryGetKernel(pKernel: *mut CUkernel, library: CUlibrary, name: *const c_char);
    /// `cuKernelGetFunction` (12.0).
    PFN_cuKernelGetFunction(pFunc: *mut CUfunction, kernel: CUkernel);
    /// `cuKernelGetName` (12.3).
    PFN_cuKernelGetName(name: *mut *const c_char, hfunc: CUkernel);
    /// `cuKernelGetParamInfo` (12.4).
    PFN_cuKernelGetParamInfo(kernel: CUkernel, paramIndex: usize, paramOffset: *mut usize, paramSize: *mut usize);
    /// `cuFuncGetName` (12.3).
    PFN_cuFuncGetName(name: *mut *const c_char, hfunc: CUfunction);
    /// `cuFuncGetParamInfo` (12.4).
    PFN_cuFuncGetParamInfo(func: CUfunction, paramIndex: usize, paramOffset: *mut usize, paramSize: *mut usize);

    /// `cuLaunchKernel` (4.0), and `_ptsz`.
    PFN_cuLaunchKernel(
        f: CUfunction,
        gridDimX: c_uint,
        gridDimY: c_uint,
        gridDimZ: c_uint,
        blockDimX: c_uint,
        blockDimY: c_uint,
        blockDimZ: c_uint,
        sharedMemBytes: c_uint,
        hStream: CUstream,
        kernelParams: *mut *mut c_void,
        extra: *mut *mut c_void,
    );
    /// `cuLaunchKernelEx` (11.6), and `_ptsz`.
    PFN_cuLaunchKernelEx(config: *const CUlaunchConfig, f: CUfunction, kernelParams: *mut *mut c_void, extra: *mut *mut c_void);
    /// `cuLaunchCooperativeKernel` (9.0), and `_ptsz`.
    PFN_cuLaunchCooperativeKernel(
        f: CUfunction,
        gridDimX: c_uint,
        gridDimY: c_uint,
        gridDimZ: c_uint,
        blockDimX: c_uint,
        blockDimY: c_uint,
        blockDimZ: c_uint,
        sharedMemBytes: c_uint,
        hStream: CUstream,
        kernelParams: *mut *mut c_void,
    );
    /// `cuLaunchHostFunc` (10.0), and `_ptsz`.
    PFN_cuLaunchHostFunc(hStream: CUstream, fn_: CUhostFn, userData: *mut c_void);

    /// `cuStreamCreate` (2.0).
    PFN_cuStreamCreate(phStream: *mut CUstream, Flags: c_uint);
    /// `cuStreamCreateWithPriority` (5.5).
    PFN_cuStreamCreateWithPriority(phStream: *mut CUstream, flags: c_uint, priority: c_int);
    /// `cuStreamDestroy` (2.0).
    PFN_cuStreamDestroy(hStream: CUstream);
    /// `cuStreamDestroy_v2` (4.0).
    PFN_cuStreamDestroy_v2(hStream: CUstream);
    /// `cuStreamSynchronize` (2.0), and `_ptsz`.
    PFN_cuStreamSynchronize(hStream: CUstream);
    /// `cuStreamQuery` (2.0), and `_ptsz`.
    PFN_cuStreamQuery(hStream: CUstream);
    /// `cuStreamWaitEvent` (3.2), and `_ptsz`.
    PFN_cuStreamWaitEvent(hStream: CUstream, hEvent: CUevent, Flags: c_uint);
    /// `cuStreamGetPriority` (5.5), and `_ptsz`.
    PFN_cuStreamGetPriority(hStream: CUstream, priority: *mut c_int);
    /// `cuStreamGetFlags` (5.5), and `_ptsz`.
    PFN_cuStreamGetFlags(hStream: CUstream, flags: *mut c_uint);
    /// `cuStreamGetCtx` (9.2), and `_ptsz`.
    PFN_cuStreamGetCtx(hStream: CUstream, pctx: *mut CUcontext);
    /// `cuStreamGetCtx_v2` (12.5), and `_v2_ptsz`.
    PFN_cuStreamGetCtx_v2(hStream: CUstream, pCtx: *mut CUcontext, pGreenCtx: *mut CUgreenCtx);
    /// `cuDeviceGetDevResource` (12.4).
    PFN_cuDeviceGetDevResource(device: CUdevice, resource: *mut CUdevResource, type_: c_uint);
    /// `cuDevSmResourceSplitByCount` (12.4).
    PFN_cuDevSmResourceSplitByCount(result: *mut CUdevResource, nbGroups: *mut c_uint, input: *const CUdevResource, remaining: *mut CUdevResource, useFlags: c_uint, minCount: c_uint);
    /// `cuDevResourceGenerateDesc` (12.4).
    PFN_cuDevResourceGenerateDesc(phDesc: *mut CUdevResourceDesc, resources: *mut CUdevResource, nbResources: c_uint);
    /// `cuGreenCtxCreate` (12.4).
    PFN_cuGreenCtxCreate(phCtx: *mut CUgreenCtx, desc: CUdevResourceDesc, dev: CUdevice, flags: c_uint);
    /// `cuGreenCtxDestroy` (12.4).
    PFN_cuGreenCtxDestroy(hCtx: CUgreenCtx);
    /// `cuGreenCtxStreamCreate` (12.5).
    PFN_cuGreenCtxStreamCreate(phStream: *mut CUstream, greenCtx: CUgreenCtx, flags: c_uint, priority: c_int);
    /// `cuStreamBeginCapture` (10.0), and `_ptsz`: without a mode (global).
    PFN_cuStreamBeginCapture(hStream: CUstream);
    /// `cuStreamBeginCapture_v2` (10.1), and `_v2_ptsz`.
    PFN_cuStreamBeginCapture_v2(hStream: CUstream, mode: CUstreamCaptureMode);
    /// `cuStreamEndCapture` (10.0), and `_ptsz`.
    PFN_cuStreamEndCapture(hStream: CUstream, phGraph: *mut CUgraph);
    /// `cuStreamIsCapturing` (10.0), and `_ptsz`.
    PFN_cuStreamIsCapturing(hStream: CUstream, captureStatus: *mut CUstreamCaptureStatus);
    /// `cuStreamGetCaptureInfo` (10.1), and `_ptsz`.
    PFN_cuStreamGetCaptureInfo(hStream: CUstream, captureStatus_out: *mut CUstreamCaptureStatus, id_out: *mut cuuint64_t);
    /// `cuStreamGetCaptureInfo_v2` (11.3), and `_v2_ptsz`.
    PFN_cuStreamGetCaptureInfo_v2(
        hStream: CUstream,
        captureStatus_out: *mut CUstreamCaptureStatus,
        id_out: *mut cuuint64_t,
        graph_out: *mut CUgraph,
        dependencies_out: *mut *const CUgraphNode,
        numDependencies_out: *mut usize,
    );
    /// `cuStreamGetCaptureInfo_v3` (12.3), and `_v3_ptsz`.
    PFN_cuStreamGetCaptureInfo_v3(
        hStream: CUstream,
        captureStatus_out: *mut CUstreamCaptureStatus,
        id_out: *mut cuuint64_t,
        graph_out: *mut CUgraph,
        dependencies_out: *mut *const CUgraphNode,
        edgeData_out: *mut *const CUgraphEdgeData,
        numDependencies_out: *mut usize,
    );
    /// `cuStreamWaitValue32` (8.0), and `_ptsz`.
    PFN_cuStreamWaitValue32(stream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint);
    /// `cuStreamWaitValue32_v2` (11.7), and `_v2_ptsz`.
    PFN_cuStreamWaitValue32_v2(stream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint);
    /// `cuStreamWriteValue32` (8.0), and `_ptsz`.
    PFN_cuStreamWriteValue32(stream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint);
    /// `cuStreamWriteValue32_v2` (11.7), and `_v2_ptsz`.
    PFN_cuStreamWriteValue32_v2(stream: CUstream, addr: CUdeviceptr, value: cuuint32_t, flags: c_uint);

    /// `cuEventCreate` (2.0).
    PFN_cuEventCreate(phEvent: *mut CUevent, Flags: c_uint);
    /// `cuEventRecord` (2.0), and `_ptsz`.
    PFN_cuEventRecord(hEvent: CUevent, hStream: CUstream);
    /// `cuEventRecordWithFlags` (11.1), and `_ptsz`.
    PFN_cuEventRecordWithFlags(hEvent: CUevent, hStream: CUstream, flags: c_uint);
    /// `cuEventQuery` (2.0).
    PFN_cuEventQuery(hEvent: CUevent);
    /// `cuEventSynchronize` (2.0).
    PFN_cuEventSynchronize(hEvent: CUevent);
    /// `cuEventElapsedTime` (2.0).
    PFN_cuEventElapsedTime(pMilliseconds: *mut c_float, hStart: CUevent, hEnd: CUevent);
    /// `cuEventElapsedTime_v2` (12.8).
    PFN_cuEventElapsedTime_v2(pMilliseconds: *mut c_float, hStart: CUevent, hEnd: CUevent);
    /// `cuEventDestroy` (2.0).
    PFN_cuEventDestroy(hEvent: CUevent);
    /// `cuEventDestroy_v2` (4.0).
    PFN_cuEventDestroy_v2(hEvent: CUevent);

    /// `cuGraphInstantiate` (10.0): with an error node and a log buffer.
    PFN_cuGraphInstantiate(
        phGraphExec: *mut CUgraphExec,
        hGraph: CUgraph,
        phErrorNode: *mut CUgraphNode,
        logBuffer: *mut c_char,
        bufferSize: usize,
    );
    /// `cuGraphInstantiate_v2` (11.0): same signature as `cuGraphInstantiate`.
    PFN_cuGraphInstantiate_v2(
        phGraphExec: *mut CUgraphExec,
        hGraph: CUgraph,
        phErrorNode: *mut CUgraphNode,
        logBuffer: *mut c_char,
        bufferSize: usize,
    );
    /// `cuGraphInstantiateWithFlags` (11.4); also what `cuGraphInstantiate` resolves to from 12.0.
    PFN_cuGraphInstantiateWithFlags(phGraphExec: *mut CUgraphExec, hGraph: CUgraph, flags: c_ulonglong);
    /// `cuGraphLaunch` (10.0), and `_ptsz`.
    PFN_cuGraphLaunch(hGraphExec: CUgraphExec, hStream: CUstream);
    /// `cuGraphUpload` (11.1), and `_ptsz`.
    PFN_cuGraphUpload(hGraphExec: CUgraphExec, hStream: CUstream);
    /// `cuGraphExecDestroy` (10.0).
    PFN_cuGraphExecDestroy(hGraphExec: CUgraphExec);
    /// `cuGraphDestroy` (10.0).
    PFN_cuGraphDestroy(hGraph: CUgraph);
    /// `cuGraphExecKernelNodeSetParams` (10.1; `_v2` from 12.0); `nodeParams` is a
    /// `CUDA_KERNEL_NODE_PARAMS` (of that version).
    PFN_cuGraphExecKernelNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const c_void);
    /// `cuGraphExecMemcpyNodeSetParams` (10.2); `copyParams` is a `CUDA_MEMCPY3D`.
    PFN_cuGraphExecMemcpyNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, copyParams: *const c_void, ctx: CUcontext);
    /// `cuGraphExecMemsetNodeSetParams` (10.2); `memsetParams` is a `CUDA_MEMSET_NODE_PARAMS`.
    PFN_cuGraphExecMemsetNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, memsetParams: *const c_void, ctx: CUcontext);
    /// `cuGraphExecHostNodeSetParams` (10.2); `nodeParams` is a `CUDA_HOST_NODE_PARAMS`.
    PFN_cuGraphExecHostNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *const c_void);
    /// `cuGraphExecChildGraphNodeSetParams` (11.1).
    PFN_cuGraphExecChildGraphNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, childGraph: CUgraph);
    /// `cuGraphExecEventRecordNodeSetEvent` and `cuGraphExecEventWaitNodeSetEvent` (11.1).
    PFN_cuGraphExecEventNodeSetEvent(hGraphExec: CUgraphExec, hNode: CUgraphNode, event: CUevent);
    /// `cuGraphExecNodeSetParams` (12.2); `nodeParams` is a `CUgraphNodeParams`.
    PFN_cuGraphExecNodeSetParams(hGraphExec: CUgraphExec, hNode: CUgraphNode, nodeParams: *mut c_void);
    /// `cuGraphNodeSetEnabled` (11.6).
    PFN_cuGraphNodeSetEnabled(hGraphExec: CUgraphExec, hNode: CUgraphNode, isEnabled: c_uint);
    /// `cuGraphExecUpdate` (10.2): `hErrorNode_out`, then a `CUgraphExecUpdateResult*`.
    PFN_cuGraphExecUpdate(hGraphExec: CUgraphExec, hGraph: CUgraph, hErrorNode_out: *mut CUgraphNode, updateResult_out: *mut c_void);
    /// `cuGraphExecUpdate_v2` (12.0); `resultInfo` is a `CUgraphExecUpdateResultInfo`.
    PFN_cuGraphExecUpdate_v2(hGraphExec: CUgraphExec, hGraph: CUgraph, resultInfo: *mut c_void);

    /// `cuThreadExchangeStreamCaptureMode` (10.1).
    PFN_cuThreadExchangeStreamCaptureMode(mode: *mut CUstreamCaptureMode);
    /// `cuPointerGetAttribute` (4.0); `attribute` is a `CUpointer_attribute`.
    PFN_cuPointerGetAttribute(data: *mut c_void, attribute: c_uint, ptr: CUdeviceptr);

    /// `cuMemcpy2D_v2` (3.2), and `_ptds`; `pCopy` points to a `CUDA_MEMCPY2D`.
    PFN_cuMemcpy2D_v2(pCopy: *const c_void);
    /// `cuMemcpy2DUnaligned_v2` (3.2), and `_ptds`.
    PFN_cuMemcpy2DUnaligned_v2(pCopy: *const c_void);
    /// `cuMemcpy2DAsync_v2` (3.2), and `_ptsz`.
    PFN_cuMemcpy2DAsync_v2(pCopy: *const c_void, hStream: CUstream);
    /// `cuMemcpy3D_v2` (3.2), and `_ptds`; `pCopy` points to a `CUDA_MEMCPY3D`.
    PFN_cuMemcpy3D_v2(pCopy: *const c_void);
    /// `cuMemcpy3DAsync_v2` (3.2), and `_ptsz`.
    PFN_cuMemcpy3DAsync_v2(pCopy: *const c_void, hStream: CUstream);
    /// `cuMemcpyPeer` (4.0), and `_ptds`.
    PFN_cuMemcpyPeer(dstDevice: CUdeviceptr, dstContext: CUcontext, srcDevice: CUdeviceptr, srcContext: CUcontext, ByteCount: usize);
    /// `cuMemcpyPeerAsync` (4.0), and `_ptsz`.
    PFN_cuMemcpyPeerAsync(
        dstDevice: CUdeviceptr,
        dstContext: CUcontext,
        srcDevice: CUdeviceptr,
        srcContext: CUcontext,
        ByteCount: usize,
        hStream: CUstream,
    );
    /// `cuMemsetD2D8Async` (3.2), and `_ptsz`.
    PFN_cuMemsetD2D8Async(dstDevice: CUdeviceptr, dstPitch: usize, uc: u8, Width: usize, Height: usize, hStream: CUstream);
    /// `cuMemsetD2D16Async` (3.2), and `_ptsz`.
    PFN_cuMemsetD2D16Async(dstDevice: CUdeviceptr, dstPitch: usize, us: c_ushort, Width: usize, Height: usize, hStream: CUstream);
    /// `cuMemsetD2D32Async` (3.2), and `_ptsz`.
    PFN_cuMemsetD2D32Async(dstDevice: CUdeviceptr, dstPitch: usize, ui: c_uint, Width: usize, Height: usize, hStream: CUstream);
    /// `cuMemPrefetchAsync` (8.0), and `_ptsz`.
    PFN_cuMemPrefetchAsync(devPtr: CUdeviceptr, count: usize, dstDevice: CUdevice, hStream: CUstream);
    /// `cuStreamWaitValue64_v2` (11.7), and `_ptsz`.
    PFN_cuStreamWaitValue64_v2(stream: CUstream, addr: CUdeviceptr, value: cuuint64_t, flags: c_uint);
    /// `cuStreamWriteValue64_v2` (11.7), and `_ptsz`.
    PFN_cuStreamWriteValue64_v2(stream: CUstream, addr: CUdeviceptr, value: cuuint64_t, flags: c_uint);
    /// `cuStreamBatchMemOp_v2` (11.7), and `_ptsz`; `paramArray` points to
    /// `CUstreamBatchMemOpParams`.
    PFN_cuStreamBatchMemOp_v2(stream: CUstream, count: c_uint, paramArray: *mut c_void, flags: c_uint);
    /// `cuStreamWaitValue64` (9.0), and `_ptsz`.
    PFN_cuStreamWaitValue64(stream: CUstream, addr: CUdeviceptr, value: cuuint64_t, flags: c_uint);
    /// `cuStreamWriteValue64` (9.0), and `_ptsz`.
    PFN_cuStreamWriteValue64(stream: CUstream, addr: CUdeviceptr, value: cuuint64_t, flags: c_uint);
    /// `cuStreamBatchMemOp` (8.0), and `_ptsz`.
    PFN_cuStreamBatchMemOp(stream: CUstream, count: c_uint, paramArray: *mut c_void, flags: c_uint);
    /// `cuMemPrefetchAsync_v2` (12.2), and `_ptsz`.
    PFN_cuMemPrefetchAsync_v2(devPtr: CUdeviceptr, count: usize, location: CUmemLocation, flags: c_uint, hStream: CUstream);
    /// `cuMemPrefetchBatchAsync` (13.0), and `_ptsz`; `prefetchLocs` points to `CUmemLocation`s.
    PFN_cuMemPrefetchBatchAsync(
        dptrs: *mut CUdeviceptr,
        sizes: *mut usize,
        count: usize,
        prefetchLocs: *mut c_void,
        prefetchLocIdxs: *mut usize,
        numPrefetchLocs: usize,
        flags: c_ulonglong,
        hStream: CUstream,
    );
    /// `cuMemDiscardBatchAsync` (13.0), and `_ptsz`.
    PFN_cuMemDiscardBatchAsync(dptrs: *mut CUdeviceptr, sizes: *mut usize, count: usize, flags: c_ulonglong, hStream: CUstream);
    /// `cuMemDiscardAndPrefetchBatchAsync` (13.0), and `_ptsz`.
    PFN_cuMemDiscardAndPrefetchBatchAsync(
        dptrs: *mut CUdeviceptr,
        sizes: *mut usize,
        count: usize,
        prefetchLocs: *mut c_void,
        prefetchLocIdxs: *mut usize,
        numPrefetchLocs: usize,
        flags: c_ulonglong,
        hStream: CUstream,
    );
    /// `cuMemcpyBatchAsync` (12.8, with `failIdx`), and `_ptsz`; `attrs` points to
    /// `CUmemcpyAttributes`.
    PFN_cuMemcpyBatchAsync(
        dsts: *mut CUdeviceptr,
        srcs: *mut CUdeviceptr,
        sizes: *mut usize,
        count: usize,
        attrs: *mut c_void,
        attrsIdxs: *mut usize,
        numAttrs: usize,
        failIdx: *mut usize,
        hStream: CUstream,
    );
    /// `cuMemcpyBatchAsync_v2` (13.0), and `_ptsz`.
    PFN_cuMemcpyBatchAsync_v2(
        dsts: *mut CUdeviceptr,
        srcs: *mut CUdeviceptr,
        sizes: *mut usize,
        count: usize,
        attrs: *mut c_void,
        attrsIdxs: *mut usize,
        numAttrs: usize,
        hStream: CUstream,
    );
    /// `cuMemcpy3DBatchAsync` (12.8, with `failIdx`), and `_ptsz`; `opList` points to
    /// `CUDA_MEMCPY3D_BATCH_OP`s.
    PFN_cuMemcpy3DBatchAsync(numOps: usize, opList: *mut c_void, failIdx: *mut usize, flags: c_ulonglong, hStream: CUstream);
    /// `cuMemcpy3DBatchAsync_v2` (13.0), and `_ptsz`.
    PFN_cuMemcpy3DBatchAsync_v2(numOps: usize, opList: *mut c_void, flags: c_ulonglong, hStream: CUstream);
    /// `cuMemBatchDecompressAsync` (12.8), and `_ptsz`; `paramsArray` points to
    /// `CUmemDecompressParams`.
    PFN_cuMemBatchDecompressAsync(paramsArray: *mut c_void, count: usize, flags: c_uint, errorIndex: *mut usize, stream: CUstream);
    /// `cuMemMapArrayAsync` (11.1), and `_ptsz`; `mapInfoList` points to `CUarrayMapInfo`s.
    PFN_cuMemMapArrayAsync(mapInfoList: *mut c_void, count: c_uint, hStream: CUstream);
    /// `cuMemcpy3DPeerAsync` (4.0), and `_ptsz`; `pCopy` points to a `CUDA_MEMCPY3D_PEER`.
    PFN_cuMemcpy3DPeerAsync(pCopy: *const c_void, hStream: CUstream);
    /// `cuMemcpy3DPeer` (4.0), and `_ptds`.
    PFN_cuMemcpy3DPeer(pCopy: *const c_void);
    /// `cuMemcpyAtoHAsync_v2` (3.2), and `_ptsz`; `srcArray` is a `CUarray`.
    PFN_cuMemcpyAtoHAsync_v2(dstHost: *mut c_void, srcArray: *mut c_void, srcOffset: usize, ByteCount: usize, hStream: CUstream);
    /// `cuMemcpyHtoAAsync_v2` (3.2), and `_ptsz`.
    PFN_cuMemcpyHtoAAsync_v2(dstArray: *mut c_void, dstOffset: usize, srcHost: *const c_void, ByteCount: usize, hStream: CUstream);
    /// `cuMemcpyAtoH_v2` (3.2), and `_ptds`.
    PFN_cuMemcpyAtoH_v2(dstHost: *mut c_void, srcArray: *mut c_void, srcOffset: usize, ByteCount: usize);
    /// `cuMemcpyHtoA_v2` (3.2), and `_ptds`.
    PFN_cuMemcpyHtoA_v2(dstArray: *mut c_void, dstOffset: usize, srcHost: *const c_void, ByteCount: usize);
    /// `cuMemcpyDtoA_v2` (3.2), and `_ptds`.
    PFN_cuMemcpyDtoA_v2(dstArray: *mut c_void, dstOffset: usize, srcDevice: CUdeviceptr, ByteCount: usize);
    /// `cuMemcpyAtoD_v2` (3.2), and `_ptds`.
    PFN_cuMemcpyAtoD_v2(dstDevice: CUdeviceptr, srcArray: *mut c_void, srcOffset: usize, ByteCount: usize);
    /// `cuMemcpyAtoA_v2` (3.2), and `_ptds`.
    PFN_cuMemcpyAtoA_v2(dstArray: *mut c_void, dstOffset: usize, srcArray: *mut c_void, srcOffset: usize, ByteCount: usize);
    /// `cuMemsetD2D8_v2` (3.2), and `_ptds`.
    PFN_cuMemsetD2D8_v2(dstDevice: CUdeviceptr, dstPitch: usize, uc: u8, Width: usize, Height: usize);
    /// `cuMemsetD2D16_v2` (3.2), and `_ptds`.
    PFN_cuMemsetD2D16_v2(dstDevice: CUdeviceptr, dstPitch: usize, us: c_ushort, Width: usize, Height: usize);
    /// `cuMemsetD2D32_v2` (3.2), and `_ptds`.
    PFN_cuMemsetD2D32_v2(dstDevice: CUdeviceptr, dstPitch: usize, ui: c_uint, Width: usize, Height: usize);
    /// `cuMemAllocFromPoolAsync` (11.2), and `_ptsz`.
    PFN_cuMemAllocFromPoolAsync(dptr: *mut CUdeviceptr, bytesize: usize, pool: CUmemoryPool, hStream: CUstream);
    /// `cuSignalExternalSemaphoresAsync` (10.0), and `_ptsz`: `extSemArray` holds
    /// `CUexternalSemaphore`s, `paramsArray` their `CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS`.
    PFN_cuSignalExternalSemaphoresAsync(extSemArray: *const *mut c_void, paramsArray: *const c_void, numExtSems: c_uint, stream: CUstream);
    /// `cuWaitExternalSemaphoresAsync` (10.0), and `_ptsz`.
    PFN_cuWaitExternalSemaphoresAsync(extSemArray: *const *mut c_void, paramsArray: *const c_void, numExtSems: c_uint, stream: CUstream);
    /// `cuStreamAttachMemAsync` (6.0), and `_ptsz`.
    PFN_cuStreamAttachMemAsync(hStream: CUstream, dptr: CUdeviceptr, length: usize, flags: c_uint);
    /// `cuGraphicsMapResources` (3.0), and `_ptsz`; `resources` holds `CUgraphicsResource`s.
    PFN_cuGraphicsMapResources(count: c_uint, resources: *mut *mut c_void, hStream: CUstream);
    /// `cuGraphicsUnmapResources` (3.0), and `_ptsz`.
    PFN_cuGraphicsUnmapResources(count: c_uint, resources: *mut *mut c_void, hStream: CUstream);
    /// `cuGraphInstantiateWithParams` (12.0), and `_ptsz`.
    PFN_cuGraphInstantiateWithParams(phGraphExec: *mut CUgraphExec, hGraph: CUgraph, instantiateParams: *mut CUDA_GRAPH_INSTANTIATE_PARAMS);
    /// `cuMemcpyWithAttributesAsync` (13.1); `attr` points to a `CUmemcpyAttributes`.
    PFN_cuMemcpyWithAttributesAsync(dst: CUdeviceptr, src: CUdeviceptr, size: usize, attr: *mut c_void, hStream: CUstream);
    /// `cuMemcpy3DWithAttributesAsync` (13.1); `op` points to a `CUDA_MEMCPY3D_BATCH_OP`.
    PFN_cuMemcpy3DWithAttributesAsync(op: *mut c_void, flags: c_ulonglong, hStream: CUstream);
    /// `cuLaunchHostFunc_v2` (13.1): a host function with a synchronization mode.
    PFN_cuLaunchHostFunc_v2(hStream: CUstream, fn_: CUhostFn, userData: *mut c_void, syncMode: c_uint);
    /// `cuStreamGetAttribute` (11.0), and `_ptsz`; `attr` is a `CUstreamAttrID`, `value_out`
    /// points to a `CUstreamAttrValue`.
    PFN_cuStreamGetAttribute(hStream: CUstream, attr: c_uint, value_out: *mut c_void);
    /// `cuStreamSetAttribute` (11.0), and `_ptsz`.
    PFN_cuStreamSetAttribute(hStream: CUstream, attr: c_uint, value: *const c_void);
    /// `cuStreamCopyAttributes` (11.0), and `_ptsz`.
    PFN_cuStreamCopyAttributes(dst: CUstream, src: CUstream);
    /// `cuFuncGetAttribute` (2.2); `attrib` is a `CUfunction_attribute`.
    PFN_cuFuncGetAttribute(pi: *mut c_int, attrib: c_uint, hfunc: CUfunction);
    /// `cuFuncSetAttribute` (9.0).
    PFN_cuFuncSetAttribute(hfunc: CUfunction, attrib: c_uint, value: c_int);
    /// `cuKernelGetAttribute` (12.0).
    PFN_cuKernelGetAttribute(pi: *mut c_int, attrib: c_uint, kernel: CUkernel, dev: CUdevice);
    /// `cuKernelSetAttribute` (12.0).
    PFN_cuKernelSetAttribute(attrib: c_uint, val: c_int, kernel: CUkernel, dev: CUdevice);
    /// `cuLaunchGridAsync` (2.0; deprecated).
    PFN_cuLaunchGridAsync(f: CUfunction, grid_width: c_int, grid_height: c_int, hStream: CUstream);
    /// `cuLaunchCooperativeKernelMultiDevice` (9.0; deprecated); `launchParamsList` points to
    /// `CUDA_LAUNCH_PARAMS`, each naming its own stream.
    PFN_cuLaunchCooperativeKernelMultiDevice(launchParamsList: *mut c_void, numDevices: c_uint, flags: c_uint);
    /// `cuCtxRecordEvent` (12.5): an event after all work submitted to the context.
    PFN_cuCtxRecordEvent(hCtx: CUcontext, hEvent: CUevent);
    /// `cuCtxWaitEvent` (12.5): all later work of the context waits for the event.
    PFN_cuCtxWaitEvent(hCtx: CUcontext, hEvent: CUevent);
    /// `cuGreenCtxRecordEvent` (12.4).
    PFN_cuGreenCtxRecordEvent(hCtx: CUgreenCtx, hEvent: CUevent);
    /// `cuGreenCtxWaitEvent` (12.4).
    PFN_cuGreenCtxWaitEvent(hCtx: CUgreenCtx, hEvent: CUevent);
    /// `cuStreamUpdateCaptureDependencies` (11.3), and `_ptsz`.
    PFN_cuStreamUpdateCaptureDependencies(hStream: CUstream, dependencies: *mut CUgraphNode, numDependencies: usize, flags: c_uint);
    /// `cuStreamUpdateCaptureDependencies_v2` (12.3), and `_ptsz`.
    PFN_cuStreamUpdateCaptureDependencies_v2(
        hStream: CUstream,
        dependencies: *mut CUgraphNode,
        dependencyData: *const CUgraphEdgeData,
        numDependencies: usize,
        flags: c_uint,
    );
    /// `cuStreamBeginCaptureToGraph` (12.3), and `_ptsz`.
    PFN_cuStreamBeginCaptureToGraph(
        hStream: CUstream,
        hGraph: CUgraph,
        dependencies: *const CUgraphNode,
        dependencyData: *const CUgraphEdgeData,
        numDependencies: usize,
        mode: CUstreamCaptureMode,
    );
    /// `cuStreamAddCallback` (5.0), and `_ptsz`.
    PFN_cuStreamAddCallback(hStream: CUstream, callback: CUstreamCallback, userData: *mut c_void, flags: c_uint);
}
