//! `baton doctor`'s Level-3 self-test: does shortening a context's channel-group time slice
//! actually hand the GPU to another context sooner, on this GPU and driver?
//!
//! The doctor runs this in a child of itself with the interposer preloaded and scheduling off
//! (`BATON_ENABLE=off`), so the interposer watches the driver create two contexts and can say
//! which compute channel group is whose ([`baton_compute_channel_group`], exported by the
//! interposer). The child then fills the GPU from context A with long spin kernels and times a
//! short kernel in context B, first with A at libcuda's slice and then with A's slice
//! shortened. Level 3 takes effect if B's wait drops to under half. The kernel is PTX, JIT
//! compiled by the driver: nothing here needs a CUDA toolkit.

use std::ffi::{c_uint, c_void};
use std::path::Path;
use std::time::{Duration, Instant};

use baton_cuda::Driver;
use baton_cuda::rm::{self, ChannelGroup, ComputeGroupOf, ExportedGroup, Ioctl};
use baton_cuda::sys::{CUcontext, CUdevice, CUfunction, CUmodule, CUresult, CUstream};
use serde_json::{Value, json};

/// Two kernels: `baton_spin` spins on the GPU's global timer for its argument, in ns (a
/// kernel switched out still ends on time: right for latency, wrong for throughput);
/// `baton_work` runs a dependent chain of `iters` multiply-adds (a fixed amount of work).
const SPIN_PTX: &str = "
.version 7.0
.target sm_70
.address_size 64

.visible .entry baton_spin(.param .u64 baton_spin_ns)
{
    .reg .pred %p<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [baton_spin_ns];
    mov.u64 %rd2, %globaltimer;
$Lspin:
    mov.u64 %rd3, %globaltimer;
    sub.s64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, %rd1;
    @%p1 bra $Lspin;
    ret;
}

.visible .entry baton_work(.param .u64 baton_work_iters)
{
    .reg .pred %p<3>;
    .reg .b64 %rd<4>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [baton_work_iters];
    mov.u64 %rd2, 0;
    mov.f32 %f1, 0f3F800000;
$Lwork:
    fma.rn.f32 %f1, %f1, 0f3F7FFFFF, 0f3A83126F;
    add.u64 %rd2, %rd2, 1;
    setp.lt.u64 %p1, %rd2, %rd1;
    @%p1 bra $Lwork;
    setp.eq.f32 %p2, %f1, 0f47C35000;
    @%p2 trap;
    ret;
}
\0";

pub(super) fn ck(what: &str, r: CUresult) -> Result<(), String> {
    if r == CUresult::SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed ({r:?})"))
    }
}

pub(super) fn need<T>(f: Option<T>, name: &str) -> Result<T, String> {
    f.ok_or_else(|| format!("the driver lacks {name}"))
}

