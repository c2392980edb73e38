//! Reaching the driver: `dlopen` by soname, then either `cuGetProcAddress_v2` (as the CUDA
//! runtime does) or `dlsym` by name (as cuBLAS and cuDNN do for some functions).

#![allow(non_snake_case)]

use std::ffi::{CStr, CString, c_void};

use baton_cuda_sys::{
    CU_GET_PROC_ADDRESS_SUCCESS, CUdriverProcAddressQueryResult, CUresult, PFN_cuGetProcAddress_v2,
};

use crate::error::AppError;

/// The soname every CUDA application opens: `LD_LIBRARY_PATH` decides which library it is.
pub const DRIVER_SONAME: &CStr = c"libcuda.so.1";

/// An opened driver library.
pub struct Driver {
    handle: *mut c_void,
    get_proc_address: PFN_cuGetProcAddress_v2,
}

// SAFETY: a dlopen handle and a driver function pointer may be used from any thread.
unsafe impl Send for Driver {}
// SAFETY: as above; `Driver` has no interior mutability.
unsafe impl Sync for Driver {}

impl Driver {
    /// `dlopen("libcuda.so.1", RTLD_NOW)` and `dlsym(handle, "cuGetProcAddress_v2")`.
    pub fn open() -> Result<Driver, AppError> {
        // SAFETY: DRIVER_SONAME is a NUL-terminated string; dlopen has no other precondition.
        let handle = unsafe { libc::dlopen(DRIVER_SONAME.as_ptr(), libc::RTLD_NOW) };
        if handle.is_null() {
            return Err(AppError::Load {
                library: "libcuda.so.1".into(),
                reason: dl_error(),
            });
        }
        let symbol = dlsym(handle, "cuGetProcAddress_v2")?;
        // SAFETY: the driver exports cuGetProcAddress_v2 with exactly this signature.
        let get_proc_address =
            unsafe { std::mem::transmute::<*mut c_void, PFN_cuGetProcAddress_v2>(symbol) };
        Ok(Driver {
            handle,
            get_proc_address,
        })
    }

    /// `cuGetProcAddress_v2(symbol, &pfn, version, flags, status)`: the pointer, or the code and
    /// the `symbolStatus` (NULL `symbolStatus` when `with_status` is false).
    pub fn proc_address(
        &self,
        symbol: &str,
        version: i32,
        flags: u64,
        with_status: bool,
    ) -> Result<*mut c_void, (CUresult, Option<CUdriverProcAddressQueryResult>)> {
        let name = CString::new(symbol).map_err(|_| (CUresult::INVALID_VALUE, None))?;
        let mut pfn = std::ptr::null_mut();
        let mut status = CUdriverProcAddressQueryResult(u32::MAX);
        let status_ptr = if with_status {
            &raw mut status
        } else {
            std::ptr::null_mut()
        };
        // SAFETY: `name` is NUL-terminated, `pfn` is writable, `status_ptr` is NULL or writable.
        let code =
            unsafe { (self.get_proc_address)(name.as_ptr(), &mut pfn, version, flags, status_ptr) };
        let status = with_status.then_some(status);
        if code == CUresult::SUCCESS
            && !pfn.is_null()
            && status.is_none_or(|s| s == CU_GET_PROC_ADDRESS_SUCCESS)
        {
            Ok(pfn)
        } else {
            Err((code, status))
        }
    }

    /// `dlsym(handle, symbol)`.
    pub fn dlsym(&self, symbol: &str) -> Result<*mut c_void, AppError> {
        dlsym(self.handle, symbol)
    }

    /// Replaces the `cuGetProcAddress_v2` used from now on by the one the driver returns for
    /// `"cuGetProcAddress"`, as the CUDA runtime does.
    ///
    /// # Safety
    ///
    /// `pfn` must be what the driver returned for `"cuGetProcAddress"` at version 12000 or later.
    pub unsafe fn use_resolved_get_proc_address(&mut self, pfn: *mut c_void) {
        // SAFETY: per this function's contract, `pfn` is cuGetProcAddress_v2, which has exactly
        // this signature.
        self.get_proc_address =
            unsafe { std::mem::transmute::<*mut c_void, PFN_cuGetProcAddress_v2>(pfn) };
    }
}

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string valid until the next dl* call.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: non-NULL: a NUL-terminated string, copied at once.
        unsafe { CStr::from_ptr(message) }
            .to_string_lossy()
            .into_owned()
    }
}

