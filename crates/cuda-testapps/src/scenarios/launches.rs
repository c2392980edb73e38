//! Launch scenarios: every way of passing kernel arguments, launch attributes, library
//! kernels, and host functions.

use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

use baton_cuda_sys::{
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE, CU_LAUNCH_ATTRIBUTE_PRIORITY, CU_STREAM_DEFAULT,
    CU_STREAM_NON_BLOCKING, CU_STREAM_WAIT_VALUE_GEQ, CUlaunchAttribute, CUlaunchAttributeID,
    CUlaunchAttributeValue, CUresult, CUstream,
};

use super::session::{Session, join};
use crate::error::{AppError, ensure, expect_code};
use crate::gpu::KArg::{self, *};

const LEGACY: CUstream = std::ptr::null_mut();

fn attribute(id: CUlaunchAttributeID, value: i32) -> CUlaunchAttribute {
    let mut attr = CUlaunchAttribute {
        id,
        pad: [0; 4],
        value: CUlaunchAttributeValue { pad: [0; 64] },
    };
    attr.value.priority = value;
    attr
}

/// `kernelParams`, a packed `extra` buffer laid out from `cuFuncGetParamInfo`,
/// `cuLaunchKernelEx` with attributes, cooperative launches, mixed-size parameters, library
/// kernels passed as functions, and arguments copied at launch time.
pub fn params(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let buf = g.alloc(4)?;
    g.memset32(buf, 1, 4)?;
    g.launch(k.add, LEGACY, &[Ptr(buf), I32(4), I32(10)])?;
    let mut packed = g.pack(k.mul, &[Ptr(buf), I32(4), I32(3)])?;
    g.launch_packed(k.mul, LEGACY, &mut packed)?;
    let mut attrs = [
        attribute(CU_LAUNCH_ATTRIBUTE_PRIORITY, -3),
        attribute(CU_LAUNCH_ATTRIBUTE_COOPERATIVE, 1),
    ];
    g.launch_ex(k.add, LEGACY, &mut attrs, &[Ptr(buf), I32(4), I32(5)])?;
    g.launch_cooperative(k.add, LEGACY, &[Ptr(buf), I32(4), I32(2)])?;
    let basic = g.download(buf, 4)?;
    ensure(basic == [40; 4], || {
        format!("(1 + 10) * 3 + 5 + 2: {basic:?}")
    })?;

    // Mixed parameter sizes: char, double, pointer, short at C offsets.
    let mut offsets = Vec::new();
    let mut sizes = Vec::new();
    let mut index = 0;
    let past_end = loop {
        match g.param_info(k.mixed, index) {
            Ok((offset, size)) => {
                offsets.push(offset as i32);
                sizes.push(size as i32);
                index += 1;
            }
            Err(code) => break code,
        }
    };
    expect_code(
        "cuFuncGetParamInfo past the last parameter",
        past_end,
        CUresult::INVALID_VALUE,
    )?;
    let out = g.alloc(6)?;
    g.launch(k.mixed, LEGACY, &[I8(-5), F64(2.5), Ptr(out), I16(-300)])?;
    let mut packed_mixed = g.pack(k.mixed, &[I8(7), F64(-1.25), Ptr(out + 12), I16(12345)])?;
    g.launch_packed(k.mixed, LEGACY, &mut packed_mixed)?;
    let mixed = g.download(out, 6)?;
    ensure(mixed == [-5, 250, -300, 7, -125, 12345], || {
        format!("mixed {mixed:?}")
    })?;

    // Arguments are copied at launch: changing them before the kernel runs changes nothing.
    let stream = g.stream(CU_STREAM_DEFAULT)?;
    let flag = g.pinned(1)?;
    g.wait_value(stream, flag.addr(), 1, CU_STREAM_WAIT_VALUE_GEQ)?;
    let mut args: [KArg; 3] = [Ptr(buf), I32(4), I32(100)];
    g.launch_with(k.add, stream, &mut args)?;
    // A driver that read the argument only when the kernel runs would see 999.
    std::hint::black_box(&mut args)[2] = I32(999);
    let mut late = g.pack(k.mul, &[Ptr(buf), I32(4), I32(2)])?;
    g.launch_packed(k.mul, stream, &mut late)?;
    late[12..16].copy_from_slice(&50i32.to_ne_bytes());
    flag.set(0, 1);
    g.sync(stream)?;
    let copied = g.download(buf, 4)?;
    ensure(copied == [280; 4], || {
        format!("(40 + 100) * 2 expected, got {copied:?} (arguments read late?)")
    })?;

    // A library kernel passed where a function is expected, and its function.
    let kernel = g.library_kernel(c"add_i32")?;
    g.launch(kernel.cast(), LEGACY, &[Ptr(buf), I32(4), I32(1)])?;
    let function = g.kernel_function(kernel)?;
    g.launch(function, LEGACY, &[Ptr(buf), I32(4), I32(1)])?;
    let name = g.func_name(kernel.cast())?;
    let kernel_param = g
        .kernel_param_info(kernel, 2)
        .map_err(|code| AppError::Cuda {
            call: "cuKernelGetParamInfo",
            code,
            expected: CUresult::SUCCESS,
        })?;
    let library = g.download(buf, 4)?;
    ensure(
        library == [282; 4] && name == "add_i32" && kernel_param == (12, 4),
        || format!("library kernel: {library:?} {name} {kernel_param:?}"),
    )?;
    g.destroy_stream(stream)?;
    g.free_pinned(flag)?;
    Ok(format!(
        "params ok basic={} mixed_offsets={} mixed_sizes={} mixed={} copied_at_launch={} library={}",
        basic[0],
        join(&offsets),
        join(&sizes),
        join(&mixed),
        copied[0],
        library[0]
    ))
}

