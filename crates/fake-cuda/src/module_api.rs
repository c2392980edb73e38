//! Module, library, function and kernel entry points.
//!
//! Unloading a module or library frees its functions' handles, and the next functions loaded
//! get them back, most recently freed first: on a GPU a handle is an address, and frameworks
//! that load and unload code while they run (cuDNN, PyTorch's training loop: measured 25
//! unloads in ten ResNet-18 steps) see the same values again for other kernels.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use baton_cuda_sys::{
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, CUdevice, CUfunction, CUjit_option,
    CUkernel, CUlibrary, CUlibraryOption, CUmodule, CUresult,
};

use crate::current;
use crate::device;
use crate::entry::exports;
use crate::handle::{Kind, raw_of, to_ptr};
use crate::kernels::KernelDef;
use crate::module::{Function, Library, MAX_DYNAMIC_SHARED, Module, parse_image};
use crate::result::{CuResult, put};
use crate::state::{Global, initialized};
use crate::sync::lock;

fn new_function(g: &Global, kind: Kind, def: &'static KernelDef, kernel: Option<u64>) -> u64 {
    let recycled = {
        let mut free = lock(&g.freed_functions);
        let at = free.iter().rposition(|h| h.raw >> 56 == kind as u64);
        at.map(|i| free.remove(i))
    };
    let function = Arc::new(Function::new(
        recycled.unwrap_or_else(|| g.handle(kind)),
        def,
        kernel,
    ));
    let raw = function.handle.raw;
    g.functions.insert(raw, function);
    raw
}

/// Forgets a function or kernel; its handle goes to the next one loaded.
fn free_function(g: &Global, raw: u64) -> Option<Arc<Function>> {
    let function = g.functions.remove(raw)?;
    lock(&g.freed_functions).push(function.handle);
    Some(function)
}

unsafe fn name_arg<'a>(name: *const c_char) -> CuResult<&'a str> {
    if name.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: a non-NULL name is a NUL-terminated string, as the API requires.
    unsafe { CStr::from_ptr(name) }
        .to_str()
        .map_err(|_| CUresult::NOT_FOUND)
}

unsafe fn module_load(out: *mut CUmodule, image: *const c_void) -> CuResult<()> {
    let g = initialized()?;
    current::context()?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: the caller passes a module image, as the API requires.
    let defs = unsafe { parse_image(image)? };
    let functions = defs
        .into_iter()
        .map(|def| (def.name(), new_function(g, Kind::Function, def, None)))
        .collect();
    let handle = g.handle(Kind::Module);
    g.modules.insert(handle.raw, Arc::new(Module { functions }));
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, to_ptr(handle.raw)) }
}

unsafe fn module_get_function(
    out: *mut CUfunction,
    module: CUmodule,
    name: *const c_char,
) -> CuResult<()> {
    let g = initialized()?;
    let module = g
        .modules
        .get(raw_of(module))
        .ok_or(CUresult::INVALID_HANDLE)?;
    // SAFETY: forwarded from the caller.
    let name = unsafe { name_arg(name)? };
    let raw = module
        .functions
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or(CUresult::NOT_FOUND)?
        .1;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, to_ptr(raw)) }
}

fn module_unload(module: CUmodule) -> CuResult<()> {
    let g = initialized()?;
    let module = g
        .modules
        .remove(raw_of(module))
        .ok_or(CUresult::INVALID_HANDLE)?;
    for (_, raw) in &module.functions {
        free_function(g, *raw);
    }
    Ok(())
}

/// The option arrays of `cuLibraryLoadData`: checked for consistency, otherwise ignored.
struct LibraryOptions {
    jit: (*mut CUjit_option, *mut *mut c_void, c_uint),
    library: (*mut CUlibraryOption, *mut *mut c_void, c_uint),
}

impl LibraryOptions {
    fn check(&self) -> CuResult<()> {
        let (keys, values, count) = self.jit;
        let jit_ok = count == 0 || (!keys.is_null() && !values.is_null());
        let (keys, values, count) = self.library;
        let library_ok = count == 0 || (!keys.is_null() && !values.is_null());
        if jit_ok && library_ok {
            Ok(())
        } else {
            Err(CUresult::INVALID_VALUE)
        }
    }
}

unsafe fn library_load(
    out: *mut CUlibrary,
    code: *const c_void,
    options: &LibraryOptions,
) -> CuResult<()> {
    let g = initialized()?;
    options.check()?;
    if out.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: the caller passes a library image, as the API requires.
    let defs = unsafe { parse_image(code)? };
    let kernels = defs
        .into_iter()
        .map(|def| (def.name(), new_function(g, Kind::Kernel, def, None)))
        .collect();
    let handle = g.handle(Kind::Library);
    g.libraries.insert(
        handle.raw,
        Arc::new(Library {
            kernels: Mutex::new(kernels),
        }),
    );
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, to_ptr(handle.raw)) }
}

