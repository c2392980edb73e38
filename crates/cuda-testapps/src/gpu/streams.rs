//! Streams, events, stream memory operations, capture and graphs.

use std::ffi::{c_int, c_uint};

use baton_cuda_sys::{
    CUdeviceptr, CUevent, CUgraph, CUgraphEdgeData, CUgraphExec, CUgraphNode, CUresult, CUstream,
    CUstreamCaptureMode, CUstreamCaptureStatus,
};

use super::Gpu;
use crate::error::{AppError, expect_code};

impl Gpu {
    /// `cuStreamCreate`.
    pub fn stream(&self, flags: c_uint) -> Result<CUstream, AppError> {
        let mut stream = std::ptr::null_mut();
        call!(self, cuStreamCreate(&mut stream, flags))?;
        Ok(stream)
    }

    /// `cuStreamCreateWithPriority`; returns the stream and the priority it reports.
    pub fn stream_with_priority(
        &self,
        flags: c_uint,
        priority: c_int,
    ) -> Result<(CUstream, c_int, c_uint), AppError> {
        let mut stream = std::ptr::null_mut();
        call!(
            self,
            cuStreamCreateWithPriority(&mut stream, flags, priority)
        )?;
        let (mut got, mut got_flags) = (0, 0);
        call!(self, cuStreamGetPriority(stream, &mut got))?;
        call!(self, cuStreamGetFlags(stream, &mut got_flags))?;
        Ok((stream, got, got_flags))
    }

    /// `cuStreamDestroy`.
    pub fn destroy_stream(&self, stream: CUstream) -> Result<(), AppError> {
        call!(self, cuStreamDestroy(stream))
    }

    /// `cuStreamSynchronize`.
    pub fn sync(&self, stream: CUstream) -> Result<(), AppError> {
        call!(self, cuStreamSynchronize(stream))
    }

    /// `cuStreamSynchronize`'s code.
    pub fn sync_code(&self, stream: CUstream) -> CUresult {
        code!(self, cuStreamSynchronize(stream))
    }

    /// `cuStreamEndCapture`'s code (the graph, if any, is destroyed).
    pub fn end_capture_code(&self, stream: CUstream) -> CUresult {
        let mut graph = std::ptr::null_mut();
        let code = code!(self, cuStreamEndCapture(stream, &mut graph));
        if !graph.is_null() {
            let _ = code!(self, cuGraphDestroy(graph));
        }
        code
    }

    /// `cuStreamQuery`'s code.
    pub fn query(&self, stream: CUstream) -> CUresult {
        code!(self, cuStreamQuery(stream))
    }

    /// `cuStreamWaitValue32_v2`.
    pub fn wait_value(
        &self,
        stream: CUstream,
        addr: CUdeviceptr,
        value: u32,
        flags: c_uint,
    ) -> Result<(), AppError> {
        call!(self, cuStreamWaitValue32(stream, addr, value, flags))
    }

    /// `cuStreamWriteValue32_v2`.
    pub fn write_value(
        &self,
        stream: CUstream,
        addr: CUdeviceptr,
        value: u32,
    ) -> Result<(), AppError> {
        call!(self, cuStreamWriteValue32(stream, addr, value, 0))
    }

    /// `cuEventCreate`.
    pub fn event(&self, flags: c_uint) -> Result<CUevent, AppError> {
        let mut event = std::ptr::null_mut();
        call!(self, cuEventCreate(&mut event, flags))?;
        Ok(event)
    }

    /// `cuEventRecord`.
    pub fn record(&self, event: CUevent, stream: CUstream) -> Result<(), AppError> {
        call!(self, cuEventRecord(event, stream))
    }

    /// `cuEventQuery`'s code.
    pub fn event_query(&self, event: CUevent) -> CUresult {
        code!(self, cuEventQuery(event))
    }

    /// `cuEventSynchronize`.
    pub fn event_sync(&self, event: CUevent) -> Result<(), AppError> {
        call!(self, cuEventSynchronize(event))
    }

    /// `cuEventElapsedTime_v2`: milliseconds, or the code.
    pub fn elapsed(&self, start: CUevent, end: CUevent) -> Result<f32, CUresult> {
        let mut ms = 0.0f32;
        let code = code!(self, cuEventElapsedTime(&mut ms, start, end));
        if code == CUresult::SUCCESS {
            Ok(ms)
        } else {
            Err(code)
        }
    }

    /// `cuStreamWaitEvent`.
    pub fn wait_event(&self, stream: CUstream, event: CUevent) -> Result<(), AppError> {
        call!(self, cuStreamWaitEvent(stream, event, 0))
    }

    /// `cuEventDestroy`.
    pub fn destroy_event(&self, event: CUevent) -> Result<(), AppError> {
        call!(self, cuEventDestroy(event))
    }

    /// `cuStreamBeginCapture_v2`.
    pub fn begin_capture(
        &self,
        stream: CUstream,
        mode: CUstreamCaptureMode,
    ) -> Result<(), AppError> {
        call!(self, cuStreamBeginCapture(stream, mode))
    }

    /// `cuStreamEndCapture`.
    pub fn end_capture(&self, stream: CUstream) -> Result<CUgraph, AppError> {
        let mut graph = std::ptr::null_mut();
        call!(self, cuStreamEndCapture(stream, &mut graph))?;
        Ok(graph)
    }

    /// `cuStreamIsCapturing`.
    pub fn is_capturing(&self, stream: CUstream) -> Result<CUstreamCaptureStatus, AppError> {
        let mut status = CUstreamCaptureStatus::default();
        call!(self, cuStreamIsCapturing(stream, &mut status))?;
        Ok(status)
    }

    /// `cuStreamGetCaptureInfo_v3`: status, capture id, whether a graph was reported, and the
    /// number of current dependencies.
    pub fn capture_info(
        &self,
        stream: CUstream,
    ) -> Result<(CUstreamCaptureStatus, u64, bool, usize), AppError> {
        let mut status = CUstreamCaptureStatus::default();
        let (mut id, mut graph, mut count) = (0u64, std::ptr::null_mut(), 0usize);
        let mut deps: *const CUgraphNode = std::ptr::null();
        let mut edges: *const CUgraphEdgeData = std::ptr::null();
        call!(
            self,
            cuStreamGetCaptureInfo(
                stream,
                &mut status,
                &mut id,
                &mut graph,
                &mut deps,
                &mut edges,
                &mut count
            )
        )?;
        Ok((status, id, !graph.is_null(), count))
    }

    /// `cuGraphInstantiate` (resolved to `cuGraphInstantiateWithFlags`).
    pub fn instantiate(&self, graph: CUgraph) -> Result<CUgraphExec, AppError> {
        let mut exec = std::ptr::null_mut();
        call!(self, cuGraphInstantiate(&mut exec, graph, 0))?;
        Ok(exec)
    }

    /// `cuGraphLaunch`.
    pub fn graph_launch(&self, exec: CUgraphExec, stream: CUstream) -> Result<(), AppError> {
        call!(self, cuGraphLaunch(exec, stream))
    }

    /// `cuGraphExecDestroy` and `cuGraphDestroy`.
    pub fn destroy_graph(&self, exec: CUgraphExec, graph: CUgraph) -> Result<(), AppError> {
        call!(self, cuGraphExecDestroy(exec))?;
        call!(self, cuGraphDestroy(graph))
    }
}