fn dlsym(handle: *mut c_void, symbol: &str) -> Result<*mut c_void, AppError> {
    let name = CString::new(symbol).map_err(|_| AppError::Symbol {
        symbol: symbol.into(),
        how: "bad name".into(),
    })?;
    // SAFETY: `handle` came from dlopen and `name` is NUL-terminated.
    let ptr = unsafe { libc::dlsym(handle, name.as_ptr()) };
    if ptr.is_null() {
        return Err(AppError::Symbol {
            symbol: symbol.into(),
            how: format!("dlsym: {}", dl_error()),
        });
    }
    Ok(ptr)
}

/// How [`Api::load`] obtains each function.
#[derive(Clone, Copy)]
pub enum Resolve<'a> {
    /// `cuGetProcAddress_v2(base name, version, flags)`.
    ProcAddress(&'a Driver, u64),
    /// `dlsym(handle, symbol name)`.
    Dlsym(&'a Driver),
}

impl Resolve<'_> {
    fn get(self, base: &str, version: i32, symbol: &str) -> Result<*mut c_void, AppError> {
        match self {
            Resolve::ProcAddress(driver, flags) => driver
                .proc_address(base, version, flags, false)
                .map_err(|(code, _)| AppError::Symbol {
                    symbol: base.into(),
                    how: format!("cuGetProcAddress_v2({version}, flags {flags}): {code}"),
                }),
            Resolve::Dlsym(driver) => driver.dlsym(symbol),
        }
    }
}

macro_rules! api {
    ($($field:ident: $pfn:ident = $base:literal @ $version:literal, $symbol:literal;)*) => {
        /// The driver functions the scenarios call, each with the signature of the symbol the
        /// resolver hands out for it.
        #[derive(Clone, Copy)]
        pub struct Api {
            $(
                #[doc = concat!("`", $base, "`: `", $symbol, "` by dlsym, version ", stringify!($version), " by cuGetProcAddress.")]
                pub $field: baton_cuda_sys::$pfn,
            )*
        }

        impl Api {
            /// Resolves every function.
            pub fn load(resolve: Resolve<'_>) -> Result<Api, AppError> {
                Ok(Api {
                    $($field: {
                        let ptr = resolve.get($base, $version, $symbol)?;
                        // SAFETY: the driver hands out, for this base name and version (or for
                        // this exact symbol name), a function with exactly this signature.
                        unsafe { std::mem::transmute::<*mut c_void, baton_cuda_sys::$pfn>(ptr) }
                    },)*
                })
            }
        }
    };
}

