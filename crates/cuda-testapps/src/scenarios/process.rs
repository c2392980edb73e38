//! Process-lifecycle scenarios: `fork()` and exiting with work still queued.

use baton_cuda_sys::{CU_STREAM_DEFAULT, CUresult, CUstream};

use super::session::{Session, join};
use crate::error::{AppError, ensure, expect_code};
use crate::gpu::KArg::*;

const LEGACY: CUstream = std::ptr::null_mut();

/// The parent works, forks, and keeps working; the child initializes the driver anew (its
/// parent's context is not its own) and works too; both check their results.
pub fn fork(s: &Session) -> Result<String, AppError> {
    let (g, k) = (&s.gpu, &s.k);
    let stream = g.stream(CU_STREAM_DEFAULT)?;
    let buf = g.alloc(4)?;
    g.upload(buf, &[1, 2, 3, 4])?;
    g.launch(k.add, stream, &[Ptr(buf), I32(4), I32(10)])?;
    g.sync(stream)?;
    ensure(g.download(buf, 4)? == [11, 12, 13, 14], || {
        "parent before fork".into()
    })?;

    // SAFETY: fork has no preconditions; the child only calls the driver (which starts anew
    // in a child) and then exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(AppError::Os {
            call: "fork",
            source: std::io::Error::last_os_error(),
        });
    }
    if pid == 0 {
        let code = match child(s) {
            Ok(()) => 0,
            Err(error) => {
                eprintln!("fork child: {error}");
                1
            }
        };
        std::process::exit(code);
    }

    g.launch(k.mul, stream, &[Ptr(buf), I32(4), I32(2)])?;
    g.sync(stream)?;
    let parent = g.download(buf, 4)?;
    ensure(parent == [22, 24, 26, 28], || {
        format!("parent after fork: {parent:?}")
    })?;
    let mut status = 0;
    // SAFETY: `pid` is our child and `status` is writable.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        return Err(AppError::Os {
            call: "waitpid",
            source: std::io::Error::last_os_error(),
        });
    }
    let child_ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    ensure(child_ok, || format!("child exit status {status:#x}"))?;
    g.destroy_stream(stream)?;
    Ok(format!("fork ok parent={} child=ok", join(&parent)))
}

fn child(s: &Session) -> Result<(), AppError> {
    let g = &s.gpu;
    expect_code(
        "cuMemAlloc in the child before cuInit",
        g.alloc_code(),
        CUresult::NOT_INITIALIZED,
    )?;
    expect_code("cuInit in the child", g.init_code(), CUresult::SUCCESS)?;
    expect_code(
        "cuCtxSetCurrent(parent's context) in the child",
        g.set_current_code(s.ctx),
        CUresult::INVALID_CONTEXT,
    )?;
    g.init_primary()?;
    let k = g.load_kernels()?;
    let buf = g.alloc(4)?;
    g.upload(buf, &[5, 6, 7, 8])?;
    g.launch(k.add, LEGACY, &[Ptr(buf), I32(4), I32(1)])?;
    let out = g.download(buf, 4)?;
    ensure(out == [6, 7, 8, 9], || format!("child: {out:?}"))
}

/// Launches slow work and returns without synchronizing: the driver must still execute it
/// before the process ends.
pub fn exit_pending(s: &Session) -> Result<String, AppError> {
    const SPINS: usize = 3;
    let (g, k) = (&s.gpu, &s.k);
    let stream = g.stream(CU_STREAM_DEFAULT)?;
    let (log, counter) = (g.alloc(4)?, g.alloc(1)?);
    g.memset32(log, 0, 4)?;
    g.memset32(counter, 0, 1)?;
    for _ in 0..SPINS {
        g.launch(k.spin, stream, &[U64(30_000)])?;
    }
    g.launch(k.append, stream, &[Ptr(log), Ptr(counter), I32(42)])?;
    Ok(format!("exit-pending launched={}", SPINS + 1))
}
