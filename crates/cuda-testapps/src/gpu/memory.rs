//! Memory: allocation, copies and fills.

use baton_cuda_sys::{CU_MEMHOSTALLOC_DEVICEMAP, CUdeviceptr, CUresult, CUstream};

use super::{Gpu, Pinned};
use crate::error::{AppError, expect_code};

impl Gpu {
    /// Allocates `n` ints of device memory.
    pub fn alloc(&self, n: usize) -> Result<CUdeviceptr, AppError> {
        let mut ptr = 0;
        call!(self, cuMemAlloc(&mut ptr, n * 4))?;
        Ok(ptr)
    }

    /// Frees device memory.
    pub fn free(&self, ptr: CUdeviceptr) -> Result<(), AppError> {
        call!(self, cuMemFree(ptr))
    }

    /// Allocates `n` ints of pinned, mapped host memory (zeroed here).
    pub fn pinned(&self, n: usize) -> Result<Pinned, AppError> {
        let mut ptr = std::ptr::null_mut();
        call!(
            self,
            cuMemHostAlloc(&mut ptr, n * 4, CU_MEMHOSTALLOC_DEVICEMAP)
        )?;
        let pinned = Pinned {
            ptr: ptr.cast(),
            len: n,
        };
        (0..n).for_each(|i| pinned.set(i, 0));
        Ok(pinned)
    }

    /// Frees pinned memory.
    pub fn free_pinned(&self, pinned: Pinned) -> Result<(), AppError> {
        call!(self, cuMemFreeHost(pinned.ptr.cast()))
    }

    /// `cuMemAllocAsync`.
    pub fn alloc_async(&self, n: usize, stream: CUstream) -> Result<CUdeviceptr, AppError> {
        let mut ptr = 0;
        call!(self, cuMemAllocAsync(&mut ptr, n * 4, stream))?;
        Ok(ptr)
    }

    /// `cuMemFreeAsync`.
    pub fn free_async(&self, ptr: CUdeviceptr, stream: CUstream) -> Result<(), AppError> {
        call!(self, cuMemFreeAsync(ptr, stream))
    }

    /// `cuMemcpyHtoD_v2` (synchronous).
    pub fn upload(&self, dst: CUdeviceptr, data: &[i32]) -> Result<(), AppError> {
        call!(
            self,
            cuMemcpyHtoD(dst, data.as_ptr().cast(), size_of_val(data))
        )
    }

    /// `cuMemcpyDtoH_v2` (synchronous).
    pub fn download(&self, src: CUdeviceptr, n: usize) -> Result<Vec<i32>, AppError> {
        let mut out = vec![0i32; n];
        call!(self, cuMemcpyDtoH(out.as_mut_ptr().cast(), src, n * 4))?;
        Ok(out)
    }

    /// `cuMemcpyHtoDAsync_v2` from pageable memory (the driver stages it before returning).
    pub fn upload_async(
        &self,
        dst: CUdeviceptr,
        data: &[i32],
        stream: CUstream,
    ) -> Result<(), AppError> {
        call!(
            self,
            cuMemcpyHtoDAsync(dst, data.as_ptr().cast(), size_of_val(data), stream)
        )
    }

    /// `cuMemcpyDtoHAsync_v2` into pinned memory (complete after a stream synchronization).
    pub fn download_async(
        &self,
        dst: &Pinned,
        src: CUdeviceptr,
        n: usize,
        stream: CUstream,
    ) -> Result<(), AppError> {
        assert!(n <= dst.len);
        call!(self, cuMemcpyDtoHAsync(dst.ptr.cast(), src, n * 4, stream))
    }

    /// `cuMemcpyDtoD_v2` (synchronous).
    pub fn copy(&self, dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> Result<(), AppError> {
        call!(self, cuMemcpyDtoD(dst, src, n * 4))
    }

    /// `cuMemcpyDtoDAsync_v2`.
    pub fn copy_async(
        &self,
        dst: CUdeviceptr,
        src: CUdeviceptr,
        n: usize,
        stream: CUstream,
    ) -> Result<(), AppError> {
        call!(self, cuMemcpyDtoDAsync(dst, src, n * 4, stream))
    }

    /// `cuMemcpyAsync` (unified addressing) between device or pinned addresses.
    pub fn memcpy_async(
        &self,
        dst: CUdeviceptr,
        src: CUdeviceptr,
        n: usize,
        stream: CUstream,
    ) -> Result<(), AppError> {
        call!(self, cuMemcpyAsync(dst, src, n * 4, stream))
    }

    /// `cuMemsetD8_v2` over `bytes` bytes.
    pub fn memset8(&self, dst: CUdeviceptr, value: u8, bytes: usize) -> Result<(), AppError> {
        call!(self, cuMemsetD8(dst, value, bytes))
    }

    /// `cuMemsetD16_v2` over `count` 16-bit words.
    pub fn memset16(&self, dst: CUdeviceptr, value: u16, count: usize) -> Result<(), AppError> {
        call!(self, cuMemsetD16(dst, value, count))
    }

    /// `cuMemsetD32_v2` over `count` ints.
    pub fn memset32(&self, dst: CUdeviceptr, value: u32, count: usize) -> Result<(), AppError> {
        call!(self, cuMemsetD32(dst, value, count))
    }

    /// `cuMemsetD32Async`.
    pub fn memset32_async(
        &self,
        dst: CUdeviceptr,
        value: u32,
        count: usize,
        stream: CUstream,
    ) -> Result<(), AppError> {
        call!(self, cuMemsetD32Async(dst, value, count, stream))
    }
}
