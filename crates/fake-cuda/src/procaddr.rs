//! `cuGetProcAddress[_v2]`: driver functions by base name, CUDA version and stream flavour.
//!
//! As in the real driver, a base name (`cuCtxCreate`) maps to the symbol of the newest version
//! not newer than the requested `cudaVersion` (`cuCtxCreate_v2` from 3020, `_v3` from 11040,
//! `_v4` from 12050, per NVIDIA's `cudaTypedefs.h`), and with
//! `CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM` to that symbol's `_ptsz`/`_ptds` variant where
//! one exists (from the version the variant appeared, 7000 for the oldest). Unknown and empty
//! names are `CUDA_ERROR_NOT_FOUND` with `CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND`; a version older
//! than the symbol is `CUDA_ERROR_NOT_FOUND` with `CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT`.
//! The pointers handed out are the fake's own functions, taken directly, never through the
//! dynamic linker. Versioned names (`cuMemAlloc_v2`) are not base names and are not found, as
//! with the real driver.

use std::ffi::{CStr, c_char, c_int, c_void};

use baton_cuda_sys::{
    CU_GET_PROC_ADDRESS_LEGACY_STREAM, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
    CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, CUdriverProcAddressQueryResult, CUresult,
    cuuint64_t,
};

use crate::entry::exports;
use crate::machine::machine;
use crate::result::{CuResult, put_opt};
use crate::symbols::TABLE;
use crate::{
    capture_api, context_api, copy, device, events_api, graph_api, green_api, launch, memory_api,
    module_api, stream_api,
};

/// The address of the fake's export named `symbol`.
pub(crate) fn exported(symbol: &str) -> Option<*mut c_void> {
    device::lookup(symbol)
        .or_else(|| lookup(symbol))
        .or_else(|| context_api::lookup(symbol))
        .or_else(|| memory_api::lookup(symbol))
        .or_else(|| copy::lookup(symbol))
        .or_else(|| module_api::lookup(symbol))
        .or_else(|| launch::lookup(symbol))
        .or_else(|| stream_api::lookup(symbol))
        .or_else(|| capture_api::lookup(symbol))
        .or_else(|| events_api::lookup(symbol))
        .or_else(|| graph_api::lookup(symbol))
        .or_else(|| green_api::lookup(symbol))
}

/// The exported symbol a base name resolves to, or why none does.
fn resolve(
    base: &str,
    version: i32,
    flags: cuuint64_t,
) -> Result<&'static str, CUdriverProcAddressQueryResult> {
    let versions = TABLE
        .iter()
        .find(|(name, _)| *name == base)
        .map(|(_, versions)| *versions);
    let versions = versions.ok_or(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)?;
    let chosen = versions
        .iter()
        .rev()
        .find(|v| v.since <= version)
        .ok_or(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)?;
    let per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM != 0;
    match chosen.per_thread {
        Some((since, symbol)) if per_thread && since <= version => Ok(symbol),
        _ => Ok(chosen.symbol),
    }
}

