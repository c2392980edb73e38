//! Opening libraries: the driver the probes use, and the interposer the doctor checks.

use std::ffi::{CStr, CString};
use std::path::Path;

use super::error::ProbeError;
use crate::{Driver, open_library};

/// Opens the CUDA driver (`path`, or `libcuda.so.1` as the loader finds it) and resolves its
/// entry points, through `dlsym`: in a process under the interposer, Baton's hooks for the
/// functions it intercepts. Kept for the process's lifetime.
pub fn open_driver(path: Option<&Path>) -> Result<&'static Driver, ProbeError> {
    let handle = open_library(path).map_err(ProbeError::Library)?;
    // SAFETY: `handle` is a CUDA driver library (what `open_library` opens), so `dlsym` on it
    // returns the driver's own exports (or the interposer's hooks, which have the same
    // signatures), whose C signatures the table declares.
    let d = unsafe { Driver::resolve(|name: &CStr| libc::dlsym(handle, name.as_ptr())) };
    Ok(Box::leak(Box::new(d)))
}

/// Whether the library at `path` loads and exports `cuLaunchKernel` (Baton's interposer
/// does). It is loaded with `RTLD_LOCAL` and stays loaded: its symbols stay out of this
/// process's namespace, and it initializes nothing until a hooked function is called.
pub fn exports_hooks(path: &Path) -> bool {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).unwrap_or_default();
    // SAFETY: `c` is a valid C string. RTLD_LOCAL keeps its symbols out of this process's
    // namespace, and it initializes nothing until a hooked function is called. It stays
    // loaded (unloading Rust libraries with thread-locals is not safe).
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    // SAFETY: a non-null handle and a valid symbol name.
    !h.is_null() && !unsafe { libc::dlsym(h, c"cuLaunchKernel".as_ptr()) }.is_null()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_libraries_are_errors_not_panics() {
        let Err(e) = open_driver(Some(Path::new("/nonexistent/libcuda.so.1"))) else {
            panic!("a driver opened from nowhere");
        };
        assert!(
            e.to_string()
                .starts_with("cannot open the CUDA driver /nonexistent/libcuda.so.1"),
            "{e}"
        );
        assert!(!exports_hooks(Path::new(
            "/nonexistent/libbaton_interposer.so"
        )));
        // A library that loads but is no interposer.
        assert!(!exports_hooks(Path::new("libc.so.6")));
    }
}
