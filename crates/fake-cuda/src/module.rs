//! Modules, libraries, functions and kernels, and the images they are loaded from.
//!
//! # Image format
//!
//! A module or library image is a NUL-terminated text: the word `.fake_cuda_module`, then the
//! names of the built-in kernels it contains (see [`crate::kernels`]), separated by whitespace;
//! `*` stands for all of them. PTX text is accepted when every `.entry` it declares names a
//! built-in kernel (Baton's own PTX kernels, `baton_spin`, `baton_work` and `baton_smid`, are built in).
//! Anything else (an ELF cubin, a fatbin, other PTX) is `CUDA_ERROR_INVALID_IMAGE`.
//!
//! A `CUkernel` (library kernel) is accepted wherever a `CUfunction` is, as by the real driver
//! (the CUDA runtime launches kernels that way); `cuKernelGetFunction` returns a distinct
//! `CUfunction` for it.
//!
//! The dynamic shared memory limit is kept as the real driver keeps it: a kernel has a value of
//! its own (`cuKernelSetAttribute`, read back by `cuKernelGetAttribute`) and so may its function
//! (`cuFuncSetAttribute` on what `cuKernelGetFunction` returned). Once the function has one it
//! is in force for every launch of the kernel, whatever the order of the two calls; until then
//! the kernel's is. `cuFuncGetAttribute` on the function tells the value in force, and a launch
//! asking for more than it is `CUDA_ERROR_INVALID_VALUE`.
//!
//! The entry points, and the reuse of unloaded functions' handles, are in `module_api.rs`.

use std::ffi::{CStr, c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::{Mutex, OnceLock};

use baton_cuda_sys::CUresult;

use crate::handle::Handle;
use crate::kernels::{self, KernelDef};
use crate::result::CuResult;

/// The first word of a fake module image.
const MAGIC: &str = ".fake_cuda_module";

/// A function (`CUfunction`) or a library kernel (`CUkernel`).
pub(crate) struct Function {
    pub handle: Handle,
    pub def: &'static KernelDef,
    /// For a kernel: the function `cuKernelGetFunction` returns, created on first use.
    pub function: OnceLock<u64>,
    /// Whether it was launched before (with `FAKE_CUDA_LAZY_LOADING`, the first launch loads
    /// it).
    pub loaded: AtomicBool,
    /// Its own value of the most dynamic shared memory a launch may ask for (48 KiB until
    /// set); see the module documentation for which value is in force.
    pub max_dynamic_shared: AtomicU32,
    /// For a function: whether `cuFuncSetAttribute` gave it a limit of its own.
    pub own_limit: AtomicBool,
    /// For a kernel's function (`cuKernelGetFunction`): the kernel's handle.
    pub kernel: Option<u64>,
    /// The preferred shared memory carveout (%), kept and read back only.
    pub carveout: AtomicU32,
}

impl Function {
    /// The function or kernel `handle` of the built-in `def`, not launched yet; `kernel` the
    /// kernel whose function it is, if it is one.
    pub fn new(handle: Handle, def: &'static KernelDef, kernel: Option<u64>) -> Function {
        Function {
            handle,
            def,
            function: OnceLock::new(),
            loaded: AtomicBool::new(false),
            max_dynamic_shared: AtomicU32::new(DEFAULT_DYNAMIC_SHARED),
            own_limit: AtomicBool::new(false),
            kernel,
            carveout: AtomicU32::new(DEFAULT_CARVEOUT),
        }
    }
}

/// The preferred carveout before it is set: the driver's default (-1) read as a percentage the
/// fake can store (it has no effect on the fake's kernels).
pub(crate) const DEFAULT_CARVEOUT: u32 = 0;
/// Dynamic shared memory a function may use unless its attribute raises the limit.
pub(crate) const DEFAULT_DYNAMIC_SHARED: u32 = 48 * 1024;
/// The most any function may be raised to (an H100's opt-in limit per block).
pub(crate) const MAX_DYNAMIC_SHARED: i32 = 232_448;

/// A loaded module: its functions by name.
pub(crate) struct Module {
    pub functions: Vec<(&'static str, u64)>,
}

/// A loaded library: its kernels by name.
pub(crate) struct Library {
    pub kernels: Mutex<Vec<(&'static str, u64)>>,
}

/// The kernels an image names.
///
/// # Safety
///
/// `image` must be NULL or point to readable memory that is NUL-terminated or at least 4 bytes
/// long and starts with a binary magic number.
pub(crate) unsafe fn parse_image(image: *const c_void) -> CuResult<Vec<&'static KernelDef>> {
    if image.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: a valid image (text or binary) is at least 4 bytes long, per the contract above.
    let head = unsafe { image.cast::<[u8; 4]>().read_unaligned() };
    if head == *b"\x7fELF"
        || head == 0x466243b1u32.to_le_bytes()
        || head == 0xba55ed50u32.to_le_bytes()
    {
        return Err(CUresult::INVALID_IMAGE);
    }
    // SAFETY: a text image is NUL-terminated, per the contract above.
    let text = unsafe { CStr::from_ptr(image.cast::<c_char>()) }
        .to_str()
        .map_err(|_| CUresult::INVALID_IMAGE)?;
    let mut words = text.split_whitespace();
    let mut defs: Vec<&'static KernelDef> = Vec::new();
    if text.contains(".entry") && text.contains(".version") {
        // PTX: `.entry NAME(`, each a built-in.
        for part in text.split(".entry").skip(1) {
            let name = part
                .trim_start()
                .split(|c: char| c == '(' || c.is_whitespace())
                .next()
                .unwrap_or("");
            defs.push(kernels::find(name).ok_or(CUresult::INVALID_IMAGE)?);
        }
        return Ok(defs);
    }
    if words.next() != Some(MAGIC) {
        return Err(CUresult::INVALID_IMAGE);
    }
    for word in words {
        if word == "*" {
            defs.extend(kernels::BUILTINS.iter());
        } else {
            defs.push(kernels::find(word).ok_or(CUresult::INVALID_IMAGE)?);
        }
    }
    defs.sort_by_key(|def| def.name());
    defs.dedup_by_key(|def| def.name());
    Ok(defs)
}
