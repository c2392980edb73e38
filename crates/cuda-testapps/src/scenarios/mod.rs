//! The scenarios, and how each app connects to the driver before running one.

// Scenario sizes and values are small: usize/i32 conversions cannot truncate.
#![allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]

pub mod cross;
mod devices;
mod graphs;
mod launches;
mod mix;
mod ordering;
pub mod priority;
mod process;
mod session;
mod sync;
mod training;

pub use session::Session;

use baton_cuda_sys::{
    CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, CUresult,
};

use crate::api::{Api, Driver, Resolve};
use crate::error::{AppError, ensure};
use crate::gpu::Gpu;

type Scenario = fn(&Session) -> Result<String, AppError>;

/// Every scenario; the first [`TRANSPARENCY`] of them are everything an application does with
/// streams, whose results must not change under Baton, alone or under contention.
const SCENARIOS: &[(&str, Scenario)] = &[
    ("order", ordering::order),
    ("legacy", ordering::legacy),
    ("ptds", ordering::ptds),
    ("events", sync::events),
    ("sync", sync::sync),
    ("free-pending", sync::free_pending),
    ("allocator-reuse", sync::allocator_reuse),
    ("wait-value", sync::wait_value),
    ("capture", graphs::capture),
    ("capture-modes", graphs::capture_modes),
    ("async-alloc", graphs::async_alloc),
    ("params", launches::params),
    ("reload", launches::reload),
    ("attr-events", launches::attr_events),
    ("attributes", launches::attributes),
    ("attributes-held", launches::attributes_held),
    ("train-side", training::train_side),
    ("host-func", launches::host_func),
    ("fork", process::fork),
    ("exit-pending", process::exit_pending),
    ("priority", priority::priority),
    ("gated-wait", priority::gated_wait),
    ("ctx-sync-gated", priority::ctx_sync_gated),
    ("gil", priority::gil),
    ("lazy-gated", priority::lazy_gated),
    ("hidden-wait", priority::hidden_wait),
    ("flood", cross::flood),
    ("be-flood", cross::be_flood),
    ("burst", cross::burst),
    ("paced", cross::paced),
    ("prober", cross::prober),
    ("shared-limits", training::shared_limits),
    ("flood-ctx-sync", cross::flood_ctx_sync),
    ("launch-rate", launches::launch_rate),
    ("mix", mix::mix),
    ("hang", mix::hang),
    ("devices", devices::devices),
    ("rank", devices::rank),
];

/// How many of the first scenarios are the transparency scenarios (the rest check scheduling).
const TRANSPARENCY: usize = 20;

/// The names of all scenarios, in order.
pub fn names() -> impl Iterator<Item = &'static str> {
    SCENARIOS.iter().map(|(n, _)| *n)
}

/// The scenarios whose result must not change under Baton, alone or under contention:
/// everything an application does with streams.
pub fn transparency() -> impl Iterator<Item = &'static str> {
    names().take(TRANSPARENCY)
}

fn find(name: &str) -> Result<Scenario, AppError> {
    SCENARIOS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, scenario)| *scenario)
        .ok_or_else(|| AppError::UnknownScenario {
            name: name.to_owned(),
            known: names().collect::<Vec<_>>().join(", "),
        })
}

/// Opens the driver and probes `cuGetProcAddress_v2` as the CUDA runtime does, then uses the
/// `cuGetProcAddress` the driver returns for itself.
fn connect_like_runtime() -> Result<Driver, AppError> {
    let mut driver = Driver::open()?;
    let probe =
        |what: &str, got: Result<_, _>, expected: (CUresult, Option<_>)| -> Result<(), AppError> {
            let got = got.map(drop);
            ensure(got == Err(expected), || {
                format!("cuGetProcAddress_v2 probe {what}: {got:?}, expected {expected:?}")
            })
        };
    probe(
        "of an empty name",
        driver.proc_address("", 12000, 0, false),
        (CUresult::NOT_FOUND, None),
    )?;
    probe(
        "of an unknown name",
        driver.proc_address("cuNotARealFunction", 13000, 0, true),
        (
            CUresult::NOT_FOUND,
            Some(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND),
        ),
    )?;
    probe(
        "of cuLaunchKernelEx at 11000",
        driver.proc_address("cuLaunchKernelEx", 11000, 0, true),
        (
            CUresult::NOT_FOUND,
            Some(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT),
        ),
    )?;
    let missing = |(code, status)| AppError::Symbol {
        symbol: "cuGetProcAddress".into(),
        how: format!("{code}, status {status:?}"),
    };
    driver
        .proc_address("cuGetProcAddress", 11030, 0, true)
        .map_err(missing)?;
    driver
        .proc_address("cuGetExportTable", 3000, 0, false)
        .map_err(missing)?;
    let itself = driver
        .proc_address("cuGetProcAddress", 12000, 0, true)
        .map_err(missing)?;
    // SAFETY: the driver returned `itself` for "cuGetProcAddress" at version 12000.
    unsafe { driver.use_resolved_get_proc_address(itself) };
    Ok(driver)
}

/// `runtime-like NAME`: functions from `cuGetProcAddress_v2`, the primary context (of ordinal
/// `$BATON_TEST_DEVICE`, else 0).
pub fn runtime_like(name: &str) -> Result<String, AppError> {
    let scenario = find(name)?;
    let driver = connect_like_runtime()?;
    let gpu = Gpu {
        api: Api::load(Resolve::ProcAddress(&driver, CU_GET_PROC_ADDRESS_DEFAULT))?,
    };
    let mut ctx = gpu.init_primary()?;
    // `BATON_TEST_DEVICE=N`: the primary context of ordinal N instead of 0.
    if let Some(n) = std::env::var("BATON_TEST_DEVICE")
        .ok()
        .and_then(|n| n.parse::<i32>().ok())
    {
        ctx = gpu.primary_on(n)?;
    }
    let k = gpu.load_kernels()?;
    scenario(&Session {
        driver,
        gpu,
        ctx,
        k,
    })
}

/// `dlsym-direct NAME`: functions from `dlsym` by symbol name, a created context.
pub fn dlsym_direct(name: &str) -> Result<String, AppError> {
    let scenario = find(name)?;
    let driver = Driver::open()?;
    let gpu = Gpu {
        api: Api::load(Resolve::Dlsym(&driver))?,
    };
    let ctx = gpu.init_created()?;
    let k = gpu.load_kernels()?;
    scenario(&Session {
        driver,
        gpu,
        ctx,
        k,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transparency_scenarios_end_where_the_scheduling_ones_begin() {
        assert_eq!(transparency().last(), Some("exit-pending"));
        assert_eq!(names().nth(TRANSPARENCY), Some("priority"));
    }
}