/// Initializes the driver and retains device `ordinal`'s primary context.
pub(super) fn primary(d: &Driver, ordinal: i32) -> Result<(CUdevice, CUcontext), String> {
    let mut dev: CUdevice = 0;
    let mut ctx: CUcontext = std::ptr::null_mut();
    // SAFETY: valid out-pointers; flags 0.
    unsafe {
        ck("cuInit", need(d.cuInit, "cuInit")?(0))?;
        ck(
            "cuDeviceGet",
            need(d.cuDeviceGet, "cuDeviceGet")?(&mut dev, ordinal),
        )?;
        ck(
            "cuDevicePrimaryCtxRetain",
            need(d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")?(&mut ctx, dev),
        )?;
    }
    Ok((dev, ctx))
}

/// One context with the kernels loaded and a stream.
pub(super) struct Ctx {
    ctx: CUcontext,
    func: CUfunction,
    work: CUfunction,
    pub(super) stream: CUstream,
}

pub(super) fn prepare(d: &Driver, ctx: CUcontext) -> Result<Ctx, String> {
    let ([func, work], stream) = load(d, ctx, SPIN_PTX, [c"baton_spin", c"baton_work"])?;
    Ok(Ctx {
        ctx,
        func,
        work,
        stream,
    })
}

/// Makes `ctx` current, loads `ptx` (NUL-terminated) and finds its kernels `names`; also
/// creates a non-blocking stream.
fn load<const N: usize>(
    d: &Driver,
    ctx: CUcontext,
    ptx: &str,
    names: [&std::ffi::CStr; N],
) -> Result<([CUfunction; N], CUstream), String> {
    let set = need(d.cuCtxSetCurrent, "cuCtxSetCurrent")?;
    let load = need(d.cuModuleLoadData, "cuModuleLoadData")?;
    let get = need(d.cuModuleGetFunction, "cuModuleGetFunction")?;
    let create = need(d.cuStreamCreate, "cuStreamCreate")?;
    if !ptx.ends_with('\0') {
        return Err("the PTX text is not NUL-terminated".into());
    }
    let mut module: CUmodule = std::ptr::null_mut();
    let mut funcs: [CUfunction; N] = [std::ptr::null_mut(); N];
    let mut stream: CUstream = std::ptr::null_mut();
    // SAFETY: a live context; valid out-pointers; the PTX text is NUL-terminated (checked
    // above) and the names are C strings.
    unsafe {
        ck("cuCtxSetCurrent", set(ctx))?;
        ck("cuModuleLoadData", load(&mut module, ptx.as_ptr().cast()))?;
        for (f, name) in funcs.iter_mut().zip(names) {
            ck("cuModuleGetFunction", get(f, module, name.as_ptr()))?;
        }
        ck("cuStreamCreate", create(&mut stream, 1))?;
    }
    Ok((funcs, stream))
}

/// Launches the spin kernel for `ns` on `grid` blocks of `block` threads.
pub(super) fn spin(
    d: &Driver,
    c: &Ctx,
    ns: u64,
    grid: c_uint,
    block: c_uint,
) -> Result<(), String> {
    launch(d, c, c.func, ns, grid, block)
}

/// Launches the work kernel for `iters` multiply-adds per thread.
pub(super) fn work(
    d: &Driver,
    c: &Ctx,
    iters: u64,
    grid: c_uint,
    block: c_uint,
) -> Result<(), String> {
    launch(d, c, c.work, iters, grid, block)
}

fn launch(
    d: &Driver,
    c: &Ctx,
    f: CUfunction,
    arg: u64,
    grid: c_uint,
    block: c_uint,
) -> Result<(), String> {
    let set = need(d.cuCtxSetCurrent, "cuCtxSetCurrent")?;
    let launch = need(d.cuLaunchKernel, "cuLaunchKernel")?;
    let mut arg = arg;
    let mut params = [(&mut arg as *mut u64).cast::<c_void>()];
    // SAFETY: the function and stream belong to `c.ctx`; the parameter array holds one
    // pointer to a u64, the kernel's one parameter, live for the call.
    unsafe {
        ck("cuCtxSetCurrent", set(c.ctx))?;
        ck(
            "cuLaunchKernel",
            launch(
                f,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                c.stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            ),
        )
    }
}

pub(super) fn sync(d: &Driver, c: &Ctx) -> Result<(), String> {
    let sync = need(d.cuStreamSynchronize, "cuStreamSynchronize")?;
    // SAFETY: a live stream.
    ck("cuStreamSynchronize", unsafe { sync(c.stream) })
}

/// B's short-kernel latency (µs, median of `n`) while A keeps the GPU full.
fn contended(d: &Driver, a: &Ctx, b: &Ctx, n: usize) -> Result<f64, String> {
    // ~240 ms of A's work: more than the measurement takes.
    for _ in 0..12 {
        spin(d, a, 20_000_000, 1024, 256)?;
    }
    std::thread::sleep(Duration::from_millis(20));
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        spin(d, b, 20_000, 1, 32)?;
        sync(d, b)?;
        lat.push(t0.elapsed().as_secs_f64() * 1e6);
        std::thread::sleep(Duration::from_millis(3));
    }
    sync(d, a)?;
    lat.sort_by(f64::total_cmp);
    Ok(lat[lat.len() / 2])
}