unsafe fn get_proc_address(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: c_int,
    flags: cuuint64_t,
    status: *mut CUdriverProcAddressQueryResult,
) -> CuResult<()> {
    if symbol.is_null() || pfn.is_null() {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: `pfn` is not NULL and the caller guarantees it is writable.
    unsafe { pfn.write(std::ptr::null_mut()) };
    let known_flags =
        CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    if flags & !known_flags != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    // SAFETY: a non-NULL `symbol` is a NUL-terminated string, as the API requires.
    let name = unsafe { CStr::from_ptr(symbol) }.to_str().unwrap_or("");
    let found = resolve(name, version, flags).and_then(|s| {
        exported(s)
            .map(|p| (s, p))
            .ok_or(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
    });
    let (result, resolved) = match &found {
        Ok((s, _)) => ("found", Some(*s)),
        Err(code) if *code == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT => {
            ("version_not_sufficient", None)
        }
        Err(_) => ("symbol_not_found", None),
    };
    if let Some(log) = &machine().log {
        log.proc_address(name, version, flags, result, resolved);
    }
    match found {
        Ok((_, ptr)) => {
            // SAFETY: `pfn` is writable (above) and `status` is NULL or writable.
            unsafe {
                pfn.write(ptr);
                put_opt(status, CU_GET_PROC_ADDRESS_SUCCESS);
            }
            Ok(())
        }
        Err(code) => {
            // SAFETY: `status` is NULL or writable.
            unsafe { put_opt(status, code) };
            Err(CUresult::NOT_FOUND)
        }
    }
}

exports! {
    /// Returns a driver function by base name, CUDA version and flags (version 1).
    fn cuGetProcAddress(symbol: *const c_char, pfn: *mut *mut c_void, cudaVersion: c_int, flags: cuuint64_t): PFN_cuGetProcAddress
        => get_proc_address(symbol, pfn, cudaVersion, flags, std::ptr::null_mut());
    /// Returns a driver function by base name, CUDA version and flags, and why not.
    fn cuGetProcAddress_v2(
        symbol: *const c_char, pfn: *mut *mut c_void, cudaVersion: c_int, flags: cuuint64_t,
        symbolStatus: *mut CUdriverProcAddressQueryResult,
    ): PFN_cuGetProcAddress_v2 => get_proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_EXPORTS: &[&[&str]] = &[
        device::EXPORTS,
        EXPORTS,
        context_api::EXPORTS,
        memory_api::EXPORTS,
        copy::EXPORTS,
        module_api::EXPORTS,
        launch::EXPORTS,
        stream_api::EXPORTS,
        capture_api::EXPORTS,
        events_api::EXPORTS,
        graph_api::EXPORTS,
        green_api::EXPORTS,
    ];

    #[test]
    fn every_table_symbol_is_exported() {
        for (base, versions) in TABLE {
            for version in *versions {
                assert!(
                    exported(version.symbol).is_some(),
                    "{base}: {} is not exported",
                    version.symbol
                );
                if let Some((_, symbol)) = version.per_thread {
                    assert!(
                        exported(symbol).is_some(),
                        "{base}: {symbol} is not exported"
                    );
                }
            }
        }
    }

    #[test]
    fn every_export_is_reachable_by_a_base_name() {
        for symbol in ALL_EXPORTS.iter().flat_map(|list| list.iter()) {
            let reachable = TABLE.iter().any(|(_, versions)| {
                versions
                    .iter()
                    .any(|v| v.symbol == *symbol || v.per_thread.is_some_and(|(_, s)| s == *symbol))
            });
            assert!(
                reachable,
                "{symbol} cannot be obtained through cuGetProcAddress"
            );
        }
    }

    #[test]
    fn versions_pick_the_newest_not_newer_than_requested() {
        let flags = 0;
        assert_eq!(resolve("cuCtxCreate", 11000, flags), Ok("cuCtxCreate_v2"));
        assert_eq!(resolve("cuCtxCreate", 12000, flags), Ok("cuCtxCreate_v3"));
        assert_eq!(resolve("cuCtxCreate", 13000, flags), Ok("cuCtxCreate_v4"));
        assert_eq!(resolve("cuMemAlloc", 3010, flags), Ok("cuMemAlloc"));
        assert_eq!(resolve("cuMemAlloc", 3020, flags), Ok("cuMemAlloc_v2"));
        assert_eq!(
            resolve("cuStreamDestroy", 4000, flags),
            Ok("cuStreamDestroy_v2")
        );
        assert_eq!(
            resolve("cuGraphInstantiate", 12000, flags),
            Ok("cuGraphInstantiateWithFlags")
        );
        assert_eq!(
            resolve("cuGetProcAddress", 11030, flags),
            Ok("cuGetProcAddress")
        );
        assert_eq!(
            resolve("cuGetProcAddress", 12000, flags),
            Ok("cuGetProcAddress_v2")
        );
        assert_eq!(
            resolve("cuLaunchKernelEx", 11050, flags),
            Err(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
        );
        assert_eq!(
            resolve("cuNoSuchThing", 13000, flags),
            Err(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        );
        assert_eq!(
            resolve("", 13000, flags),
            Err(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        );
        assert_eq!(
            resolve("cuMemAlloc_v2", 13000, flags),
            Err(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
        );
    }

    #[test]
    fn per_thread_flag_picks_ptsz_and_ptds_variants() {
        let ptds = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
        assert_eq!(
            resolve("cuLaunchKernel", 7000, ptds),
            Ok("cuLaunchKernel_ptsz")
        );
        assert_eq!(resolve("cuLaunchKernel", 4000, ptds), Ok("cuLaunchKernel"));
        assert_eq!(
            resolve("cuMemcpyHtoD", 12000, ptds),
            Ok("cuMemcpyHtoD_v2_ptds")
        );
        assert_eq!(
            resolve("cuMemcpyAsync", 12000, ptds),
            Ok("cuMemcpyAsync_ptsz")
        );
        assert_eq!(
            resolve("cuStreamWaitValue32", 12000, ptds),
            Ok("cuStreamWaitValue32_v2_ptsz")
        );
        assert_eq!(resolve("cuCtxCreate", 12000, ptds), Ok("cuCtxCreate_v3"));
        assert_eq!(
            resolve("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_LEGACY_STREAM),
            Ok("cuLaunchKernel")
        );
    }
}
