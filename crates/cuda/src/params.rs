//! Deep copies of kernel arguments, so a launch can run after the application's call returned.
//!
//! A kernel's arguments come either as `kernelParams` (an array of pointers, one per parameter,
//! whose sizes only the driver knows: `cuFuncGetParamInfo`, or `cuKernelGetParamInfo` for the
//! `CUkernel` handles the CUDA runtime passes as functions) or as `extra` (a packed buffer of a
//! stated size). [`KernelArgs`] copies whichever was given into memory it owns and rebuilds the
//! pointer array or `extra` list at launch time.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, RwLock};

use baton_core::locks;
use baton_cuda_sys::{
    CU_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_END, CUfunction,
    CUkernel,
};

use crate::Driver;

/// Where each parameter of a kernel lives in its packed argument buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamLayout {
    /// `(offset, size)` of each parameter, in order.
    pub params: Vec<(usize, usize)>,
}

impl ParamLayout {
    /// Bytes of the packed buffer.
    pub fn total(&self) -> usize {
        self.params.iter().map(|(o, s)| o + s).max().unwrap_or(0)
    }
}

/// Parameter layouts by function handle, asked of the driver once per function.
///
/// A handle names a function only while its code is loaded: frameworks load and unload code as
/// they run (PyTorch's training loop among them: docs/TRANSPARENCY.md), and the
/// driver hands a freed handle to the next function loaded, with other parameters. So each
/// layout is kept with the function's name as the driver gives it (a pointer into the loaded
/// code), checked on every use, and the cache is emptied when code is unloaded.
#[derive(Default)]
pub struct ParamCache {
    layouts: RwLock<HashMap<usize, Cached>>,
}

#[derive(Clone)]
struct Cached {
    /// The function's name when the layout was asked (see [`name_of`]).
    name: Option<(usize, u64)>,
    layout: Option<Arc<ParamLayout>>,
}

/// Parameters beyond this many mean the driver is not answering sensibly.
const MAX_PARAMS: usize = 4_096;

impl ParamCache {
    /// An empty cache.
    pub fn new() -> ParamCache {
        ParamCache::default()
    }

    /// Forgets every layout: code was unloaded, and the driver may hand its functions' handles
    /// to other functions, with other parameters.
    pub fn forget_all(&self) {
        locks::write(&self.layouts).clear();
    }

    /// The layout of `f`'s parameters, or `None` if the driver cannot tell (then the launch
    /// cannot be deferred and must run in place).
    pub fn layout(&self, d: &Driver, f: CUfunction) -> Option<Arc<ParamLayout>> {
        let key = f as usize;
        let name = name_of(d, f);
        if let Some(c) = locks::read(&self.layouts)
            .get(&key)
            .filter(|c| name.is_some() && c.name == name)
        {
            return c.layout.clone();
        }
        let layout = query(d, f).map(Arc::new);
        locks::write(&self.layouts).insert(
            key,
            Cached {
                name,
                layout: layout.clone(),
            },
        );
        layout
    }
}

/// The name the driver gives for `f` (a function, or a `CUkernel` passed as one), as it gives
/// it: a NUL-terminated string that lives as long as the function's code is loaded.
fn name_ptr(d: &Driver, f: CUfunction) -> Option<&'static std::ffi::CStr> {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: `f` is the application's handle; `name` is a valid out-pointer.
    let by_func = d
        .cuFuncGetName
        .is_some_and(|get| unsafe { get(&mut name, f) }.is_success());
    let found = by_func
        || d.cuKernelGetName.is_some_and(|get| {
            // SAFETY: as above; the runtime passes CUkernel handles where functions go.
            unsafe { get(&mut name, f.cast::<_>() as CUkernel) }.is_success()
        });
    if !found || name.is_null() {
        return None;
    }
    // SAFETY: the driver returned a NUL-terminated string that lives as long as the function;
    // callers use it only while the function is loaded.
    Some(unsafe { std::ffi::CStr::from_ptr(name) })
}

/// `f`'s name as text, for messages.
pub(crate) fn function_name(d: &Driver, f: CUfunction) -> Option<String> {
    name_ptr(d, f).map(|n| n.to_string_lossy().into_owned())
}

/// The name the driver gives for `f` as the address of its string and a hash of its text, both
/// of which must match for a cached layout to be used (a function loaded where another was may
/// be given a name at the same address).
fn name_of(d: &Driver, f: CUfunction) -> Option<(usize, u64)> {
    let name = name_ptr(d, f)?;
    let hash = name
        .to_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
    Some((name.as_ptr() as usize, hash))
}