fn level3(ordinal: i32, cuda_lib: Option<&Path>, yield_us: u64) -> Result<Value, String> {
    let handle = baton_cuda::open_library(cuda_lib).map_err(|e| e.to_string())?;
    // SAFETY: the driver's own exports (hooks where the interposer intercepts them), whose C
    // signatures the table declares.
    let d = unsafe { Driver::resolve(|name| libc::dlsym(handle, name.as_ptr())) };
    let (dev, a) = primary(&d, ordinal)?;
    let mut b: CUcontext = std::ptr::null_mut();
    // SAFETY: a valid out-pointer; flags 0.
    ck("cuCtxCreate", unsafe {
        need(d.cuCtxCreate_v2, "cuCtxCreate_v2")?(&mut b, 0, dev)
    })?;
    // SAFETY: looking up a symbol by name in the process.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"baton_compute_channel_group".as_ptr()) };
    if sym.is_null() {
        return Err("the interposer is not loaded in the self-test".into());
    }
    // SAFETY: the interposer exports this symbol with this signature.
    let group_of = unsafe { std::mem::transmute::<*mut c_void, ComputeGroupOf>(sym) };
    let mut g = ExportedGroup::default();
    // SAFETY: a live context and a valid out-pointer.
    if unsafe { group_of(a, &mut g) } != 0 {
        return Ok(json!({"group_found": false,
            "why": "the context's compute channel group was not seen among the driver's calls"}));
    }
    let group = ChannelGroup::from(g);
    let normal =
        rm::get_timeslice(&Ioctl, &group).map_err(|e| format!("reading the slice: {e}"))?;
    let (a, b) = (prepare(&d, a)?, prepare(&d, b)?);
    // Warm both up (JIT, first launches).
    spin(&d, &a, 1000, 1, 32)?;
    spin(&d, &b, 1000, 1, 32)?;
    sync(&d, &a)?;
    sync(&d, &b)?;
    let at_normal = contended(&d, &a, &b, 15)?;
    let set = rm::set_timeslice(&Ioctl, &group, yield_us)
        .and_then(|()| rm::get_timeslice(&Ioctl, &group));
    let shortened = match set {
        Ok(v) => v,
        Err(e) => return Err(format!("setting the slice: {e}")),
    };
    let at_yield = contended(&d, &a, &b, 15);
    let restored = rm::set_timeslice(&Ioctl, &group, normal);
    let at_yield = at_yield?;
    restored.map_err(|e| format!("restoring the slice: {e}"))?;
    Ok(json!({
        "group_found": true,
        "channel_group": group.handle,
        "normal_us": normal,
        "yield_us": shortened,
        "wait_at_normal_us": at_normal,
        "wait_at_yield_us": at_yield,
        "takes_effect": at_normal > 300.0 && at_yield < 0.5 * at_normal,
    }))
}

/// The child's entry point: prints one JSON line and exits 0 (the parent reads the verdict).
pub fn run_child(ordinal: i32, cuda_lib: Option<&Path>) {
    let v = match level3(ordinal, cuda_lib, 100) {
        Ok(v) => v,
        Err(e) => json!({"error": e}),
    };
    println!("{v}");
}

/// Runs the self-test for device `ordinal` in a child with `interposer` preloaded; the JSON
/// verdict, or why there is none.
pub fn level3_in_child(
    ordinal: i32,
    interposer: &Path,
    cuda_lib: Option<&Path>,
) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding baton itself: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["doctor", "--self-test-level3", &ordinal.to_string()])
        .env("LD_PRELOAD", interposer)
        .env("BATON_ENABLE", "off")
        .env_remove("BATON_LOG")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(l) = cuda_lib {
        cmd.args([std::ffi::OsStr::new("--cuda-lib"), l.as_os_str()]);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running the self-test: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("the self-test printed nothing (status {})", out.status))?;
    let v: Value =
        serde_json::from_str(line).map_err(|e| format!("the self-test's answer: {e}"))?;
    match v.get("error").and_then(Value::as_str) {
        Some(e) => Err(e.to_string()),
        None => Ok(v),
    }
}

/// `baton doctor`'s Level-2 self-test, in this process: a kernel queued behind a closed gate
/// (Baton's own [`baton_cuda::Gate`]) must not run, and must run once the gate opens. The
/// verdict says how long the kernel was held and how soon it finished after the opening.
pub fn level2(d: &'static Driver, ordinal: i32) -> Result<Value, String> {
    let (_, ctx) = primary(d, ordinal)?;
    let c = prepare(d, ctx)?;
    let query = need(d.cuStreamQuery, "cuStreamQuery")?;
    spin(d, &c, 1000, 1, 32)?;
    sync(d, &c)?;
    // SAFETY: `ctx` is live (retained above).
    let gate = unsafe { baton_cuda::Gate::new(d, ctx) }.map_err(|e| format!("the gate: {e}"))?;
    gate.close();
    // SAFETY: the stream was created in the gate's context.
    unsafe { gate.wait_on(c.stream) }.map_err(|e| format!("the gate's wait: {e}"))?;
    spin(d, &c, 20_000, 1, 32)?;
    std::thread::sleep(Duration::from_millis(50));
    // SAFETY: a live stream.
    let held = unsafe { query(c.stream) } == CUresult::NOT_READY;
    let t0 = Instant::now();
    gate.open();
    sync(d, &c)?;
    let after_open_us = t0.elapsed().as_secs_f64() * 1e6;
    Ok(json!({
        "held_50ms": held,
        "done_after_open_us": after_open_us,
        "takes_effect": held,
    }))
}

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