/// What host functions saw: (tag, value of the pinned word when called).
static CALLS: Mutex<Vec<(i32, i32)>> = Mutex::new(Vec::new());

/// The argument of one host-function call.
struct Probe {
    tag: i32,
    word: *const AtomicI32,
}

unsafe extern "C" fn probe(data: *mut c_void) {
    // SAFETY: `data` is a `Box<Probe>` leaked by `host_func` for exactly this one call.
    let probe = unsafe { Box::from_raw(data.cast::<Probe>()) };
    // SAFETY: `word` points into pinned memory that stays allocated until the scenario has
    // synchronized every stream, which happens after this call.
    let value = unsafe { (*probe.word).load(Ordering::Acquire) };
    baton_core::locks::lock(&CALLS).push((probe.tag, value));
}

/// Host functions run in stream order, after the work before them and before the work after.
pub fn host_func(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let stream = g.stream(CU_STREAM_DEFAULT)?;
    let pinned = g.pinned(4)?;
    let word = pinned.addr() as *const AtomicI32;
    let call = |stream: CUstream, tag: i32| {
        let data = Box::into_raw(Box::new(Probe { tag, word }));
        // SAFETY: `probe` takes a leaked `Box<Probe>` once; `word` outlives every call (the
        // pinned memory is freed after all streams are synchronized).
        unsafe { g.host_func(stream, Some(probe), data.cast()) }
    };
    g.launch(k.fill, stream, &[Ptr(pinned.addr()), I32(4), I32(5)])?;
    call(stream, 1)?;
    g.launch(k.add, stream, &[Ptr(pinned.addr()), I32(4), I32(1)])?;
    call(stream, 2)?;
    g.launch(k.add, stream, &[Ptr(pinned.addr()), I32(4), I32(10)])?;
    call(LEGACY, 3)?;
    g.sync(LEGACY)?;
    g.sync(stream)?;
    let calls = baton_core::locks::lock(&CALLS).clone();
    ensure(calls == [(1, 5), (2, 6), (3, 16)], || {
        format!("host function calls {calls:?}")
    })?;
    g.destroy_stream(stream)?;
    g.free_pinned(pinned)?;
    let shown: Vec<String> = calls
        .iter()
        .map(|(tag, value)| format!("{tag}:{value}"))
        .collect();
    Ok(format!("host-func ok calls={}", shown.join(",")))
}

