//! The functions Baton intercepts, by exported name, and the map from the real driver's
//! functions to their hooks, built once from the driver the runtime opened.

use std::ffi::{CStr, c_void};
use std::sync::OnceLock;

/// One intercepted function: its exported name and its hook.
pub(crate) struct Hook {
    pub(crate) name: &'static CStr,
    pub(crate) addr: *const (),
}

// SAFETY: the entries are immutable names and function addresses.
unsafe impl Sync for Hook {}

macro_rules! hooks {
    ($($name:ident),* $(,)?) => {
        /// Every intercepted function.
        pub(crate) static HOOKS: &[Hook] = &[$(
            Hook {
                name: match CStr::from_bytes_with_nul(concat!(stringify!($name), "\0").as_bytes()) {
                    Ok(c) => c,
                    Err(_) => panic!("hook names are valid C strings"),
                },
                addr: super::$name as *const (),
            },
        )*];
    };
}

hooks! {
    cuGetProcAddress, cuGetProcAddress_v2,
    cuLaunchKernel, cuLaunchKernel_ptsz,
    cuLaunchKernelEx, cuLaunchKernelEx_ptsz,
    cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz,
    cuLaunchHostFunc, cuLaunchHostFunc_ptsz,
    cuStreamAddCallback, cuStreamAddCallback_ptsz,
    cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz,
    cuMemsetD8Async, cuMemsetD8Async_ptsz,
    cuMemsetD16Async, cuMemsetD16Async_ptsz,
    cuMemsetD32Async, cuMemsetD32Async_ptsz,
    cuMemcpyAsync, cuMemcpyAsync_ptsz,
    cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz,
    cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz,
    cuMemcpy, cuMemcpy_ptds,
    cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds,
    cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds,
    cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds,
    cuMemsetD8_v2, cuMemsetD8_v2_ptds,
    cuMemsetD16_v2, cuMemsetD16_v2_ptds,
    cuMemsetD32_v2, cuMemsetD32_v2_ptds,
    cuMemAllocAsync, cuMemAllocAsync_ptsz,
    cuMemFreeAsync, cuMemFreeAsync_ptsz,
    cuEventRecord, cuEventRecord_ptsz,
    cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz,
    cuStreamWaitEvent, cuStreamWaitEvent_ptsz,
    cuEventQuery, cuEventSynchronize,
    cuEventDestroy, cuEventDestroy_v2,
    cuEventElapsedTime, cuEventElapsedTime_v2,
    cuStreamCreate, cuStreamCreateWithPriority,
    cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2,
    cuGraphExecMemcpyNodeSetParams, cuGraphExecMemsetNodeSetParams,
    cuGraphExecHostNodeSetParams, cuGraphExecChildGraphNodeSetParams,
    cuGraphExecEventRecordNodeSetEvent, cuGraphExecEventWaitNodeSetEvent,
    cuGraphExecNodeSetParams, cuGraphNodeSetEnabled,
    cuGraphExecUpdate, cuGraphExecUpdate_v2, cuGraphExecDestroy,
    cuModuleUnload, cuLibraryUnload,
    cuMemFree_v2, cuMemFreeHost, cuMemHostUnregister,
    cuModuleLoad, cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary,
    cuLibraryLoadData, cuLibraryLoadFromFile,
    cuStreamDestroy, cuStreamDestroy_v2,
    cuStreamSynchronize, cuStreamSynchronize_ptsz,
    cuStreamQuery, cuStreamQuery_ptsz,
    cuStreamBeginCapture, cuStreamBeginCapture_ptsz,
    cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz,
    cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz,
    cuStreamEndCapture, cuStreamEndCapture_ptsz,
    cuStreamWaitValue32_v2, cuStreamWaitValue32_v2_ptsz,
    cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz,
    cuGraphLaunch, cuGraphLaunch_ptsz,
    cuGraphUpload, cuGraphUpload_ptsz,
    cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz,
    cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz,
    cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz,
    cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz,
    cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz,
    cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz,
    cuMemPrefetchAsync, cuMemPrefetchAsync_ptsz,
    cuStreamWaitValue64_v2, cuStreamWaitValue64_v2_ptsz,
    cuStreamWriteValue64_v2, cuStreamWriteValue64_v2_ptsz,
    cuStreamBatchMemOp_v2, cuStreamBatchMemOp_v2_ptsz,
    cuMemcpy2D_v2, cuMemcpy2D_v2_ptds,
    cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds,
    cuMemcpy3D_v2, cuMemcpy3D_v2_ptds,
    cuMemcpyPeer, cuMemcpyPeer_ptds,
    cuCtxSynchronize, cuCtxSynchronize_v2,
    cuCtxDestroy_v2,
    cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxReset_v2,
    cuDevicePrimaryCtxRetain,
    cuCtxCreate_v2, cuCtxCreate_v3, cuCtxCreate_v4,
    cuStreamWaitValue32, cuStreamWaitValue32_ptsz,
    cuStreamWriteValue32, cuStreamWriteValue32_ptsz,
    cuStreamWaitValue64, cuStreamWaitValue64_ptsz,
    cuStreamWriteValue64, cuStreamWriteValue64_ptsz,
    cuStreamBatchMemOp, cuStreamBatchMemOp_ptsz,
    cuStreamAttachMemAsync, cuStreamAttachMemAsync_ptsz,
    cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2_ptsz,
    cuMemPrefetchBatchAsync, cuMemPrefetchBatchAsync_ptsz,
    cuMemDiscardBatchAsync, cuMemDiscardBatchAsync_ptsz,
    cuMemDiscardAndPrefetchBatchAsync, cuMemDiscardAndPrefetchBatchAsync_ptsz,
    cuMemcpyBatchAsync, cuMemcpyBatchAsync_ptsz,
    cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync_v2_ptsz,
    cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync_ptsz,
    cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync_v2_ptsz,
    cuMemBatchDecompressAsync, cuMemBatchDecompressAsync_ptsz,
    cuMemMapArrayAsync, cuMemMapArrayAsync_ptsz,
    cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync_ptsz,
    cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz,
    cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz,
    cuSignalExternalSemaphoresAsync, cuSignalExternalSemaphoresAsync_ptsz,
    cuWaitExternalSemaphoresAsync, cuWaitExternalSemaphoresAsync_ptsz,
    cuGraphicsMapResources, cuGraphicsMapResources_ptsz,
    cuGraphicsUnmapResources, cuGraphicsUnmapResources_ptsz,
    cuLaunchGridAsync,
    cuMemcpyWithAttributesAsync, cuMemcpy3DWithAttributesAsync, cuLaunchHostFunc_v2,
    cuMemcpy3DPeer, cuMemcpy3DPeer_ptds,
    cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds,
    cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds,
    cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds,
    cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds,
    cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds,
    cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds,
    cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds,
    cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds,
    cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz,
    cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz,
    cuLaunchCooperativeKernelMultiDevice,
    cuCtxRecordEvent, cuCtxWaitEvent, cuGreenCtxRecordEvent, cuGreenCtxWaitEvent,
    cuGreenCtxStreamCreate,
    cuStreamIsCapturing, cuStreamIsCapturing_ptsz,
    cuStreamGetCaptureInfo, cuStreamGetCaptureInfo_ptsz,
    cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz,
    cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz,
    cuStreamUpdateCaptureDependencies, cuStreamUpdateCaptureDependencies_ptsz,
    cuStreamUpdateCaptureDependencies_v2, cuStreamUpdateCaptureDependencies_v2_ptsz,
    cuStreamGetAttribute, cuStreamGetAttribute_ptsz,
    cuStreamSetAttribute, cuStreamSetAttribute_ptsz,
    cuStreamCopyAttributes, cuStreamCopyAttributes_ptsz,
    cuFuncSetAttribute, cuKernelSetAttribute,
}