api! {
    cuInit: PFN_cuInit = "cuInit" @ 2000, "cuInit";
    cuDriverGetVersion: PFN_cuDriverGetVersion = "cuDriverGetVersion" @ 2020, "cuDriverGetVersion";
    cuGetErrorName: PFN_cuGetErrorName = "cuGetErrorName" @ 6000, "cuGetErrorName";
    cuDeviceGet: PFN_cuDeviceGet = "cuDeviceGet" @ 2000, "cuDeviceGet";
    cuDeviceGetCount: PFN_cuDeviceGetCount = "cuDeviceGetCount" @ 2000, "cuDeviceGetCount";
    cuDeviceGetAttribute: PFN_cuDeviceGetAttribute = "cuDeviceGetAttribute" @ 2000, "cuDeviceGetAttribute";
    cuDeviceGetUuid: PFN_cuDeviceGetUuid_v2 = "cuDeviceGetUuid" @ 11040, "cuDeviceGetUuid_v2";
    cuCtxGetDevice: PFN_cuCtxGetDevice = "cuCtxGetDevice" @ 2000, "cuCtxGetDevice";
    cuDevicePrimaryCtxRetain: PFN_cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain" @ 7000, "cuDevicePrimaryCtxRetain";
    cuDevicePrimaryCtxRelease: PFN_cuDevicePrimaryCtxRelease_v2 = "cuDevicePrimaryCtxRelease" @ 11000, "cuDevicePrimaryCtxRelease_v2";
    cuCtxCreate: PFN_cuCtxCreate_v2 = "cuCtxCreate" @ 11000, "cuCtxCreate_v2";
    cuCtxDestroy: PFN_cuCtxDestroy_v2 = "cuCtxDestroy" @ 13000, "cuCtxDestroy_v2";
    cuCtxSetCurrent: PFN_cuCtxSetCurrent = "cuCtxSetCurrent" @ 13000, "cuCtxSetCurrent";
    cuCtxGetCurrent: PFN_cuCtxGetCurrent = "cuCtxGetCurrent" @ 13000, "cuCtxGetCurrent";
    cuCtxPushCurrent: PFN_cuCtxPushCurrent_v2 = "cuCtxPushCurrent" @ 13000, "cuCtxPushCurrent";
    cuCtxPopCurrent: PFN_cuCtxPopCurrent_v2 = "cuCtxPopCurrent" @ 13000, "cuCtxPopCurrent";
    cuCtxSynchronize: PFN_cuCtxSynchronize = "cuCtxSynchronize" @ 12000, "cuCtxSynchronize";
    cuCtxSynchronize_v2: PFN_cuCtxSynchronize_v2 = "cuCtxSynchronize" @ 13000, "cuCtxSynchronize_v2";
    cuMemAlloc: PFN_cuMemAlloc_v2 = "cuMemAlloc" @ 13000, "cuMemAlloc_v2";
    cuMemFree: PFN_cuMemFree_v2 = "cuMemFree" @ 13000, "cuMemFree_v2";
    cuMemHostAlloc: PFN_cuMemHostAlloc = "cuMemHostAlloc" @ 13000, "cuMemHostAlloc";
    cuMemFreeHost: PFN_cuMemFreeHost = "cuMemFreeHost" @ 13000, "cuMemFreeHost";
    cuMemAllocAsync: PFN_cuMemAllocAsync = "cuMemAllocAsync" @ 13000, "cuMemAllocAsync";
    cuMemFreeAsync: PFN_cuMemFreeAsync = "cuMemFreeAsync" @ 13000, "cuMemFreeAsync";
    cuMemcpyHtoD: PFN_cuMemcpyHtoD_v2 = "cuMemcpyHtoD" @ 13000, "cuMemcpyHtoD_v2";
    cuMemcpyDtoH: PFN_cuMemcpyDtoH_v2 = "cuMemcpyDtoH" @ 13000, "cuMemcpyDtoH_v2";
    cuMemcpyDtoD: PFN_cuMemcpyDtoD_v2 = "cuMemcpyDtoD" @ 13000, "cuMemcpyDtoD_v2";
    cuMemcpyHtoDAsync: PFN_cuMemcpyHtoDAsync_v2 = "cuMemcpyHtoDAsync" @ 13000, "cuMemcpyHtoDAsync_v2";
    cuMemcpyDtoHAsync: PFN_cuMemcpyDtoHAsync_v2 = "cuMemcpyDtoHAsync" @ 13000, "cuMemcpyDtoHAsync_v2";
    cuMemcpyDtoDAsync: PFN_cuMemcpyDtoDAsync_v2 = "cuMemcpyDtoDAsync" @ 13000, "cuMemcpyDtoDAsync_v2";
    cuMemcpyAsync: PFN_cuMemcpyAsync = "cuMemcpyAsync" @ 13000, "cuMemcpyAsync";
    cuMemsetD8: PFN_cuMemsetD8_v2 = "cuMemsetD8" @ 13000, "cuMemsetD8_v2";
    cuMemsetD16: PFN_cuMemsetD16_v2 = "cuMemsetD16" @ 13000, "cuMemsetD16_v2";
    cuMemsetD32: PFN_cuMemsetD32_v2 = "cuMemsetD32" @ 13000, "cuMemsetD32_v2";
    cuMemsetD32Async: PFN_cuMemsetD32Async = "cuMemsetD32Async" @ 13000, "cuMemsetD32Async";
    cuModuleLoadData: PFN_cuModuleLoadData = "cuModuleLoadData" @ 13000, "cuModuleLoadData";
    cuModuleGetFunction: PFN_cuModuleGetFunction = "cuModuleGetFunction" @ 13000, "cuModuleGetFunction";
    cuLibraryLoadData: PFN_cuLibraryLoadData = "cuLibraryLoadData" @ 13000, "cuLibraryLoadData";
    cuLibraryGetKernel: PFN_cuLibraryGetKernel = "cuLibraryGetKernel" @ 13000, "cuLibraryGetKernel";
    cuLibraryUnload: PFN_cuLibraryUnload = "cuLibraryUnload" @ 13000, "cuLibraryUnload";
    cuKernelGetFunction: PFN_cuKernelGetFunction = "cuKernelGetFunction" @ 13000, "cuKernelGetFunction";
    cuKernelGetParamInfo: PFN_cuKernelGetParamInfo = "cuKernelGetParamInfo" @ 13000, "cuKernelGetParamInfo";
    cuFuncGetParamInfo: PFN_cuFuncGetParamInfo = "cuFuncGetParamInfo" @ 13000, "cuFuncGetParamInfo";
    cuFuncGetName: PFN_cuFuncGetName = "cuFuncGetName" @ 13000, "cuFuncGetName";
    cuFuncSetAttribute: PFN_cuFuncSetAttribute = "cuFuncSetAttribute" @ 13000, "cuFuncSetAttribute";
    cuKernelSetAttribute: PFN_cuKernelSetAttribute = "cuKernelSetAttribute" @ 13000, "cuKernelSetAttribute";
    cuLaunchKernel: PFN_cuLaunchKernel = "cuLaunchKernel" @ 12000, "cuLaunchKernel";
    cuLaunchKernelEx: PFN_cuLaunchKernelEx = "cuLaunchKernelEx" @ 12000, "cuLaunchKernelEx";
    cuLaunchCooperativeKernel: PFN_cuLaunchCooperativeKernel = "cuLaunchCooperativeKernel" @ 12000, "cuLaunchCooperativeKernel";
    cuLaunchHostFunc: PFN_cuLaunchHostFunc = "cuLaunchHostFunc" @ 12000, "cuLaunchHostFunc";
    cuStreamCreate: PFN_cuStreamCreate = "cuStreamCreate" @ 12000, "cuStreamCreate";
    cuStreamCreateWithPriority: PFN_cuStreamCreateWithPriority = "cuStreamCreateWithPriority" @ 12000, "cuStreamCreateWithPriority";
    cuStreamDestroy: PFN_cuStreamDestroy_v2 = "cuStreamDestroy" @ 12000, "cuStreamDestroy";
    cuStreamSynchronize: PFN_cuStreamSynchronize = "cuStreamSynchronize" @ 12000, "cuStreamSynchronize";
    cuStreamQuery: PFN_cuStreamQuery = "cuStreamQuery" @ 12000, "cuStreamQuery";
    cuStreamWaitEvent: PFN_cuStreamWaitEvent = "cuStreamWaitEvent" @ 12000, "cuStreamWaitEvent";
    cuStreamGetPriority: PFN_cuStreamGetPriority = "cuStreamGetPriority" @ 12000, "cuStreamGetPriority";
    cuStreamGetFlags: PFN_cuStreamGetFlags = "cuStreamGetFlags" @ 12000, "cuStreamGetFlags";
    cuStreamBeginCapture: PFN_cuStreamBeginCapture_v2 = "cuStreamBeginCapture" @ 12000, "cuStreamBeginCapture_v2";
    cuStreamEndCapture: PFN_cuStreamEndCapture = "cuStreamEndCapture" @ 12000, "cuStreamEndCapture";
    cuStreamIsCapturing: PFN_cuStreamIsCapturing = "cuStreamIsCapturing" @ 12000, "cuStreamIsCapturing";
    cuStreamGetCaptureInfo: PFN_cuStreamGetCaptureInfo_v3 = "cuStreamGetCaptureInfo" @ 13000, "cuStreamGetCaptureInfo_v3";
    cuStreamWaitValue32: PFN_cuStreamWaitValue32_v2 = "cuStreamWaitValue32" @ 12000, "cuStreamWaitValue32";
    cuStreamWriteValue32: PFN_cuStreamWriteValue32_v2 = "cuStreamWriteValue32" @ 12000, "cuStreamWriteValue32";
    cuEventCreate: PFN_cuEventCreate = "cuEventCreate" @ 12000, "cuEventCreate";
    cuEventRecord: PFN_cuEventRecord = "cuEventRecord" @ 12000, "cuEventRecord";
    cuEventQuery: PFN_cuEventQuery = "cuEventQuery" @ 12000, "cuEventQuery";
    cuEventSynchronize: PFN_cuEventSynchronize = "cuEventSynchronize" @ 12000, "cuEventSynchronize";
    cuEventElapsedTime: PFN_cuEventElapsedTime_v2 = "cuEventElapsedTime" @ 13000, "cuEventElapsedTime_v2";
    cuEventDestroy: PFN_cuEventDestroy_v2 = "cuEventDestroy" @ 12000, "cuEventDestroy";
    cuGraphInstantiate: PFN_cuGraphInstantiateWithFlags = "cuGraphInstantiate" @ 12000, "cuGraphInstantiateWithFlags";
    cuGraphLaunch: PFN_cuGraphLaunch = "cuGraphLaunch" @ 12000, "cuGraphLaunch";
    cuGraphExecDestroy: PFN_cuGraphExecDestroy = "cuGraphExecDestroy" @ 12000, "cuGraphExecDestroy";
    cuGraphDestroy: PFN_cuGraphDestroy = "cuGraphDestroy" @ 12000, "cuGraphDestroy";
}
