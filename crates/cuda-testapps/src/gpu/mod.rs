//! Checked wrappers over the driver calls the scenarios make, so scenarios hold no `unsafe`.
//!
//! Each wrapper passes only pointers to live Rust values or to memory the driver allocated;
//! handles are opaque values given back to the driver that made them.

// Handles (`CUstream`, `CUfunction`, …) are raw pointers in C, but opaque values: the driver
// validates them and nothing dereferences them as host memory, so taking them is safe.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{CStr, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use baton_cuda_sys::{CUcontext, CUdeviceptr, CUfunction, CUkernel, CUlibrary, CUmodule, CUresult};

use crate::api::Api;
use crate::error::{AppError, expect_code};

/// The fake-driver module image naming every built-in kernel the scenarios use.
pub const MODULE_IMAGE: &CStr =
    c".fake_cuda_module add_i32 mul_i32 fill_i32 copy_i32 spin_us append_tag mixed empty";

/// One kernel argument, by C type.
#[derive(Clone, Copy, Debug)]
pub enum KArg {
    /// `char`.
    I8(i8),
    /// `short`.
    I16(i16),
    /// `int`.
    I32(i32),
    /// `unsigned long long`.
    U64(u64),
    /// `double`.
    F64(f64),
    /// A device pointer.
    Ptr(CUdeviceptr),
}

impl KArg {
    fn as_ptr(&mut self) -> *mut c_void {
        match self {
            KArg::I8(v) => (v as *mut i8).cast(),
            KArg::I16(v) => (v as *mut i16).cast(),
            KArg::I32(v) => (v as *mut i32).cast(),
            KArg::U64(v) | KArg::Ptr(v) => (v as *mut u64).cast(),
            KArg::F64(v) => (v as *mut f64).cast(),
        }
    }

    fn bytes(&self) -> Vec<u8> {
        match self {
            KArg::I8(v) => v.to_ne_bytes().to_vec(),
            KArg::I16(v) => v.to_ne_bytes().to_vec(),
            KArg::I32(v) => v.to_ne_bytes().to_vec(),
            KArg::U64(v) | KArg::Ptr(v) => v.to_ne_bytes().to_vec(),
            KArg::F64(v) => v.to_ne_bytes().to_vec(),
        }
    }
}

/// The functions of the loaded module.
#[derive(Clone, Copy)]
pub struct Kernels {
    /// `add_i32(int* data, int n, int value)`.
    pub add: CUfunction,
    /// `mul_i32(int* data, int n, int factor)`.
    pub mul: CUfunction,
    /// `fill_i32(int* data, int n, int value)`.
    pub fill: CUfunction,
    /// `copy_i32(int* dst, const int* src, int n)`.
    pub copy: CUfunction,
    /// `spin_us(unsigned long long us)`.
    pub spin: CUfunction,
    /// `append_tag(int* log, int* counter, int tag)`.
    pub append: CUfunction,
    /// `mixed(char a, double b, int* p, short c)`.
    pub mixed: CUfunction,
    /// `empty()`.
    pub empty: CUfunction,
}

// SAFETY: function handles are opaque values the driver accepts from any thread.
unsafe impl Send for Kernels {}
// SAFETY: as above; `Kernels` is plain data.
unsafe impl Sync for Kernels {}

/// A context handle that may cross threads (the driver allows any thread to make it current).
#[derive(Clone, Copy)]
pub struct Ctx(pub CUcontext);

// SAFETY: a context handle is an opaque value the driver accepts from any thread.
unsafe impl Send for Ctx {}
// SAFETY: as above.
unsafe impl Sync for Ctx {}

/// Pinned, device-mapped host memory of `i32`s, read and written atomically because the
/// device (a stream worker) may access it concurrently.
pub struct Pinned {
    ptr: *mut AtomicI32,
    len: usize,
}

impl Pinned {
    /// Its address, usable as a device pointer (unified addressing).
    pub fn addr(&self) -> CUdeviceptr {
        self.ptr as CUdeviceptr
    }

    fn slot(&self, index: usize) -> &AtomicI32 {
        assert!(index < self.len, "pinned index {index} out of {}", self.len);
        // SAFETY: `ptr` points to `len` i32s allocated by cuMemHostAlloc (4-byte aligned,
        // zero-initialized or written since), live until `free_pinned`; `index < len`.
        unsafe { &*self.ptr.add(index) }
    }

    /// Reads element `index`.
    pub fn get(&self, index: usize) -> i32 {
        self.slot(index).load(Ordering::Acquire)
    }

    /// Writes element `index`.
    pub fn set(&self, index: usize, value: i32) {
        self.slot(index).store(value, Ordering::Release);
    }

    /// All elements.
    pub fn to_vec(&self) -> Vec<i32> {
        (0..self.len).map(|i| self.get(i)).collect()
    }
}