fn library_unload(library: CUlibrary) -> CuResult<()> {
    let g = initialized()?;
    let library = g
        .libraries
        .remove(raw_of(library))
        .ok_or(CUresult::INVALID_HANDLE)?;
    for (_, raw) in lock(&library.kernels).iter() {
        if let Some(kernel) = free_function(g, *raw) {
            if let Some(function) = kernel.function.get() {
                free_function(g, *function);
            }
        }
    }
    Ok(())
}

unsafe fn library_get_kernel(
    out: *mut CUkernel,
    library: CUlibrary,
    name: *const c_char,
) -> CuResult<()> {
    let g = initialized()?;
    let library = g
        .libraries
        .get(raw_of(library))
        .ok_or(CUresult::INVALID_HANDLE)?;
    // SAFETY: forwarded from the caller.
    let name = unsafe { name_arg(name)? };
    let raw = lock(&library.kernels)
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or(CUresult::NOT_FOUND)?
        .1;
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, to_ptr(raw)) }
}

/// `raw`, unless it names a library kernel (`CUDA_ERROR_INVALID_HANDLE`).
fn function_only(raw: u64) -> CuResult<u64> {
    if raw >> 56 == Kind::Kernel as u64 {
        return Err(CUresult::INVALID_HANDLE);
    }
    Ok(raw)
}

/// The function or kernel a handle names.
pub(crate) fn find_function(raw: u64) -> CuResult<Arc<Function>> {
    initialized()?
        .functions
        .get(raw)
        .ok_or(CUresult::INVALID_HANDLE)
}

unsafe fn kernel_get_function(out: *mut CUfunction, kernel: CUkernel) -> CuResult<()> {
    let g = initialized()?;
    current::context()?;
    let kernel_raw = raw_of(kernel);
    let kernel = find_function(kernel_raw)?;
    let raw = *kernel
        .function
        .get_or_init(|| new_function(g, Kind::Function, kernel.def, Some(kernel_raw)));
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, to_ptr(raw)) }
}

unsafe fn param_info(raw: u64, index: usize, offset: *mut usize, size: *mut usize) -> CuResult<()> {
    let function = find_function(raw)?;
    let (param_offset, param_size) = function
        .def
        .param_info(index)
        .ok_or(CUresult::INVALID_VALUE)?;
    // SAFETY: the caller guarantees each pointer is NULL or writable.
    unsafe {
        put(offset, param_offset)?;
        put(size, param_size)
    }
}

/// The dynamic shared memory limit in force for a launch of `function` (a function, a
/// kernel's function, or a kernel): a function's own value once it has one, else its kernel's
/// (see `module.rs`).
pub(crate) fn limit_in_force(function: &Function) -> u32 {
    let own = |f: &Function| f.max_dynamic_shared.load(Ordering::Acquire);
    let function_of_kernel = function
        .function
        .get()
        .and_then(|raw| find_function(*raw).ok());
    match (function.kernel, function_of_kernel) {
        // A kernel's function without a value of its own follows the kernel.
        (Some(kernel), _) if !function.own_limit.load(Ordering::Acquire) => {
            find_function(kernel).map_or_else(|_| own(function), |k| own(&k))
        }
        // A kernel whose function has a value of its own launches with that.
        (None, Some(f)) if f.own_limit.load(Ordering::Acquire) => own(&f),
        _ => own(function),
    }
}

/// Only the dynamic-shared-memory limit is modelled, and the carveout kept (a preference
/// with no effect here); other attributes are refused. `in_force`: the limit in force
/// (`cuFuncGetAttribute`), else the handle's own (`cuKernelGetAttribute`).
unsafe fn get_attribute(out: *mut c_int, attrib: c_uint, raw: u64, in_force: bool) -> CuResult<()> {
    let function = find_function(raw)?;
    let value = match attrib {
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES if in_force => limit_in_force(&function),
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES => {
            function.max_dynamic_shared.load(Ordering::Acquire)
        }
        CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT => {
            function.carveout.load(Ordering::Acquire)
        }
        _ => return Err(CUresult::NOT_SUPPORTED),
    };
    // SAFETY: the caller guarantees `out` is NULL or writable.
    unsafe { put(out, i32::try_from(value).unwrap_or(i32::MAX)) }
}

/// Sets an attribute; `function_call`: through `cuFuncSetAttribute`, which gives a function a
/// limit of its own.
fn set_attribute(attrib: c_uint, value: c_int, raw: u64, function_call: bool) -> CuResult<()> {
    let function = find_function(raw)?;
    if attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT {
        let value = u32::try_from(value)
            .ok()
            .filter(|v| *v <= 100)
            .ok_or(CUresult::INVALID_VALUE)?;
        function
            .carveout
            .store(value, std::sync::atomic::Ordering::Release);
        return Ok(());
    }
    if attrib != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES {
        return Err(CUresult::NOT_SUPPORTED);
    }
    let value = u32::try_from(value)
        .ok()
        .filter(|_| value <= MAX_DYNAMIC_SHARED)
        .ok_or(CUresult::INVALID_VALUE)?;
    function
        .max_dynamic_shared
        .store(value, std::sync::atomic::Ordering::Release);
    if function_call {
        function.own_limit.store(true, Ordering::Release);
    }
    Ok(())
}

