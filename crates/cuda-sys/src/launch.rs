//! Structs of `cuLaunchKernelEx`: the launch configuration and its attributes, with the exact
//! C layout of 64-bit Linux (checked at the bottom of this file).

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::mem::{align_of, offset_of, size_of};

use crate::{CUevent, CUgraphDeviceNode, CUstream};

c_enum! {
    /// The key of a launch attribute (`CUlaunchAttributeID`).
    CUlaunchAttributeID {
        /// Ignored entry.
        CU_LAUNCH_ATTRIBUTE_IGNORE = 0,
        /// L2 access policy window (`value.accessPolicyWindow`).
        CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW = 1,
        /// Cooperative launch (`value.cooperative`).
        CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
        /// Synchronization policy (`value.syncPolicy`).
        CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY = 3,
        /// Thread-block cluster dimensions (`value.clusterDim`).
        CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
        /// Cluster scheduling policy (`value.clusterSchedulingPolicyPreference`).
        CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
        /// Programmatic dependent launch (`value.programmaticStreamSerializationAllowed`).
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6,
        /// Programmatic event (`value.programmaticEvent`).
        CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT = 7,
        /// Kernel execution priority (`value.priority`).
        CU_LAUNCH_ATTRIBUTE_PRIORITY = 8,
        /// Memory synchronization domain map (`value.memSyncDomainMap`).
        CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP = 9,
        /// Memory synchronization domain (`value.memSyncDomain`).
        CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN = 10,
        /// Preferred cluster dimensions (`value.preferredClusterDim`).
        CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION = 11,
        /// Launch completion event (`value.launchCompletionEvent`).
        CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT = 12,
        /// Device-updatable kernel node (`value.deviceUpdatableKernelNode`).
        CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE = 13,
        /// Preferred shared memory carveout (`value.sharedMemCarveout`).
        CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 14,
        /// NVLink-utilization-centric scheduling (`value.nvlinkUtilCentricScheduling`).
        CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING = 16,
    }
}

/// An L2 persistence window (`CUaccessPolicyWindow`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUaccessPolicyWindow {
    /// Start of the window.
    pub base_ptr: *mut c_void,
    /// Size of the window, in bytes.
    pub num_bytes: usize,
    /// Fraction of accesses that get `hitProp`.
    pub hitRatio: f32,
    /// `CUaccessProperty` of hits.
    pub hitProp: c_uint,
    /// `CUaccessProperty` of misses.
    pub missProp: c_uint,
}

/// Three unsigned dimensions (the anonymous `clusterDim`/`preferredClusterDim` structs).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUlaunchAttributeValue_dim3 {
    /// X dimension.
    pub x: c_uint,
    /// Y dimension.
    pub y: c_uint,
    /// Z dimension.
    pub z: c_uint,
}

/// Value of [`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchAttributeValue_programmaticEvent {
    /// The event to trigger.
    pub event: CUevent,
    /// Event flags.
    pub flags: c_int,
    /// Whether to trigger at block start.
    pub triggerAtBlockStart: c_int,
}

/// Value of [`CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchAttributeValue_launchCompletionEvent {
    /// The event to trigger.
    pub event: CUevent,
    /// Event flags.
    pub flags: c_int,
}

/// Value of [`CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchAttributeValue_deviceUpdatableKernelNode {
    /// Whether the node is device-updatable.
    pub deviceUpdatable: c_int,
    /// The device-side node handle (output).
    pub devNode: CUgraphDeviceNode,
}

/// Value of [`CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP`] (`CUlaunchMemSyncDomainMap`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUlaunchMemSyncDomainMap {
    /// Default domain.
    pub default_: u8,
    /// Remote domain.
    pub remote: u8,
}

