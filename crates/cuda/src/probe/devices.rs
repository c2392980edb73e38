//! What the driver sees: its version and its devices.

use std::ffi::{CStr, c_char, c_int};

use baton_cuda_sys::{CUdevice, PFN_cuDeviceGetName};

use crate::Driver;

/// One device the driver reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    ordinal: i32,
    handle: CUdevice,
    name: String,
}

impl Device {
    /// Its ordinal (0, 1, …).
    pub fn ordinal(&self) -> i32 {
        self.ordinal
    }

    /// The driver's handle for it (0 if `cuDeviceGet` failed).
    pub fn handle(&self) -> CUdevice {
        self.handle
    }

    /// Its name (empty if the driver gave none).
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// What [`inventory`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inventory {
    /// `cuDriverGetVersion` (0 if unknown), e.g. 13000 for CUDA 13.0.
    pub version: i32,
    /// Whether `cuInit` succeeded.
    pub initialized: bool,
    /// The devices, in ordinal order (none unless initialized).
    pub devices: Vec<Device>,
}

/// The name `get_name` gives `dev`, asked with a buffer length of `len` (at most 128).
fn device_name(get_name: PFN_cuDeviceGetName, dev: CUdevice, len: c_int) -> String {
    let mut name = [0 as c_char; 128];
    // SAFETY: `name` holds 128 bytes, at least `len`.
    let _ = unsafe { get_name(name.as_mut_ptr(), len.min(128), dev) };
    name[127] = 0;
    // SAFETY: `name` is NUL-terminated (set just above).
    unsafe { CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// Initializes the driver and lists what it sees. Missing entry points leave their part
/// empty; nothing here fails.
pub fn inventory(d: &Driver) -> Inventory {
    let mut version = 0;
    if let Some(f) = d.cuDriverGetVersion {
        // SAFETY: a valid out-pointer.
        let _ = unsafe { f(&mut version) };
    }
    let mut count = 0;
    let initialized = d.cuInit.is_some_and(|f| {
        // SAFETY: cuInit takes flags 0.
        unsafe { f(0) }.is_success()
    });
    if initialized {
        if let Some(f) = d.cuDeviceGetCount {
            // SAFETY: a valid out-pointer.
            let _ = unsafe { f(&mut count) };
        }
    }
    let devices = (0..count)
        .map(|ordinal| {
            let mut handle = 0;
            let mut name = String::new();
            if let (Some(get), Some(get_name)) = (d.cuDeviceGet, d.cuDeviceGetName) {
                // SAFETY: a valid out-pointer.
                if unsafe { get(&mut handle, ordinal) }.is_success() {
                    name = device_name(get_name, handle, 128);
                }
            }
            Device {
                ordinal,
                handle,
                name,
            }
        })
        .collect();
    Inventory {
        version,
        initialized,
        devices,
    }
}

/// The first device's name, if the driver initializes and has a device (and the entry points
/// to say so).
pub fn first_device_name(d: &Driver) -> Option<String> {
    let mut count = 0;
    let mut dev: CUdevice = 0;
    // SAFETY: flags 0; valid out-pointers.
    unsafe {
        if !d.cuInit?(0).is_success() || !d.cuDeviceGetCount?(&mut count).is_success() || count < 1
        {
            return None;
        }
        if d.cuDeviceGet?(&mut dev, 0).is_success() {
            return Some(device_name(d.cuDeviceGetName?, dev, 127));
        }
    }
    Some(String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_without_entry_points_has_nothing_to_show() {
        // SAFETY: the lookup returns null for everything, which is always allowed.
        let d = unsafe { Driver::resolve(|_| std::ptr::null_mut()) };
        assert_eq!(
            inventory(&d),
            Inventory {
                version: 0,
                initialized: false,
                devices: Vec::new()
            }
        );
        assert_eq!(first_device_name(&d), None);
    }
}