unsafe fn get_name(out: *mut *const c_char, raw: u64) -> CuResult<()> {
    let function = find_function(raw)?;
    // SAFETY: the caller guarantees `out` is NULL or writable; the name is a static C string.
    unsafe { put(out, function.def.name.as_ptr()) }
}

exports! {
    /// Loads a fake module image (see the module documentation).
    fn cuModuleLoadData(module: *mut CUmodule, image: *const c_void): PFN_cuModuleLoadData => module_load(module, image);
    /// Returns a module's function by name.
    fn cuModuleGetFunction(hfunc: *mut CUfunction, hmod: CUmodule, name: *const c_char): PFN_cuModuleGetFunction
        => module_get_function(hfunc, hmod, name);
    /// Unloads a module.
    fn cuModuleUnload(hmod: CUmodule): PFN_cuModuleUnload => module_unload(hmod);
    /// Loads a fake library image (options are ignored).
    fn cuLibraryLoadData(
        library: *mut CUlibrary, code: *const c_void, jitOptions: *mut CUjit_option, jitOptionsValues: *mut *mut c_void,
        numJitOptions: c_uint, libraryOptions: *mut CUlibraryOption, libraryOptionValues: *mut *mut c_void,
        numLibraryOptions: c_uint,
    ): PFN_cuLibraryLoadData => library_load(library, code, &LibraryOptions {
        jit: (jitOptions, jitOptionsValues, numJitOptions),
        library: (libraryOptions, libraryOptionValues, numLibraryOptions),
    });
    /// Unloads a library.
    fn cuLibraryUnload(library: CUlibrary): PFN_cuLibraryUnload => library_unload(library);
    /// Returns a library's kernel by name.
    fn cuLibraryGetKernel(pKernel: *mut CUkernel, library: CUlibrary, name: *const c_char): PFN_cuLibraryGetKernel
        => library_get_kernel(pKernel, library, name);
    /// Returns the function of a kernel in the current context.
    fn cuKernelGetFunction(pFunc: *mut CUfunction, kernel: CUkernel): PFN_cuKernelGetFunction => kernel_get_function(pFunc, kernel);
    /// Offset and size of a kernel parameter; `CUDA_ERROR_INVALID_VALUE` past the last one.
    fn cuKernelGetParamInfo(kernel: CUkernel, paramIndex: usize, paramOffset: *mut usize, paramSize: *mut usize): PFN_cuKernelGetParamInfo
        => param_info(raw_of(kernel), paramIndex, paramOffset, paramSize);
    /// Offset and size of a function parameter; `CUDA_ERROR_INVALID_VALUE` past the last one.
    fn cuFuncGetParamInfo(func: CUfunction, paramIndex: usize, paramOffset: *mut usize, paramSize: *mut usize): PFN_cuFuncGetParamInfo
        => param_info(raw_of(func), paramIndex, paramOffset, paramSize);
    /// A function attribute (the dynamic shared memory limit, the carveout). A library kernel
    /// is refused here, as by the real driver, which launches one passed as a function but
    /// tells and changes its attributes only through `cuKernelGetAttribute` and
    /// `cuKernelSetAttribute` (driver 580).
    fn cuFuncGetAttribute(pi: *mut c_int, attrib: c_uint, hfunc: CUfunction): PFN_cuFuncGetAttribute
        => get_attribute(pi, attrib, function_only(raw_of(hfunc))?, true);
    /// Sets a function attribute (the dynamic shared memory limit, the carveout); a library
    /// kernel is refused, as above.
    fn cuFuncSetAttribute(hfunc: CUfunction, attrib: c_uint, value: c_int): PFN_cuFuncSetAttribute
        => set_attribute(attrib, value, function_only(raw_of(hfunc))?, true);
    /// A kernel attribute on a device (the dynamic shared memory limit, the carveout).
    fn cuKernelGetAttribute(pi: *mut c_int, attrib: c_uint, kernel: CUkernel, dev: CUdevice): PFN_cuKernelGetAttribute
        => { device::check_device(dev)?; get_attribute(pi, attrib, raw_of(kernel), false) };
    /// Sets a kernel attribute on a device (the dynamic shared memory limit, the carveout).
    fn cuKernelSetAttribute(attrib: c_uint, val: c_int, kernel: CUkernel, dev: CUdevice): PFN_cuKernelSetAttribute
        => { device::check_device(dev)?; set_attribute(attrib, val, raw_of(kernel), false) };
    /// The kernel's name.
    fn cuKernelGetName(name: *mut *const c_char, hfunc: CUkernel): PFN_cuKernelGetName => get_name(name, raw_of(hfunc));
    /// The function's name.
    fn cuFuncGetName(name: *mut *const c_char, hfunc: CUfunction): PFN_cuFuncGetName => get_name(name, raw_of(hfunc));
}