/// Real function address → hook address, sorted by real address.
pub(crate) struct HookMap {
    pairs: Vec<(usize, usize)>,
    /// The real address of each entry of [`HOOKS`], in order (0 if the driver lacks it).
    reals: Vec<usize>,
}

impl HookMap {
    /// Resolves every hooked name in the driver `handle`.
    pub(crate) fn build(handle: *mut c_void) -> HookMap {
        let reals: Vec<usize> = HOOKS
            .iter()
            .map(|h| crate::libdl::lookup(handle, h.name.as_ptr()) as usize)
            .collect();
        let mut pairs: Vec<(usize, usize)> = reals
            .iter()
            .zip(HOOKS)
            .filter(|(r, _)| **r != 0)
            .map(|(r, h)| (*r, h.addr as usize))
            .collect();
        pairs.sort_unstable();
        HookMap { pairs, reals }
    }

    /// The hook for the real function at `real`, if Baton intercepts it.
    pub(crate) fn hook_for(&self, real: *mut c_void) -> Option<*mut c_void> {
        let key = real as usize;
        self.pairs
            .binary_search_by_key(&key, |(r, _)| *r)
            .ok()
            .map(|i| self.pairs[i].1 as *mut c_void)
    }

    /// How many intercepted functions the driver has.
    pub(crate) fn len(&self) -> usize {
        self.pairs.len()
    }

    fn real_of(&self, index: usize) -> usize {
        self.reals.get(index).copied().unwrap_or(0)
    }
}