/// A launch-bound loop, as a framework's inference is: 32 unused streams at two priorities (a
/// framework's pools), then rounds of 1000 small launches on one non-blocking stream, each
/// round synchronized. Prints the time each launch call takes (median over all launches, and
/// the median of the fastest round's): a measurement, compared between a native run and one
/// under Baton, not a fixed result. `LAUNCH_RATE_EVICT_KB=N` walks N KiB of memory between
/// launches, as a framework's own work does, so that the launch path starts with cold caches;
/// `LAUNCH_RATE_ROUNDS=N` measures N rounds instead of 30 (two more always warm up);
/// `LAUNCH_RATE_LEGACY=N` launches on the legacy default stream instead, beside N idle blocking
/// streams (which CUDA orders it with); `LAUNCH_RATE_BLOCKING=1` on a blocking stream, after
/// one launch on the legacy stream (which CUDA orders it after).
pub fn launch_rate(s: &Session) -> Result<String, AppError> {
    const PER_ROUND: usize = 1000;
    let (g, k) = (&s.gpu, &s.k);
    let setting = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
            .unwrap_or(default)
    };
    let evict_kb = setting("LAUNCH_RATE_EVICT_KB", 0);
    let rounds = setting("LAUNCH_RATE_ROUNDS", 30).max(1);
    let mut scratch = vec![0u8; evict_kb * 1024];
    let legacy = std::env::var_os("LAUNCH_RATE_LEGACY").map(|_| setting("LAUNCH_RATE_LEGACY", 0));
    let blocking = legacy.is_none() && setting("LAUNCH_RATE_BLOCKING", 0) > 0;
    let mut pool = Vec::new();
    for i in 0..32 {
        pool.push(g.stream_with_priority(CU_STREAM_NON_BLOCKING, -(i % 2))?.0);
    }
    for _ in 0..legacy.unwrap_or(0) {
        pool.push(g.stream(CU_STREAM_DEFAULT)?);
    }
    let stream = if legacy.is_some() {
        LEGACY
    } else if blocking {
        pool.push(g.stream(CU_STREAM_DEFAULT)?);
        pool[pool.len() - 1]
    } else {
        pool[0]
    };
    let data = g.alloc(1)?;
    g.memset32(data, 0, 1)?;
    let mut args = [Ptr(data), I32(1), I32(1)];
    // A blocking stream is ordered after the legacy stream only once that one is in use.
    if blocking {
        g.launch_with(k.add, LEGACY, &mut args)?;
        g.sync(LEGACY)?;
    }
    let mut all = Vec::with_capacity(rounds * PER_ROUND);
    let mut best_round = u128::MAX;
    for round in 0..rounds + 2 {
        let mut this = Vec::with_capacity(PER_ROUND);
        for i in 0..PER_ROUND {
            // Touch one byte per cache line, a different value each time.
            for b in scratch.iter_mut().step_by(64) {
                *b = b.wrapping_add(i as u8);
            }
            let start = std::time::Instant::now();
            g.launch_with(k.add, stream, &mut args)?;
            this.push(start.elapsed().as_nanos());
        }
        g.sync(stream)?;
        // The first two rounds warm up.
        if round >= 2 {
            this.sort_unstable();
            best_round = best_round.min(this[PER_ROUND / 2]);
            all.extend(this);
        }
    }
    std::hint::black_box(&scratch);
    let out = g.download(data, 1)?;
    let expected = ((rounds + 2) * PER_ROUND + usize::from(blocking)) as i32;
    ensure(out == [expected], || format!("launch-rate sum {out:?}"))?;
    for s in pool {
        g.destroy_stream(s)?;
    }
    all.sort_unstable();
    Ok(format!(
        "launch-rate ok n={} ns_per_launch_p50={} best_round_p50={} evict_kb={evict_kb}",
        rounds * PER_ROUND,
        all[all.len() / 2],
        best_round
    ))
}

/// Libraries loaded and unloaded while the program runs, as frameworks do: a kernel of a
/// library loaded after another was unloaded may get the unloaded kernel's handle, with other
/// parameters. Each kernel is launched behind a slow one, so under a small launch window its
/// arguments are copied for a later launch: the copy must follow the new kernel's layout.
pub fn reload(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let stream = g.stream(CU_STREAM_NON_BLOCKING)?;
    let (a, b) = (g.alloc(8)?, g.alloc(8)?);
    g.memset32(a, 1, 8)?;
    g.memset32(b, 0, 8)?;
    let mut handles = Vec::new();
    for round in 0..3 {
        // add_i32(int* data, int n, int value): 8 + 4 + 4 bytes.
        let (adder, add) = g.load_library(c".fake_cuda_module add_i32", c"add_i32")?;
        g.launch(k.spin, stream, &[U64(1_000)])?;
        g.launch(add.cast(), stream, &[Ptr(a), I32(8), I32(round + 1)])?;
        g.sync(stream)?;
        g.unload_library(adder)?;
        // copy_i32(int* dst, const int* src, int n): 8 + 8 + 4 bytes.
        let (copier, copy) = g.load_library(c".fake_cuda_module copy_i32", c"copy_i32")?;
        handles.push(std::ptr::eq(add, copy));
        g.launch(k.spin, stream, &[U64(1_000)])?;
        g.launch(copy.cast(), stream, &[Ptr(b), Ptr(a), I32(8)])?;
        g.sync(stream)?;
        g.unload_library(copier)?;
    }
    let out = g.download(b, 8)?;
    ensure(out == [7; 8], || format!("1 + 1 + 2 + 3 copied: {out:?}"))?;
    g.destroy_stream(stream)?;
    Ok(format!(
        "reload ok values={} handles_reused={}",
        join(&out),
        handles.iter().filter(|h| **h).count()
    ))
}

