//! Graph entry points: instantiating what a stream capture recorded into an executable graph,
//! launching and uploading it, and destroying both (the graph types are in `ops.rs`).

use std::ffi::c_char;
use std::sync::Arc;

use baton_cuda_sys::{CUgraph, CUgraphExec, CUgraphNode, CUresult, CUstream};

use crate::current;
use crate::entry::exports;
use crate::handle::{Kind, raw_of, to_ptr};
use crate::ops::{GraphExec, Op};
use crate::result::{CuResult, put, put_opt};
use crate::state::initialized;
use crate::stream::DefaultStream;

/// The `cuGraphInstantiateWithFlags` flags the fake accepts (all it knows of; none changes
/// what it does): auto-free on launch, upload, device launch, use node priority.
const INSTANTIATE_FLAGS: u64 = 0x1 | 0x2 | 0x4 | 0x8;

unsafe fn instantiate(out: *mut CUgraphExec, graph: CUgraph, flags: u64) -> CuResult<()> {
    let g = initialized()?;
    let graph = g
        .graphs
        .get(raw_of(graph))
        .ok_or(CUresult::INVALID_HANDLE)?;
    if out.is_null() || flags & !INSTANTIATE_FLAGS != 0 {
        return Err(CUresult::INVALID_VALUE);
    }
    let exec = Arc::new(GraphExec {
        handle: g.handle(Kind::GraphExec),
        nodes: graph.nodes(),
    });
    g.execs.insert(exec.handle.raw, Arc::clone(&exec));
    // SAFETY: `out` is not NULL and the caller guarantees it is writable.
    unsafe { put(out, to_ptr(exec.handle.raw)) }
}

unsafe fn instantiate_v1(
    out: *mut CUgraphExec,
    graph: CUgraph,
    error_node: *mut CUgraphNode,
    log: *mut c_char,
    log_size: usize,
) -> CuResult<()> {
    // SAFETY: the caller guarantees `error_node` is NULL or writable and `log` NULL or valid for
    // `log_size` bytes; an empty string needs one.
    unsafe {
        put_opt(error_node, std::ptr::null_mut());
        if log_size > 0 {
            put_opt(log, 0);
        }
        instantiate(out, graph, 0)
    }
}

fn launch(exec: CUgraphExec, raw: CUstream, mode: DefaultStream) -> CuResult<()> {
    let g = initialized()?;
    let exec = g.execs.get(raw_of(exec)).ok_or(CUresult::INVALID_HANDLE)?;
    let stream = current::stream(raw, mode)?;
    stream.submit(Op::Graph(exec), Vec::new()).map(drop)
}

fn upload(exec: CUgraphExec, raw: CUstream, mode: DefaultStream) -> CuResult<()> {
    let g = initialized()?;
    let exec = g.execs.get(raw_of(exec)).ok_or(CUresult::INVALID_HANDLE)?;
    let stream = current::stream(raw, mode)?;
    stream
        .submit(
            Op::GraphUpload {
                exec: exec.handle.short,
            },
            Vec::new(),
        )
        .map(drop)
}

fn exec_destroy(exec: CUgraphExec) -> CuResult<()> {
    let g = initialized()?;
    g.execs
        .remove(raw_of(exec))
        .map(drop)
        .ok_or(CUresult::INVALID_HANDLE)
}

fn destroy(graph: CUgraph) -> CuResult<()> {
    let g = initialized()?;
    g.graphs
        .remove(raw_of(graph))
        .map(drop)
        .ok_or(CUresult::INVALID_HANDLE)
}

use DefaultStream::{Legacy, PerThread};

exports! {
    /// Instantiates a graph (version 1, with error node and log buffer).
    fn cuGraphInstantiate(
        phGraphExec: *mut CUgraphExec, hGraph: CUgraph, phErrorNode: *mut CUgraphNode, logBuffer: *mut c_char, bufferSize: usize,
    ): PFN_cuGraphInstantiate => instantiate_v1(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
    /// Instantiates a graph (version 2, same signature).
    fn cuGraphInstantiate_v2(
        phGraphExec: *mut CUgraphExec, hGraph: CUgraph, phErrorNode: *mut CUgraphNode, logBuffer: *mut c_char, bufferSize: usize,
    ): PFN_cuGraphInstantiate_v2 => instantiate_v1(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
    /// Instantiates a graph with flags.
    fn cuGraphInstantiateWithFlags(phGraphExec: *mut CUgraphExec, hGraph: CUgraph, flags: u64): PFN_cuGraphInstantiateWithFlags
        => instantiate(phGraphExec, hGraph, flags);
    /// Launches an executable graph as one command of the stream.
    fn cuGraphLaunch(hGraphExec: CUgraphExec, hStream: CUstream): PFN_cuGraphLaunch => launch(hGraphExec, hStream, Legacy);
    /// Per-thread-default-stream form of `cuGraphLaunch`.
    fn cuGraphLaunch_ptsz(hGraphExec: CUgraphExec, hStream: CUstream): PFN_cuGraphLaunch
        => launch(hGraphExec, hStream, PerThread);
    /// Uploads an executable graph (a no-op command of the stream).
    fn cuGraphUpload(hGraphExec: CUgraphExec, hStream: CUstream): PFN_cuGraphUpload => upload(hGraphExec, hStream, Legacy);
    /// Per-thread-default-stream form of `cuGraphUpload`.
    fn cuGraphUpload_ptsz(hGraphExec: CUgraphExec, hStream: CUstream): PFN_cuGraphUpload
        => upload(hGraphExec, hStream, PerThread);
    /// Destroys an executable graph (launched copies still run).
    fn cuGraphExecDestroy(hGraphExec: CUgraphExec): PFN_cuGraphExecDestroy => exec_destroy(hGraphExec);
    /// Destroys a graph.
    fn cuGraphDestroy(hGraph: CUgraph): PFN_cuGraphDestroy => destroy(hGraph);
}
