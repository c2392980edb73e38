//! Launches: kernel arguments by every path, attributes, host functions.

use std::ffi::c_void;

use baton_cuda_sys::{
    CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END, CUfunction,
    CUhostFn, CUkernel, CUlaunchAttribute, CUlaunchConfig, CUresult, CUstream,
};

use super::{Gpu, KArg};
use crate::error::{AppError, expect_code};

impl Gpu {
    /// `cuLaunchKernel` (1×1×1 grid of 32 threads) with `kernelParams`.
    pub fn launch(&self, f: CUfunction, stream: CUstream, args: &[KArg]) -> Result<(), AppError> {
        self.launch_shared(f, stream, 0, args)
    }

    /// `cuLaunchKernel` with `shared` bytes of dynamic shared memory.
    pub fn launch_shared(
        &self,
        f: CUfunction,
        stream: CUstream,
        shared: u32,
        args: &[KArg],
    ) -> Result<(), AppError> {
        let mut args = args.to_vec();
        let mut params: Vec<*mut c_void> = args.iter_mut().map(KArg::as_ptr).collect();
        let params_ptr = if params.is_empty() {
            std::ptr::null_mut()
        } else {
            params.as_mut_ptr()
        };
        call!(
            self,
            cuLaunchKernel(
                f,
                1,
                1,
                1,
                32,
                1,
                1,
                shared,
                stream,
                params_ptr,
                std::ptr::null_mut()
            )
        )
    }

    /// `cuFuncSetAttribute` for the dynamic shared memory limit.
    pub fn set_max_dynamic_shared(&self, f: CUfunction, bytes: i32) -> Result<(), AppError> {
        call!(
            self,
            cuFuncSetAttribute(
                f,
                baton_cuda_sys::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes
            )
        )
    }

    /// `cuKernelSetAttribute` on the session's device: how the CUDA runtime sets the
    /// attributes of the library kernels it launches (the driver refuses a kernel in
    /// `cuFuncSetAttribute`).
    pub fn set_kernel_attribute(
        &self,
        kernel: CUkernel,
        attrib: std::ffi::c_uint,
        value: i32,
    ) -> Result<(), AppError> {
        call!(self, cuKernelSetAttribute(attrib, value, kernel, 0))
    }

    /// `cuFuncSetAttribute` for the preferred shared memory carveout (a percentage).
    pub fn set_carveout(&self, f: CUfunction, percent: i32) -> Result<(), AppError> {
        call!(
            self,
            cuFuncSetAttribute(
                f,
                baton_cuda_sys::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                percent
            )
        )
    }

    /// `cuLaunchKernel` with a caller-owned argument array (the driver must copy it at launch).
    pub fn launch_with(
        &self,
        f: CUfunction,
        stream: CUstream,
        args: &mut [KArg],
    ) -> Result<(), AppError> {
        let mut params: Vec<*mut c_void> = args.iter_mut().map(KArg::as_ptr).collect();
        call!(
            self,
            cuLaunchKernel(
                f,
                1,
                1,
                1,
                32,
                1,
                1,
                0,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut()
            )
        )
    }

    /// Packs `args` at the offsets `cuFuncGetParamInfo` reports, as frameworks do.
    pub fn pack(&self, f: CUfunction, args: &[KArg]) -> Result<Vec<u8>, AppError> {
        let mut buffer = Vec::new();
        for (index, arg) in args.iter().enumerate() {
            let (offset, size) = self.param_info(f, index).map_err(|code| AppError::Cuda {
                call: "cuFuncGetParamInfo",
                code,
                expected: CUresult::SUCCESS,
            })?;
            let bytes = arg.bytes();
            crate::error::ensure(bytes.len() == size, || {
                format!("param {index}: size {size}, argument {}", bytes.len())
            })?;
            buffer.resize(buffer.len().max(offset + size), 0);
            buffer[offset..offset + size].copy_from_slice(&bytes);
        }
        Ok(buffer)
    }

    /// `cuLaunchKernel` with an `extra` packed buffer.
    pub fn launch_packed(
        &self,
        f: CUfunction,
        stream: CUstream,
        buffer: &mut [u8],
    ) -> Result<(), AppError> {
        let mut size = buffer.len();
        let mut extra = [
            CU_LAUNCH_PARAM_BUFFER_POINTER,
            buffer.as_mut_ptr().cast(),
            CU_LAUNCH_PARAM_BUFFER_SIZE,
            (&raw mut size).cast(),
            CU_LAUNCH_PARAM_END,
        ];
        call!(
            self,
            cuLaunchKernel(
                f,
                2,
                1,
                1,
                64,
                1,
                1,
                0,
                stream,
                std::ptr::null_mut(),
                extra.as_mut_ptr()
            )
        )
    }

    /// `cuLaunchKernelEx` with attributes and `kernelParams`.
    pub fn launch_ex(
        &self,
        f: CUfunction,
        stream: CUstream,
        attrs: &mut [CUlaunchAttribute],
        args: &[KArg],
    ) -> Result<(), AppError> {
        let mut args = args.to_vec();
        let mut params: Vec<*mut c_void> = args.iter_mut().map(KArg::as_ptr).collect();
        let config = CUlaunchConfig {
            gridDimX: 4,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: 128,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 1024,
            hStream: stream,
            attrs: attrs.as_mut_ptr(),
            numAttrs: u32::try_from(attrs.len()).unwrap_or(0),
        };
        call!(
            self,
            cuLaunchKernelEx(&config, f, params.as_mut_ptr(), std::ptr::null_mut())
        )
    }

    /// `cuLaunchCooperativeKernel`.
    pub fn launch_cooperative(
        &self,
        f: CUfunction,
        stream: CUstream,
        args: &[KArg],
    ) -> Result<(), AppError> {
        let mut args = args.to_vec();
        let mut params: Vec<*mut c_void> = args.iter_mut().map(KArg::as_ptr).collect();
        call!(
            self,
            cuLaunchCooperativeKernel(f, 2, 1, 1, 32, 1, 1, 0, stream, params.as_mut_ptr())
        )
    }

    /// `cuLaunchHostFunc`.
    ///
    /// # Safety
    ///
    /// `func` will be called with `data` on a driver thread once the stream reaches it: `data`
    /// must be what `func` expects and stay valid until then.
    pub unsafe fn host_func(
        &self,
        stream: CUstream,
        func: CUhostFn,
        data: *mut c_void,
    ) -> Result<(), AppError> {
        call!(self, cuLaunchHostFunc(stream, func, data))
    }
}