/// Events recorded by launch attributes (a launch-completion event, a programmatic event):
/// another stream that waits on such an event must see the launch's work, even when the launch
/// itself waits in a buffer.
pub fn attr_events(s: &Session) -> Result<String, AppError> {
    use baton_cuda_sys::{
        CU_EVENT_DISABLE_TIMING, CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT, CUlaunchAttributeValue_launchCompletionEvent,
    };
    let (g, k) = (&s.gpu, &s.k);
    let (producer, consumer) = (
        g.stream(CU_STREAM_NON_BLOCKING)?,
        g.stream(CU_STREAM_NON_BLOCKING)?,
    );
    let (data, out) = (g.alloc(4)?, g.alloc(4)?);
    g.memset32(data, 0, 4)?;
    g.memset32(out, 0, 4)?;
    let mut seen = Vec::new();
    for (round, id) in [
        CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT,
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT,
    ]
    .into_iter()
    .enumerate()
    {
        let event = g.event(CU_EVENT_DISABLE_TIMING)?;
        let mut attr = attribute(id, 0);
        attr.value.launchCompletionEvent =
            CUlaunchAttributeValue_launchCompletionEvent { event, flags: 0 };
        g.launch(k.spin, producer, &[U64(2_000)])?;
        g.launch_ex(k.add, producer, &mut [attr], &[Ptr(data), I32(4), I32(10)])?;
        g.wait_event(consumer, event)?;
        g.launch(k.copy, consumer, &[Ptr(out), Ptr(data), I32(4)])?;
        g.sync(consumer)?;
        let got = g.download(out, 4)?;
        ensure(got == [10 * (round as i32 + 1); 4], || {
            format!("round {round}: the waiting stream saw {got:?}")
        })?;
        seen.push(got[0]);
        g.sync(producer)?;
    }
    Ok(format!("attr-events ok seen={}", join(&seen)))
}

/// A function's dynamic shared memory limit raised before a launch that needs it and lowered
/// again after, as libraries do around their launches: CUDA applies a limit to the launches
/// made after it, so the big launch is valid even if it runs after the limit went down.
pub fn attributes(s: &Session) -> Result<String, AppError> {
    attribute_rounds(s, "attributes", false)
}

/// Attributes changed while a launch that needs the raised limit is held back behind a long
/// kernel (a launch window of one then full): a preference and a raise cannot affect it,
/// lowering the limit below what it asks for can. The result must be native's either way.
/// (Not a stream wait on a host flag: what must reach the driver before a call is launched
/// only once the window has room, so a flag the same thread sets after that call would never
/// be reached.) Its kernel is a library kernel passed as a function, its attributes set through
/// `cuKernelSetAttribute`, as the CUDA runtime launches and sets them: the queue tells and
/// raises such a limit through the kernel calls, which the driver answers for it.
pub fn attributes_held(s: &Session) -> Result<String, AppError> {
    attribute_rounds(s, "attributes-held", true)
}

/// Three rounds of: the limit raised, a kernel, a launch that needs the raised limit (adds 1),
/// the limit lowered, a launch that needs none (adds 10). With `held`, the kernel is long, a
/// preference and a further raise come before the lowering, and each round ends synchronized.
fn attribute_rounds(s: &Session, name: &str, held: bool) -> Result<String, AppError> {
    use baton_cuda_sys::{
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as LIMIT,
        CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT as CARVEOUT,
    };
    const BIG: u32 = 64 * 1024;
    let (g, k) = (&s.gpu, &s.k);
    // The held rounds launch a library kernel passed as a function and set its attributes
    // through cuKernelSetAttribute, as the CUDA runtime does; the others, a module's function
    // through cuFuncSetAttribute.
    let kernel = if held {
        Some(g.library_kernel(c"add_i32")?)
    } else {
        None
    };
    let add = kernel.map_or(k.add, |k| k.cast());
    let set = |attrib, value: i32| match kernel {
        Some(kernel) => g.set_kernel_attribute(kernel, attrib, value),
        None if attrib == CARVEOUT => g.set_carveout(add, value),
        None => g.set_max_dynamic_shared(add, value),
    };
    let stream = g.stream(CU_STREAM_NON_BLOCKING)?;
    let buf = g.alloc(4)?;
    g.memset32(buf, 0, 4)?;
    for round in 0..3 {
        set(LIMIT, BIG as i32)?;
        g.launch(k.spin, stream, &[U64(if held { 300_000 } else { 1_000 })])?;
        g.launch_shared(add, stream, BIG, &[Ptr(buf), I32(4), I32(1)])?;
        if held {
            set(CARVEOUT, 25 * (round + 1))?;
            set(LIMIT, (BIG + 16 * 1024) as i32)?;
        }
        set(LIMIT, 48 * 1024)?;
        g.launch_shared(add, stream, 0, &[Ptr(buf), I32(4), I32(10)])?;
        if held {
            g.sync(stream)?;
        }
    }
    g.sync(stream)?;
    let out = g.download(buf, 4)?;
    ensure(out == [33; 4], || {
        format!("three rounds of 1 + 10: {out:?}")
    })?;
    g.destroy_stream(stream)?;
    Ok(format!("{name} ok values={}", join(&out)))
}