/// A resolved driver API plus checked call wrappers.
#[derive(Clone, Copy)]
pub struct Gpu {
    /// The raw functions.
    pub api: Api,
}

// SAFETY: `Api` holds only driver function pointers, callable from any thread.
unsafe impl Send for Gpu {}
// SAFETY: as above.
unsafe impl Sync for Gpu {}

/// Calls `gpu.api.$f(args)` and checks it returns success.
macro_rules! call {
    ($gpu:expr, $f:ident($($arg:expr),* $(,)?)) => {{
        // SAFETY: each wrapper passes live Rust values, driver-allocated memory, or handles
        // the same driver created; see the module documentation.
        let code = unsafe { ($gpu.api.$f)($($arg),*) };
        expect_code(stringify!($f), code, CUresult::SUCCESS)
    }};
}

/// Calls `gpu.api.$f(args)` and returns its code unchecked.
macro_rules! code {
    ($gpu:expr, $f:ident($($arg:expr),* $(,)?)) => {{
        // SAFETY: as for `call!`.
        unsafe { ($gpu.api.$f)($($arg),*) }
    }};
}

mod launch;
mod memory;
mod streams;

impl Gpu {
    /// `cuInit(0)`, checks the device, retains the primary context and makes it current, as the
    /// CUDA runtime does.
    pub fn init_primary(&self) -> Result<Ctx, AppError> {
        call!(self, cuInit(0))?;
        let (mut version, mut count, mut dev, mut sms) = (0, 0, 0, 0);
        call!(self, cuDriverGetVersion(&mut version))?;
        call!(self, cuDeviceGetCount(&mut count))?;
        call!(self, cuDeviceGet(&mut dev, 0))?;
        call!(
            self,
            cuDeviceGetAttribute(
                &mut sms,
                baton_cuda_sys::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                dev
            )
        )?;
        crate::error::ensure(version >= 12000 && count >= 1 && sms > 0, || {
            format!("device: version {version}, count {count}, SMs {sms}")
        })?;
        let mut ctx = std::ptr::null_mut();
        call!(self, cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
        call!(self, cuCtxSetCurrent(ctx))?;
        Ok(Ctx(ctx))
    }

    /// The UUID of device `ordinal`, as `nvidia-smi -L` prints it.
    pub fn device_uuid(&self, ordinal: i32) -> Result<String, AppError> {
        let mut dev = 0;
        call!(self, cuDeviceGet(&mut dev, ordinal))?;
        let mut id = baton_cuda_sys::CUuuid::default();
        call!(self, cuDeviceGetUuid(&mut id, dev))?;
        Ok(id.to_string())
    }

    /// How many devices the process sees.
    pub fn device_count(&self) -> Result<i32, AppError> {
        let mut n = 0;
        call!(self, cuDeviceGetCount(&mut n))?;
        Ok(n)
    }

    /// Retains device `ordinal`'s primary context and makes it current.
    pub fn primary_on(&self, ordinal: i32) -> Result<Ctx, AppError> {
        let mut dev = 0;
        call!(self, cuDeviceGet(&mut dev, ordinal))?;
        let mut ctx = std::ptr::null_mut();
        call!(self, cuDevicePrimaryCtxRetain(&mut ctx, dev))?;
        call!(self, cuCtxSetCurrent(ctx))?;
        Ok(Ctx(ctx))
    }

    /// The current context's device ordinal.
    pub fn ctx_device(&self) -> Result<i32, AppError> {
        let mut dev = -1;
        call!(self, cuCtxGetDevice(&mut dev))?;
        Ok(dev)
    }

    /// `cuInit(0)` and `cuCtxCreate_v2`, as a driver-API application does.
    pub fn init_created(&self) -> Result<Ctx, AppError> {
        call!(self, cuInit(0))?;
        let mut dev = 0;
        call!(self, cuDeviceGet(&mut dev, 0))?;
        let mut ctx = std::ptr::null_mut();
        call!(self, cuCtxCreate(&mut ctx, 0, dev))?;
        Ok(Ctx(ctx))
    }

    /// `cuInit(0)`'s code.
    pub fn init_code(&self) -> CUresult {
        code!(self, cuInit(0))
    }

    /// Makes `ctx` current on the calling thread.
    pub fn set_current(&self, ctx: Ctx) -> Result<(), AppError> {
        call!(self, cuCtxSetCurrent(ctx.0))
    }

    /// `cuCtxSetCurrent`'s code.
    pub fn set_current_code(&self, ctx: Ctx) -> CUresult {
        code!(self, cuCtxSetCurrent(ctx.0))
    }

    /// Destroys a created context.
    pub fn destroy_context(&self, ctx: Ctx) -> Result<(), AppError> {
        call!(self, cuCtxDestroy(ctx.0))
    }

    /// `cuCtxSynchronize`.
    pub fn ctx_sync(&self) -> Result<(), AppError> {
        call!(self, cuCtxSynchronize())
    }

    /// `cuCtxSynchronize_v2(NULL)`: the current context, as CUDA 13's `cudaDeviceSynchronize`
    /// asks for it.
    pub fn device_sync(&self) -> Result<(), AppError> {
        call!(self, cuCtxSynchronize_v2(std::ptr::null_mut()))
    }

    /// Loads [`MODULE_IMAGE`] and looks up its functions.
    pub fn load_kernels(&self) -> Result<Kernels, AppError> {
        let mut module: CUmodule = std::ptr::null_mut();
        call!(
            self,
            cuModuleLoadData(&mut module, MODULE_IMAGE.as_ptr().cast())
        )?;
        let get = |name: &CStr| -> Result<CUfunction, AppError> {
            let mut f = std::ptr::null_mut();
            call!(self, cuModuleGetFunction(&mut f, module, name.as_ptr()))?;
            Ok(f)
        };
        Ok(Kernels {
            add: get(c"add_i32")?,
            mul: get(c"mul_i32")?,
            fill: get(c"fill_i32")?,
            copy: get(c"copy_i32")?,
            spin: get(c"spin_us")?,
            append: get(c"append_tag")?,
            mixed: get(c"mixed")?,
            empty: get(c"empty")?,
        })
    }

    /// Loads [`MODULE_IMAGE`] as a library and returns its kernel `name`.
    pub fn library_kernel(&self, name: &CStr) -> Result<CUkernel, AppError> {
        self.load_library(MODULE_IMAGE, name)
            .map(|(_, kernel)| kernel)
    }

    /// Loads the library `image` and returns it with its kernel `name`.
    pub fn load_library(
        &self,
        image: &CStr,
        name: &CStr,
    ) -> Result<(CUlibrary, CUkernel), AppError> {
        let mut library: CUlibrary = std::ptr::null_mut();
        let none = std::ptr::null_mut();
        call!(
            self,
            cuLibraryLoadData(
                &mut library,
                image.as_ptr().cast(),
                none,
                none.cast(),
                0,
                none.cast(),
                none.cast(),
                0
            )
        )?;
        let mut kernel = std::ptr::null_mut();
        call!(
            self,
            cuLibraryGetKernel(&mut kernel, library, name.as_ptr())
        )?;
        Ok((library, kernel))
    }

    /// Unloads a library.
    pub fn unload_library(&self, library: CUlibrary) -> Result<(), AppError> {
        call!(self, cuLibraryUnload(library))
    }

    /// The current context's function for a library kernel.
    pub fn kernel_function(&self, kernel: CUkernel) -> Result<CUfunction, AppError> {
        let mut f = std::ptr::null_mut();
        call!(self, cuKernelGetFunction(&mut f, kernel))?;
        Ok(f)
    }

    /// `cuFuncGetParamInfo`: offset and size, or the code (INVALID_VALUE past the last one).
    pub fn param_info(&self, f: CUfunction, index: usize) -> Result<(usize, usize), CUresult> {
        let (mut offset, mut size) = (0, 0);
        let code = code!(self, cuFuncGetParamInfo(f, index, &mut offset, &mut size));
        if code == CUresult::SUCCESS {
            Ok((offset, size))
        } else {
            Err(code)
        }
    }

    /// `cuKernelGetParamInfo`.
    pub fn kernel_param_info(
        &self,
        kernel: CUkernel,
        index: usize,
    ) -> Result<(usize, usize), CUresult> {
        let (mut offset, mut size) = (0, 0);
        let code = code!(
            self,
            cuKernelGetParamInfo(kernel, index, &mut offset, &mut size)
        );
        if code == CUresult::SUCCESS {
            Ok((offset, size))
        } else {
            Err(code)
        }
    }

    /// `cuFuncGetName`.
    pub fn func_name(&self, f: CUfunction) -> Result<String, AppError> {
        let mut name = std::ptr::null();
        call!(self, cuFuncGetName(&mut name, f))?;
        // SAFETY: on success the driver returns a NUL-terminated name it keeps alive.
        Ok(unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned())
    }

    /// `cuMemAlloc_v2`'s code (for calls expected to fail).
    pub fn alloc_code(&self) -> CUresult {
        let mut ptr = 0;
        code!(self, cuMemAlloc(&mut ptr, 16))
    }

    /// `cuGetErrorName`.
    pub fn error_name(&self, code: CUresult) -> String {
        let mut name = std::ptr::null();
        if code!(self, cuGetErrorName(code, &mut name)) != CUresult::SUCCESS || name.is_null() {
            return format!("{code}");
        }
        // SAFETY: on success the driver returns a static NUL-terminated name.
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    }
}
