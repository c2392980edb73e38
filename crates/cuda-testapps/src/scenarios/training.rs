//! A training loop shaped as PyTorch runs one on a side stream.

use baton_cuda_sys::{
    CU_EVENT_DISABLE_TIMING, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as LIMIT,
    CU_STREAM_NON_BLOCKING, CUfunction, CUstream,
};

use super::session::{Session, join};
use crate::error::{AppError, ensure};
use crate::gpu::KArg::*;

const LEGACY: CUstream = std::ptr::null_mut();
const KIB: u32 = 1024;
const STEPS: usize = 8;
const N: i32 = 64;

/// Training steps on a side stream (`s = torch.cuda.Stream()`; forward, backward and the
/// optimizer step inside `with torch.cuda.stream(s)`), the inputs made on the legacy default
/// stream and waited for by event, each step's loss gathered into a buffer read after a context
/// synchronization. Its kernels are library kernels launched through their handles, as the CUDA
/// runtime launches them, and a library changes their dynamic shared memory limits around its
/// launches, as cuDNN does: raised for a launch that needs more, lowered for one that needs
/// less. One kernel's limit is set through its function in the context
/// (`cuFuncSetAttribute` on what `cuKernelGetFunction` gave), which then overrides the kernel's
/// own; the other's through the kernel (`cuKernelSetAttribute`), below the default 48 KiB too.
/// Each step starts with a long kernel, so the launches behind it wait in Baton's buffer while
/// the limits change. Every launch was valid when the program made it, so it must be when Baton
/// makes it later: the result is native's under any suspension.
pub fn train_side(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    // "conv": limits through its function; "norm": through the kernel itself.
    let conv_kernel = g.library_kernel(c"add_i32")?;
    let conv_function = g.kernel_function(conv_kernel)?;
    let norm_kernel = g.library_kernel(c"mul_i32")?;
    let (conv, norm): (CUfunction, CUfunction) = (conv_kernel.cast(), norm_kernel.cast());
    let side = g.stream(CU_STREAM_NON_BLOCKING)?;
    let (weights, losses) = (g.alloc(N as usize)?, g.alloc(STEPS)?);
    g.memset32(losses, 0, STEPS)?;
    // The inputs, on the legacy default stream; the side stream waits for them by event.
    g.launch(k.fill, LEGACY, &[Ptr(weights), I32(N), I32(1)])?;
    let inputs = g.event(CU_EVENT_DISABLE_TIMING)?;
    g.record(inputs, LEGACY)?;
    g.wait_event(side, inputs)?;
    for step in 0..STEPS {
        // Forward: a long kernel, then a convolution that needs more than the default limit
        // and one that needs less, the limit lowered in between (below the first's need).
        g.launch(k.spin, side, &[U64(200)])?;
        g.set_max_dynamic_shared(conv_function, (96 * KIB) as i32)?;
        g.launch_shared(conv, side, 96 * KIB, &[Ptr(weights), I32(N), I32(1)])?;
        g.set_max_dynamic_shared(conv_function, (40 * KIB) as i32)?;
        g.launch_shared(conv, side, 32 * KIB, &[Ptr(weights), I32(N), I32(2)])?;
        // Backward: a normalization whose limit goes below the default 48 KiB after a launch
        // that needs 32 KiB, then one that needs 8.
        g.set_kernel_attribute(norm_kernel, LIMIT, (40 * KIB) as i32)?;
        g.launch_shared(norm, side, 32 * KIB, &[Ptr(weights), I32(N), I32(3)])?;
        g.set_kernel_attribute(norm_kernel, LIMIT, (16 * KIB) as i32)?;
        g.launch_shared(norm, side, 8 * KIB, &[Ptr(weights), I32(N), I32(-1)])?;
        // The optimizer step, and the loss gathered on the side stream.
        g.launch(k.add, side, &[Ptr(weights), I32(N), I32(step as i32)])?;
        g.copy_async(losses + 4 * step as u64, weights, 1, side)?;
    }
    g.ctx_sync()?;
    let (got, w) = (g.download(losses, STEPS)?, g.download(weights, N as usize)?);
    ensure(w.iter().all(|v| *v == w[0]), || {
        format!("the weights diverged: {w:?}")
    })?;
    g.destroy_event(inputs)?;
    g.destroy_stream(side)?;
    Ok(format!("train-side ok losses={}", join(&got)))
}

/// Checks the driver itself: which dynamic shared memory limit it enforces for a library
/// kernel launched through its handle, as measured on an H200 with driver 580
/// (`scripts/gpu/transparency/attribute_probe.cu`, docs/TRANSPARENCY.md): the kernel's own
/// value until its function is given one, the function's from then on, whatever the order;
/// limits below the default enforced. A fake driver that let more through would let Baton's
/// mistakes pass.
pub fn shared_limits(s: &Session) -> Result<String, AppError> {
    use crate::error::expect_code;
    let g = &s.gpu;
    let refused = |r: Result<(), AppError>| match r {
        Err(AppError::Cuda { code, .. }) => expect_code(
            "cuLaunchKernel",
            code,
            baton_cuda_sys::CUresult::INVALID_VALUE,
        ),
        Ok(()) => Err(AppError::Mismatch(
            "a launch over the limit in force was let through".into(),
        )),
        Err(e) => Err(e),
    };
    let buf = g.alloc(N as usize)?;
    g.memset32(buf, 0, N as usize)?;
    let kernel = g.library_kernel(c"add_i32")?;
    let (launch, function) = (kernel.cast(), g.kernel_function(kernel)?);
    let args = [Ptr(buf), I32(N), I32(1)];
    g.set_kernel_attribute(kernel, LIMIT, (100 * KIB) as i32)?;
    g.launch_shared(launch, LEGACY, 64 * KIB, &args)?;
    g.set_max_dynamic_shared(function, (32 * KIB) as i32)?;
    refused(g.launch_shared(launch, LEGACY, 64 * KIB, &args))?;
    g.set_kernel_attribute(kernel, LIMIT, (120 * KIB) as i32)?;
    refused(g.launch_shared(launch, LEGACY, 64 * KIB, &args))?;
    g.set_max_dynamic_shared(function, (100 * KIB) as i32)?;
    g.launch_shared(launch, LEGACY, 64 * KIB, &args)?;
    let low = g.library_kernel(c"add_i32")?;
    g.set_kernel_attribute(low, LIMIT, (16 * KIB) as i32)?;
    refused(g.launch_shared(low.cast(), LEGACY, 32 * KIB, &args))?;
    g.launch_shared(low.cast(), LEGACY, 8 * KIB, &args)?;
    g.ctx_sync()?;
    let out = g.download(buf, N as usize)?;
    ensure(out.iter().all(|v| *v == 3), || {
        format!("three launches ran, not {out:?}")
    })?;
    Ok("shared-limits ok".into())
}