/// The value of a launch attribute: a 64-byte union (`CUlaunchAttributeValue`).
///
/// C enums inside are read as plain `c_uint`s, so no value can be invalid.
#[repr(C)]
#[derive(Clone, Copy)]
pub union CUlaunchAttributeValue {
    /// Raw bytes; the union is exactly 64 bytes.
    pub pad: [c_char; 64],
    /// [`CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW`].
    pub accessPolicyWindow: CUaccessPolicyWindow,
    /// [`CU_LAUNCH_ATTRIBUTE_COOPERATIVE`]: nonzero for a cooperative launch.
    pub cooperative: c_int,
    /// [`CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY`] (`CUsynchronizationPolicy`).
    pub syncPolicy: c_uint,
    /// [`CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`].
    pub clusterDim: CUlaunchAttributeValue_dim3,
    /// [`CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE`] (`CUclusterSchedulingPolicy`).
    pub clusterSchedulingPolicyPreference: c_uint,
    /// [`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`].
    pub programmaticStreamSerializationAllowed: c_int,
    /// [`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT`].
    pub programmaticEvent: CUlaunchAttributeValue_programmaticEvent,
    /// [`CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT`].
    pub launchCompletionEvent: CUlaunchAttributeValue_launchCompletionEvent,
    /// [`CU_LAUNCH_ATTRIBUTE_PRIORITY`].
    pub priority: c_int,
    /// [`CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP`].
    pub memSyncDomainMap: CUlaunchMemSyncDomainMap,
    /// [`CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN`] (`CUlaunchMemSyncDomain`).
    pub memSyncDomain: c_uint,
    /// [`CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION`].
    pub preferredClusterDim: CUlaunchAttributeValue_dim3,
    /// [`CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE`].
    pub deviceUpdatableKernelNode: CUlaunchAttributeValue_deviceUpdatableKernelNode,
    /// [`CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`].
    pub sharedMemCarveout: c_uint,
    /// [`CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING`].
    pub nvlinkUtilCentricScheduling: c_uint,
}

/// One launch attribute: a key and its value (`CUlaunchAttribute`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CUlaunchAttribute {
    /// The key.
    pub id: CUlaunchAttributeID,
    /// Padding up to the 8-byte-aligned value.
    pub pad: [c_char; 8 - size_of::<CUlaunchAttributeID>()],
    /// The value; which member is meaningful depends on `id`.
    pub value: CUlaunchAttributeValue,
}

/// The configuration of `cuLaunchKernelEx` (`CUlaunchConfig`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CUlaunchConfig {
    /// Grid width, in blocks.
    pub gridDimX: c_uint,
    /// Grid height, in blocks.
    pub gridDimY: c_uint,
    /// Grid depth, in blocks.
    pub gridDimZ: c_uint,
    /// Block width, in threads.
    pub blockDimX: c_uint,
    /// Block height, in threads.
    pub blockDimY: c_uint,
    /// Block depth, in threads.
    pub blockDimZ: c_uint,
    /// Dynamic shared memory per block, in bytes.
    pub sharedMemBytes: c_uint,
    /// The stream to launch on.
    pub hStream: CUstream,
    /// The attributes, `numAttrs` of them (may be NULL when `numAttrs` is 0).
    pub attrs: *mut CUlaunchAttribute,
    /// The number of attributes.
    pub numAttrs: c_uint,
}

const _: () = {
    assert!(size_of::<CUaccessPolicyWindow>() == 32 && align_of::<CUaccessPolicyWindow>() == 8);
    assert!(size_of::<CUlaunchAttributeValue_dim3>() == 12);
    assert!(size_of::<CUlaunchAttributeValue_programmaticEvent>() == 16);
    assert!(size_of::<CUlaunchAttributeValue_launchCompletionEvent>() == 16);
    assert!(size_of::<CUlaunchAttributeValue_deviceUpdatableKernelNode>() == 16);
    assert!(size_of::<CUlaunchMemSyncDomainMap>() == 2);
    assert!(size_of::<CUlaunchAttributeValue>() == 64 && align_of::<CUlaunchAttributeValue>() == 8);
    assert!(size_of::<CUlaunchAttribute>() == 72 && align_of::<CUlaunchAttribute>() == 8);
    assert!(offset_of!(CUlaunchAttribute, value) == 8);
    assert!(size_of::<CUlaunchConfig>() == 56 && align_of::<CUlaunchConfig>() == 8);
    assert!(offset_of!(CUlaunchConfig, sharedMemBytes) == 24);
    assert!(offset_of!(CUlaunchConfig, hStream) == 32);
    assert!(offset_of!(CUlaunchConfig, attrs) == 40);
    assert!(offset_of!(CUlaunchConfig, numAttrs) == 48);
};
