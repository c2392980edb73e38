//! The spatial self-test: do a [`Confined`](crate::Confined) kernel's blocks stay on its
//! [`SmPartition`]'s SMs?

use std::collections::BTreeSet;
use std::ffi::c_void;
use std::sync::Arc;

use baton_cuda_sys::{CUdeviceptr, CUresult, CUstream};
use serde::{Deserialize, Serialize};

use super::devices::Device;
use super::error::{ProbeError, ck, need};
use super::kernels::Context;
use crate::{Driver, DriverError, SmPartition, check};

/// `baton_smid`: every block spins for `ns`, then its first thread writes the SM it ran on to
/// `out[blockIdx.x]` (for blocks below `n`). A module of its own, so the other self-tests do
/// not depend on it.
const SMID_PTX: &str = "
.version 7.0
.target sm_70
.address_size 64

.visible .entry baton_smid(.param .u64 baton_smid_out, .param .u32 baton_smid_n,
    .param .u64 baton_smid_ns)
{
    .reg .pred %p<4>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<9>;
    ld.param.u64 %rd1, [baton_smid_out];
    ld.param.u32 %r1, [baton_smid_n];
    ld.param.u64 %rd2, [baton_smid_ns];
    mov.u64 %rd3, %globaltimer;
$Lsmspin:
    mov.u64 %rd4, %globaltimer;
    sub.s64 %rd5, %rd4, %rd3;
    setp.lt.u64 %p1, %rd5, %rd2;
    @%p1 bra $Lsmspin;
    mov.u32 %r2, %tid.x;
    setp.ne.u32 %p2, %r2, 0;
    @%p2 bra $Lsmdone;
    mov.u32 %r3, %ctaid.x;
    setp.ge.u32 %p3, %r3, %r1;
    @%p3 bra $Lsmdone;
    mov.u32 %r4, %smid;
    cvta.to.global.u64 %rd6, %rd1;
    mul.wide.u32 %rd7, %r3, 4;
    add.s64 %rd8, %rd6, %rd7;
    st.global.u32 [%rd8], %r4;
$Lsmdone:
    ret;
}
\0";

/// What the spatial self-test saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpatialReport {
    /// [`SpatialReport::SCHEMA`].
    pub schema: String,
    /// SMs in the partition.
    pub partition_sms: u32,
    /// SMs of the device.
    pub device_sms: u32,
    /// Blocks of the kernel (four per SM of the device).
    pub blocks: u32,
    /// Distinct SMs the kernel's blocks ran on, unconfined.
    pub sms_used_whole: usize,
    /// Distinct SMs they ran on, confined to the partition.
    pub sms_used_confined: usize,
    /// Whether every block of both runs wrote its SM.
    pub all_blocks_ran: bool,
    /// Whether confinement works here: every block ran, the confined ones on no more SMs than
    /// the partition has, the unconfined ones on more.
    pub takes_effect: bool,
}

impl SpatialReport {
    /// The document's schema.
    pub const SCHEMA: &'static str = "baton.selftest.spatial/1";

    /// The report of `blocks` blocks that ran on the SMs `whole` (unconfined) and `inside`
    /// (confined; `None` for a block that wrote nothing), with the verdict.
    pub fn new(
        partition_sms: u32,
        device_sms: u32,
        blocks: u32,
        whole: &[Option<u32>],
        inside: &[Option<u32>],
    ) -> SpatialReport {
        let distinct = |v: &[Option<u32>]| v.iter().flatten().collect::<BTreeSet<_>>().len();
        let all_ran = whole.iter().chain(inside).all(Option::is_some);
        let (w, i) = (distinct(whole), distinct(inside));
        SpatialReport {
            schema: Self::SCHEMA.into(),
            partition_sms,
            device_sms,
            blocks,
            sms_used_whole: w,
            sms_used_confined: i,
            all_blocks_ran: all_ran,
            takes_effect: all_ran && i <= partition_sms as usize && w > partition_sms as usize,
        }
    }
}