/// The SMs `grid` blocks of `baton_smid` ran on, launched by `launch` (onto the stream it is
/// given) after `buf` was cleared; `None` marks a block that wrote nothing.
fn sms_used(
    d: &Driver,
    stream: CUstream,
    buf: baton_cuda::sys::CUdeviceptr,
    grid: u32,
    launch: impl FnOnce(&mut [*mut c_void]) -> Result<(), String>,
) -> Result<Vec<Option<u32>>, String> {
    let memset = need(d.cuMemsetD32_v2, "cuMemsetD32_v2")?;
    let copy = need(d.cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2")?;
    let sync = need(d.cuStreamSynchronize, "cuStreamSynchronize")?;
    let n = grid as usize;
    // SAFETY: `buf` holds `grid` u32s (allocated by the caller).
    ck("cuMemsetD32", unsafe { memset(buf, u32::MAX, n) })?;
    let (mut out, mut count, mut ns) = (buf, grid, 20_000u64);
    let mut params = [
        (&mut out as *mut baton_cuda::sys::CUdeviceptr).cast::<c_void>(),
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

/// `baton doctor`'s spatial self-test, in this process: blocks of a kernel record the SM they
/// ran on, first on the whole device and then through a [`baton_cuda::Confined`] stream of a
/// small [`baton_cuda::SmPartition`] (the path `--sms` takes). Confinement takes effect if the
/// confined blocks used no more SMs than the partition has, while the same kernel unconfined
/// used more.
pub fn spatial(d: &'static Driver, ordinal: i32) -> Result<Value, String> {
    let (dev, ctx) = primary(d, ordinal)?;
    let alloc = need(d.cuMemAlloc_v2, "cuMemAlloc_v2")?;
    let free = need(d.cuMemFree_v2, "cuMemFree_v2")?;
    let launch = need(d.cuLaunchKernel, "cuLaunchKernel")?;
    let ([func], stream) = load(d, ctx, SMID_PTX, [c"baton_smid"])?;
    // SAFETY: `dev` is the device whose primary context was retained and made current above.
    let part = std::sync::Arc::new(
        unsafe { baton_cuda::SmPartition::new(d, dev, 8) }
            .map_err(|e| format!("the partition: {e}"))?,
    );
    // Four blocks per SM of the device, each long enough that they spread over every SM
    // they may use.
    let grid = part.device_sms() * 4;
    let mut buf: baton_cuda::sys::CUdeviceptr = 0;
    // SAFETY: a valid out-pointer; the context is current.
    ck("cuMemAlloc", unsafe { alloc(&mut buf, grid as usize * 4) })?;
    let run = |s: CUstream, params: &mut [*mut c_void]| {
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
        // SAFETY: `ctx` is the partition's device's live primary context.
        let confined = unsafe { part.confine(ctx, 0) }.map_err(|e| format!("confining: {e}"))?;
        let inside = sms_used(d, stream, buf, grid, |p| {
            // SAFETY: `stream` is the application stream of `ctx`, current on this thread.
            unsafe { confined.launch(stream, |g| baton_cuda::check("cuLaunchKernel", run(g, p))) }
                .map_err(|e| e.to_string())
        })?;
        Ok::<_, String>((whole, inside))
    })();
    // SAFETY: allocated above; the kernels using it have finished (or failed).
    let _ = unsafe { free(buf) };
    let (whole, inside) = result?;
    let distinct = |v: &[Option<u32>]| {
        let set: std::collections::BTreeSet<u32> = v.iter().flatten().copied().collect();
        set.len()
    };
    let all_ran = whole.iter().chain(&inside).all(Option::is_some);
    let (w, i) = (distinct(&whole), distinct(&inside));
    Ok(json!({
        "partition_sms": part.sms(),
        "device_sms": part.device_sms(),
        "blocks": grid,
        "sms_used_whole": w,
        "sms_used_confined": i,
        "all_blocks_ran": all_ran,
        "takes_effect": all_ran && i <= part.sms() as usize && w > part.sms() as usize,
    }))
}
