//! Parameter structs of context creation and stream-capture queries, with the exact C layout of
//! 64-bit Linux (checked at the bottom of this file).

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_int, c_uint, c_void};
use std::mem::{align_of, offset_of, size_of};

use crate::CUexecAffinityType;

/// Value of an SM-count affinity (`CUexecAffinitySmCount`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUexecAffinitySmCount {
    /// The number of SMs.
    pub val: c_uint,
}

/// The value of an execution-affinity parameter (the anonymous `param` union).
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUexecAffinityParam_param {
    /// [`crate::CU_EXEC_AFFINITY_TYPE_SM_COUNT`].
    pub smCount: CUexecAffinitySmCount,
}

/// One execution-affinity parameter of `cuCtxCreate_v3`/`_v4` (`CUexecAffinityParam`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUexecAffinityParam {
    /// The kind of affinity.
    pub type_: CUexecAffinityType,
    /// Its value.
    pub param: CUexecAffinityParam_param,
}

/// CUDA-in-graphics sharing parameters (`CUctxCigParam`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUctxCigParam {
    /// `CUcigDataType` of `sharedData`.
    pub sharedDataType: c_uint,
    /// The shared graphics object.
    pub sharedData: *mut c_void,
}

/// The parameters of `cuCtxCreate_v4` (`CUctxCreateParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUctxCreateParams {
    /// Execution-affinity parameters (may be NULL).
    pub execAffinityParams: *mut CUexecAffinityParam,
    /// Their number.
    pub numExecAffinityParams: c_int,
    /// CUDA-in-graphics parameters (may be NULL).
    pub cigParams: *mut CUctxCigParam,
}

/// The data of a graph edge (`CUgraphEdgeData`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUgraphEdgeData {
    /// Upstream port (`CUgraphDependencyPort`-like value).
    pub from_port: u8,
    /// Downstream port.
    pub to_port: u8,
    /// `CUgraphDependencyType` of the edge.
    pub type_: u8,
    /// Must be zero.
    pub reserved: [u8; 5],
}

const _: () = {
    assert!(size_of::<CUexecAffinitySmCount>() == 4);
    assert!(size_of::<CUexecAffinityParam_param>() == 4);
    assert!(size_of::<CUexecAffinityParam>() == 8 && align_of::<CUexecAffinityParam>() == 4);
    assert!(offset_of!(CUexecAffinityParam, param) == 4);
    assert!(size_of::<CUctxCigParam>() == 16 && offset_of!(CUctxCigParam, sharedData) == 8);
    assert!(size_of::<CUctxCreateParams>() == 24);
    assert!(offset_of!(CUctxCreateParams, numExecAffinityParams) == 8);
    assert!(offset_of!(CUctxCreateParams, cigParams) == 16);
    assert!(size_of::<CUgraphEdgeData>() == 8 && align_of::<CUgraphEdgeData>() == 1);
};