fn query(d: &Driver, f: CUfunction) -> Option<ParamLayout> {
    let by_func = |i: usize, off: &mut usize, size: &mut usize| {
        d.cuFuncGetParamInfo.map(|g| {
            // SAFETY: `f` is the application's function handle; the out-pointers are valid.
            unsafe { g(f, i, off, size) }
        })
    };
    let by_kernel = |i: usize, off: &mut usize, size: &mut usize| {
        d.cuKernelGetParamInfo.map(|g| {
            // SAFETY: as above; the runtime passes CUkernel handles where functions go.
            unsafe { g(f.cast::<_>() as CUkernel, i, off, size) }
        })
    };
    for ask in [
        &by_func as &dyn Fn(usize, &mut usize, &mut usize) -> Option<_>,
        &by_kernel,
    ] {
        let (mut off, mut size) = (0usize, 0usize);
        let Some(first) = ask(0, &mut off, &mut size) else {
            continue;
        };
        let mut params = Vec::new();
        if first.is_success() {
            params.push((off, size));
            while params.len() < MAX_PARAMS {
                let i = params.len();
                match ask(i, &mut off, &mut size) {
                    Some(r) if r.is_success() => params.push((off, size)),
                    _ => break,
                }
            }
            return Some(ParamLayout { params });
        }
        // Index 0 out of range: the function takes no parameters (INVALID_VALUE). Any other
        // error (wrong handle kind) means: try the other query.
        if first == baton_cuda_sys::CUresult::INVALID_VALUE {
            return Some(ParamLayout::default());
        }
    }
    None
}

/// A launch's arguments, copied into memory this value owns.
#[derive(Clone)]
pub enum KernelArgs {
    /// No arguments at all.
    None,
    /// `kernelParams`: the packed values and their layout.
    Params {
        /// The values, at their layout offsets (16-byte aligned storage).
        blob: Vec<u128>,
        /// The layout.
        layout: Arc<ParamLayout>,
    },
    /// `extra` with a packed buffer.
    Extra {
        /// The buffer (16-byte aligned storage).
        blob: Vec<u128>,
        /// Its size in bytes, as the application stated it.
        size: usize,
    },
}

// SAFETY: the owned buffers hold plain bytes; raw pointers into them are only made at launch.
unsafe impl Send for KernelArgs {}