/// The map for the driver the runtime opened, built on first use.
pub(crate) fn map() -> Option<&'static HookMap> {
    static MAP: OnceLock<HookMap> = OnceLock::new();
    if let Some(m) = MAP.get() {
        return Some(m);
    }
    let rt = crate::runtime::get()?;
    Some(MAP.get_or_init(|| {
        let m = HookMap::build(rt.library as *mut c_void);
        tracing::info!(
            intercepted = m.len(),
            "driver functions mapped to Baton's hooks"
        );
        m
    }))
}

/// `found` is what the real `dlsym` returned for `name`: if it is the real driver's function
/// and Baton intercepts it, the hook instead.
pub(crate) fn substitute(name: &CStr, found: *mut c_void) -> *mut c_void {
    let Some(index) = HOOKS.iter().position(|h| h.name == name) else {
        return found;
    };
    let Some(map) = map() else {
        return found;
    };
    if map.real_of(index) == found as usize {
        HOOKS[index].addr as *mut c_void
    } else {
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exports of a real driver that take a stream and that Baton lets through, and why.
    const UNSCHEDULED: &[(&str, &str)] = &[
        ("cuStreamGetCtx", "asks which context owns the stream"),
        ("cuStreamGetCtx_ptsz", "asks which context owns the stream"),
        ("cuStreamGetCtx_v2", "asks which context owns the stream"),
        (
            "cuStreamGetCtx_v2_ptsz",
            "asks which context owns the stream",
        ),
        ("cuStreamGetDevice", "asks which device owns the stream"),
        (
            "cuStreamGetDevice_ptsz",
            "asks which device owns the stream",
        ),
        (
            "cuStreamGetFlags",
            "asks the flags (Baton's stand-in has the per-thread stream's)",
        ),
        (
            "cuStreamGetFlags_ptsz",
            "asks the flags (Baton's stand-in has the per-thread stream's)",
        ),
        (
            "cuStreamGetPriority",
            "asks the priority (the stand-in has the per-thread stream's)",
        ),
        (
            "cuStreamGetPriority_ptsz",
            "asks the priority (the stand-in has the per-thread stream's)",
        ),
        ("cuStreamGetId", "asks the stream's id"),
        ("cuStreamGetId_ptsz", "asks the stream's id"),
        (
            "cuStreamGetGreenCtx",
            "asks which green context owns the stream",
        ),
        (
            "cuOccupancyMaxActiveClusters",
            "a query about a launch configuration",
        ),
        (
            "cuOccupancyMaxPotentialClusterSize",
            "a query about a launch configuration",
        ),
        (
            "cuMemcpyHtoDAsync",
            "the CUDA 3.1 ABI (32-bit addresses): no program built since uses it",
        ),
        (
            "cuMemcpyDtoHAsync",
            "the CUDA 3.1 ABI (32-bit addresses): no program built since uses it",
        ),
        (
            "cuMemcpyDtoDAsync",
            "the CUDA 3.1 ABI (32-bit addresses): no program built since uses it",
        ),
        (
            "cuMemcpy2DAsync",
            "the CUDA 3.1 ABI (32-bit addresses): no program built since uses it",
        ),
        (
            "cuMemcpy3DAsync",
            "the CUDA 3.1 ABI (32-bit addresses): no program built since uses it",
        ),
        (
            "cuMemcpyAtoHAsync",
            "the CUDA 3.1 ABI (32-bit addresses): no program built since uses it",
        ),
        (
            "cuMemcpyHtoAAsync",
            "the CUDA 3.1 ABI (32-bit addresses): no program built since uses it",
        ),
    ];

    /// Every function a real driver exports that takes a stream (the list comes from the GPU
    /// machine's driver and header: `scripts/gpu/transparency/discover.sh`) is intercepted, or
    /// known to need no scheduling. A stream operation that reached the driver unseen would overtake the work
    /// Baton holds back for its stream, and compute with what is not there yet.
    #[test]
    fn every_stream_function_of_a_real_driver_is_intercepted_or_known_to_need_nothing() {
        let hooked: Vec<&str> = HOOKS.iter().filter_map(|h| h.name.to_str().ok()).collect();
        let listed = include_str!("../../tests/data/driver-stream-functions.txt");
        let names: Vec<&str> = listed
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .collect();
        assert!(
            names.len() > 150,
            "the list looks truncated: {}",
            names.len()
        );
        let missing: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !hooked.contains(n) && !UNSCHEDULED.iter().any(|(u, _)| u == n))
            .collect();
        assert!(
            missing.is_empty(),
            "stream functions Baton does not intercept: {missing:?}"
        );
        for (name, _) in UNSCHEDULED {
            assert!(
                !hooked.contains(name),
                "{name} is intercepted and listed as let through"
            );
        }
    }

    #[test]
    fn names_are_unique_and_cu_prefixed() {
        let mut names: Vec<&CStr> = HOOKS.iter().map(|h| h.name).collect();
        names.sort();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate hook names");
        assert!(names.iter().all(|n| n.to_bytes().starts_with(b"cu")));
    }
}
