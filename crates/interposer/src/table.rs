//! The functions Baton intercepts, by exported name, and the map from the real driver's
//! functions to their hooks.

use std::ffi::{CStr, c_void};

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
                addr: crate::hooks::$name as *const (),
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
    cuCtxSynchronize,
    cuCtxDestroy_v2,
    cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxReset_v2,
    cuDevicePrimaryCtxRetain,
    cuCtxCreate_v2, cuCtxCreate_v3, cuCtxCreate_v4,
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
            .map(|h| crate::dlsym::lookup(handle, h.name.as_ptr()) as usize)
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

/// `found` is what the real `dlsym` returned for `name`: if it is the real driver's function
/// and Baton intercepts it, the hook instead.
pub(crate) fn substitute(name: &CStr, found: *mut c_void) -> *mut c_void {
    let Some(index) = HOOKS.iter().position(|h| h.name == name) else {
        return found;
    };
    let Some(rt) = crate::runtime::get() else {
        return found;
    };
    if rt.hooks.real_of(index) == found as usize {
        HOOKS[index].addr as *mut c_void
    } else {
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