impl KernelArgs {
    /// Whether [`KernelArgs::copy`] would succeed, checked without copying anything.
    ///
    /// # Safety
    /// As for [`KernelArgs::copy`].
    pub unsafe fn can_copy(
        layout: Option<&ParamLayout>,
        kernel_params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> bool {
        if !kernel_params.is_null() {
            return match layout {
                Some(l) => (0..l.params.len()).all(|i| {
                    // SAFETY: the caller guarantees one pointer per parameter.
                    unsafe { !(*kernel_params.add(i)).is_null() }
                }),
                None => false,
            };
        }
        if extra.is_null() {
            return true;
        }
        let (mut buf, mut size) = (false, None);
        let mut i = 0;
        loop {
            // SAFETY: the caller guarantees a CU_LAUNCH_PARAM_END-terminated key/value list.
            let key = unsafe { *extra.add(i) };
            if key == CU_LAUNCH_PARAM_END {
                break;
            }
            // SAFETY: every key but END is followed by its value.
            let value = unsafe { *extra.add(i + 1) };
            if key == CU_LAUNCH_PARAM_BUFFER_POINTER {
                buf = !value.is_null();
            } else if key == CU_LAUNCH_PARAM_BUFFER_SIZE && !value.is_null() {
                // SAFETY: the size entry points at a size_t.
                size = Some(unsafe { *value.cast::<usize>() });
            } else {
                return false;
            }
            i += 2;
            if i > 64 {
                return false;
            }
        }
        matches!(size, Some(n) if buf || n == 0)
    }

    /// Copies `kernelParams` (per `layout`) or `extra`. Returns `None` if neither can be copied
    /// faithfully (an `extra` list without a buffer pointer and size, or params without layout).
    ///
    /// # Safety
    /// `kernel_params` and `extra` must be what the application passed to a launch: null, or
    /// valid as the CUDA driver API documents them, for the duration of this call.
    pub unsafe fn copy(
        layout: Option<Arc<ParamLayout>>,
        kernel_params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> Option<KernelArgs> {
        if !kernel_params.is_null() {
            let layout = layout?;
            let mut blob = vec![0u128; layout.total().div_ceil(16)];
            let base = blob.as_mut_ptr().cast::<u8>();
            for (i, (off, size)) in layout.params.iter().enumerate() {
                // SAFETY: the caller guarantees `kernel_params` has one valid pointer per
                // parameter, each to `size` readable bytes; `off + size <= total` fits the blob.
                unsafe {
                    let src = *kernel_params.add(i);
                    if src.is_null() {
                        return None;
                    }
                    std::ptr::copy_nonoverlapping(src.cast::<u8>(), base.add(*off), *size);
                }
            }
            return Some(KernelArgs::Params { blob, layout });
        }
        if !extra.is_null() {
            let (mut buf, mut size): (*const u8, Option<usize>) = (std::ptr::null(), None);
            let mut i = 0;
            loop {
                // SAFETY: the caller guarantees `extra` is a CU_LAUNCH_PARAM_END-terminated list
                // of key/value pairs.
                let key = unsafe { *extra.add(i) };
                if key == CU_LAUNCH_PARAM_END {
                    break;
                }
                // SAFETY: every key but END is followed by its value.
                let value = unsafe { *extra.add(i + 1) };
                if key == CU_LAUNCH_PARAM_BUFFER_POINTER {
                    buf = value.cast::<u8>().cast_const();
                } else if key == CU_LAUNCH_PARAM_BUFFER_SIZE {
                    // SAFETY: the size entry points at a size_t.
                    size = Some(unsafe { *value.cast::<usize>() });
                } else {
                    return None;
                }
                i += 2;
                if i > 64 {
                    return None;
                }
            }
            let size = size?;
            if buf.is_null() && size > 0 {
                return None;
            }
            let mut blob = vec![0u128; size.div_ceil(16)];
            if size > 0 {
                // SAFETY: the application's buffer holds `size` readable bytes.
                unsafe { std::ptr::copy_nonoverlapping(buf, blob.as_mut_ptr().cast::<u8>(), size) };
            }
            return Some(KernelArgs::Extra { blob, size });
        }
        Some(KernelArgs::None)
    }

    /// Calls `f(kernelParams, extra)` with pointers into this copy, valid during the call. The
    /// driver only reads through them (the API's pointers are not `const`, its contract is).
    pub fn with_pointers<R>(&self, f: impl FnOnce(*mut *mut c_void, *mut *mut c_void) -> R) -> R {
        match self {
            KernelArgs::None => f(std::ptr::null_mut(), std::ptr::null_mut()),
            KernelArgs::Params { blob, layout } => {
                let base = blob.as_ptr().cast::<u8>().cast_mut();
                let mut ptrs: Vec<*mut c_void> = layout
                    .params
                    .iter()
                    // SAFETY: offsets lie within the blob, which outlives the call.
                    .map(|(off, _)| unsafe { base.add(*off) }.cast::<c_void>())
                    .collect();
                let p = if ptrs.is_empty() {
                    std::ptr::null_mut()
                } else {
                    ptrs.as_mut_ptr()
                };
                f(p, std::ptr::null_mut())
            }
            KernelArgs::Extra { blob, size } => {
                let mut size_copy: usize = *size;
                let mut list: [*mut c_void; 5] = [
                    CU_LAUNCH_PARAM_BUFFER_POINTER,
                    blob.as_ptr().cast::<c_void>().cast_mut(),
                    CU_LAUNCH_PARAM_BUFFER_SIZE,
                    (&mut size_copy as *mut usize).cast::<c_void>(),
                    CU_LAUNCH_PARAM_END,
                ];
                f(std::ptr::null_mut(), list.as_mut_ptr())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(p: &[(usize, usize)]) -> Option<Arc<ParamLayout>> {
        Some(Arc::new(ParamLayout { params: p.to_vec() }))
    }

    #[test]
    fn params_are_copied_at_their_offsets_and_survive_the_source() {
        // mixed(char a, double b, int* p, short c): offsets 0, 8, 16, 24.
        let mut a: i8 = 7;
        let mut b: f64 = 2.5;
        let mut p: usize = 0xdead_beef;
        let mut c: i16 = -3;
        let mut ptrs: [*mut c_void; 4] = [
            (&mut a as *mut i8).cast(),
            (&mut b as *mut f64).cast(),
            (&mut p as *mut usize).cast(),
            (&mut c as *mut i16).cast(),
        ];
        let l = layout(&[(0, 1), (8, 8), (16, 8), (24, 2)]);
        // SAFETY: each pointer refers to a live local of the stated size.
        let args = unsafe { KernelArgs::copy(l, ptrs.as_mut_ptr(), std::ptr::null_mut()) }.unwrap();
        (a, b, p, c) = (0, 0.0, 0, 0);
        let _ = (a, b, p, c);
        args.with_pointers(|kp, extra| {
            assert!(extra.is_null());
            // SAFETY: the pointers point into the copy, alive for this closure.
            unsafe {
                assert_eq!(*(*kp.add(0)).cast::<i8>(), 7);
                assert_eq!(*(*kp.add(1)).cast::<f64>(), 2.5);
                assert_eq!(*(*kp.add(2)).cast::<usize>(), 0xdead_beef);
                assert_eq!(*(*kp.add(3)).cast::<i16>(), -3);
            }
        });
    }

    #[test]
    fn params_without_a_layout_cannot_be_copied() {
        let mut v = 1u32;
        let mut ptrs: [*mut c_void; 1] = [(&mut v as *mut u32).cast()];
        // SAFETY: valid pointers.
        let copied = unsafe { KernelArgs::copy(None, ptrs.as_mut_ptr(), std::ptr::null_mut()) };
        assert!(copied.is_none());
    }

    #[test]
    fn extra_buffers_are_copied_with_their_size() {
        let mut packed: [u8; 12] = *b"hello world!";
        let mut size: usize = 12;
        let mut list: [*mut c_void; 5] = [
            CU_LAUNCH_PARAM_BUFFER_POINTER,
            packed.as_mut_ptr().cast(),
            CU_LAUNCH_PARAM_BUFFER_SIZE,
            (&mut size as *mut usize).cast(),
            CU_LAUNCH_PARAM_END,
        ];
        // SAFETY: a well-formed extra list over live locals.
        let args =
            unsafe { KernelArgs::copy(None, std::ptr::null_mut(), list.as_mut_ptr()) }.unwrap();
        packed = [0; 12];
        let _ = packed;
        args.with_pointers(|kp, extra| {
            assert!(kp.is_null());
            // SAFETY: the list and buffer live for this closure.
            unsafe {
                assert_eq!(*extra.add(0), CU_LAUNCH_PARAM_BUFFER_POINTER);
                let buf = std::slice::from_raw_parts((*extra.add(1)).cast::<u8>(), 12);
                assert_eq!(buf, b"hello world!");
                assert_eq!(*(*extra.add(3)).cast::<usize>(), 12);
                assert_eq!(*extra.add(4), CU_LAUNCH_PARAM_END);
            }
        });
    }

    #[test]
    fn can_copy_agrees_with_copy() {
        let mut v = 1u32;
        let mut ptrs: [*mut c_void; 1] = [(&mut v as *mut u32).cast()];
        let l = ParamLayout {
            params: vec![(0, 4)],
        };
        // SAFETY: valid pointers and lists throughout.
        unsafe {
            assert!(KernelArgs::can_copy(
                Some(&l),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut()
            ));
            assert!(!KernelArgs::can_copy(
                None,
                ptrs.as_mut_ptr(),
                std::ptr::null_mut()
            ));
            assert!(KernelArgs::can_copy(
                None,
                std::ptr::null_mut(),
                std::ptr::null_mut()
            ));
            let mut bad: [*mut c_void; 3] = [
                std::ptr::without_provenance_mut(0x77),
                std::ptr::null_mut(),
                CU_LAUNCH_PARAM_END,
            ];
            assert!(!KernelArgs::can_copy(
                None,
                std::ptr::null_mut(),
                bad.as_mut_ptr()
            ));
            let mut empty: [*mut c_void; 1] = [CU_LAUNCH_PARAM_END];
            assert!(!KernelArgs::can_copy(
                None,
                std::ptr::null_mut(),
                empty.as_mut_ptr()
            ));
        }
    }

    #[test]
    fn unknown_extra_keys_refuse_the_copy() {
        let mut list: [*mut c_void; 3] = [
            std::ptr::without_provenance_mut(0x77),
            std::ptr::null_mut(),
            CU_LAUNCH_PARAM_END,
        ];
        // SAFETY: a terminated list.
        let copied = unsafe { KernelArgs::copy(None, std::ptr::null_mut(), list.as_mut_ptr()) };
        assert!(copied.is_none());
        // SAFETY: null params and extra.
        let none = unsafe { KernelArgs::copy(None, std::ptr::null_mut(), std::ptr::null_mut()) };
        assert!(matches!(none, Some(KernelArgs::None)));
    }
}