/// The SMs `grid` blocks of `baton_smid` ran on, launched by `launch` (onto the stream it is
/// given) after `buf` was cleared; `None` marks a block that wrote nothing.
fn sms_used(
    d: &Driver,
    stream: CUstream,
    buf: CUdeviceptr,
    grid: u32,
    launch: impl FnOnce(&mut [*mut c_void]) -> Result<(), ProbeError>,
) -> Result<Vec<Option<u32>>, ProbeError> {
    let memset = need(d.cuMemsetD32_v2, "cuMemsetD32_v2")?;
    let copy = need(d.cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2")?;
    let sync = need(d.cuStreamSynchronize, "cuStreamSynchronize")?;
    let n = grid as usize;
    // SAFETY: `buf` holds `grid` u32s (allocated by the caller).
    ck("cuMemsetD32", unsafe { memset(buf, u32::MAX, n) })?;
    let (mut out, mut count, mut ns) = (buf, grid, 20_000u64);
    let mut params = [
        (&mut out as *mut CUdeviceptr).cast::<c_void>(),
        (&mut count as *mut u32).cast::<c_void>(),
        (&mut ns as *mut u64).cast::<c_void>(),
    ];
    launch(&mut params)?;
    // SAFETY: a live stream.
    ck("cuStreamSynchronize", unsafe { sync(stream) })?;
    let mut host = vec![0u32; n];
    // SAFETY: `host` holds `n` u32s; `buf` as many on the device; the launch has finished.
    ck("cuMemcpyDtoH", unsafe {
        copy(host.as_mut_ptr().cast(), buf, n * 4)
    })?;
    Ok(host
        .into_iter()
        .map(|sm| (sm != u32::MAX).then_some(sm))
        .collect())
}

/// `baton doctor`'s spatial self-test, in this process, on device `ordinal`: blocks of a
/// kernel record the SM they ran on, first on the whole device and then through a
/// [`Confined`](crate::Confined) stream of a small [`SmPartition`] (the path `--sms` takes).
pub fn spatial(d: &'static Driver, ordinal: i32) -> Result<SpatialReport, ProbeError> {
    let ctx = Context::primary(d, ordinal)?;
    let alloc = need(d.cuMemAlloc_v2, "cuMemAlloc_v2")?;
    let free = need(d.cuMemFree_v2, "cuMemFree_v2")?;
    let launch = need(d.cuLaunchKernel, "cuLaunchKernel")?;
    let ([func], stream) = ctx.load(SMID_PTX, [c"baton_smid"])?;
    // SAFETY: the device whose primary context was retained and made current above.
    let part = Arc::new(
        unsafe { SmPartition::new(d, ctx.device(), 8) }.map_err(|cause| ProbeError::Driver {
            what: "the partition",
            cause,
        })?,
    );
    // Four blocks per SM of the device, each long enough that they spread over every SM
    // they may use.
    let grid = part.device_sms() * 4;
    let mut buf: CUdeviceptr = 0;
    // SAFETY: a valid out-pointer; the context is current.
    ck("cuMemAlloc", unsafe { alloc(&mut buf, grid as usize * 4) })?;
    let run = |s: CUstream, params: &mut [*mut c_void]| -> CUresult {
        // SAFETY: `func` belongs to the current context and `s` is a stream of it (or of its
        // partition); `params` points at the kernel's three arguments, live for the call.
        unsafe {
            launch(
                func,
                grid,
                1,
                1,
                32,
                1,
                1,
                0,
                s,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    };
    let result = (|| {
        let whole = sms_used(d, stream, buf, grid, |p| {
            ck("cuLaunchKernel", run(stream, p))
        })?;
        // SAFETY: the partition's device's live primary context.
        let confined =
            unsafe { part.confine(ctx.raw(), 0) }.map_err(|cause| ProbeError::Driver {
                what: "confining",
                cause,
            })?;
        let inside = sms_used(d, stream, buf, grid, |p| {
            // SAFETY: `stream` is the application stream of the context, current on this
            // thread.
            unsafe { confined.launch(stream, |g| check("cuLaunchKernel", run(g, p))) }
                .map_err(ProbeError::Confined)
        })?;
        Ok::<_, ProbeError>((whole, inside))
    })();
    // SAFETY: allocated above; the kernels using it have finished (or failed).
    let _ = unsafe { free(buf) };
    let (whole, inside) = result?;
    Ok(SpatialReport::new(
        part.sms(),
        part.device_sms(),
        grid,
        &whole,
        &inside,
    ))
}

/// Whether a partition of `sms` SMs can be made on `device` of `d` (with no self-test): its
/// SMs and the device's. The partition is destroyed at once.
pub fn partition_sms(
    d: &'static Driver,
    device: &Device,
    sms: u32,
) -> Result<(u32, u32), DriverError> {
    // SAFETY: a device of this driver (a `Device` comes only from its inventory); the
    // partition is dropped (destroyed) at once.
    let p = unsafe { SmPartition::new(d, device.handle(), sms) }?;
    Ok((p.sms(), p.device_sms()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confinement_takes_effect_only_if_every_block_stayed_inside() {
        let whole: Vec<Option<u32>> = (0..528).map(|b| Some(b % 132)).collect();
        let inside: Vec<Option<u32>> = (0..528).map(|b| Some(b % 8)).collect();
        let r = SpatialReport::new(8, 132, 528, &whole, &inside);
        assert_eq!((r.sms_used_whole, r.sms_used_confined), (132, 8));
        assert!(r.all_blocks_ran && r.takes_effect);
        // Confined blocks spread over more SMs than the partition has.
        let spread: Vec<Option<u32>> = (0..528).map(|b| Some(b % 16)).collect();
        assert!(!SpatialReport::new(8, 132, 528, &whole, &spread).takes_effect);
        // A block that wrote nothing.
        let mut lost = inside.clone();
        lost[5] = None;
        let r = SpatialReport::new(8, 132, 528, &whole, &lost);
        assert!(!r.all_blocks_ran && !r.takes_effect);
        // The unconfined kernel itself stayed within the partition's size: nothing shown.
        assert!(!SpatialReport::new(8, 132, 528, &inside, &inside).takes_effect);
        let v = serde_json::to_value(SpatialReport::new(8, 132, 528, &whole, &inside)).unwrap();
        assert_eq!(v["schema"], "baton.selftest.spatial/1");
        assert_eq!(v["sms_used_confined"], 8);
    }
}
