//! The base names `cuGetProcAddress` knows, and the symbol each resolves to by CUDA version.
//!
//! Versions and per-thread variants follow NVIDIA's `cudaTypedefs.h` (the `PFN_<name>_v<version>`
//! typedefs and their `__API_TYPEDEF_PTSZ`/`_PTDS` first versions). A test in
//! [`crate::procaddr`] checks that every symbol here is exported and every export is here.

/// One symbol a base name resolves to, from CUDA version `since`, with its per-thread variant.
pub(crate) struct Version {
    pub since: i32,
    pub symbol: &'static str,
    pub per_thread: Option<(i32, &'static str)>,
}

const fn v(since: i32, symbol: &'static str) -> Version {
    Version {
        since,
        symbol,
        per_thread: None,
    }
}

const fn pt(since: i32, symbol: &'static str, pt_since: i32, pt_symbol: &'static str) -> Version {
    Version {
        since,
        symbol,
        per_thread: Some((pt_since, pt_symbol)),
    }
}

/// Base names and their versions, oldest first.
pub(crate) static TABLE: &[(&str, &[Version])] = &[
    ("cuGetErrorString", &[v(6000, "cuGetErrorString")]),
    ("cuGetErrorName", &[v(6000, "cuGetErrorName")]),
    ("cuInit", &[v(2000, "cuInit")]),
    ("cuDriverGetVersion", &[v(2020, "cuDriverGetVersion")]),
    ("cuGetExportTable", &[v(3000, "cuGetExportTable")]),
    (
        "cuGetProcAddress",
        &[
            v(11030, "cuGetProcAddress"),
            v(12000, "cuGetProcAddress_v2"),
        ],
    ),
    ("cuDeviceGet", &[v(2000, "cuDeviceGet")]),
    ("cuDeviceGetCount", &[v(2000, "cuDeviceGetCount")]),
    ("cuDeviceGetName", &[v(2000, "cuDeviceGetName")]),
    ("cuDeviceGetAttribute", &[v(2000, "cuDeviceGetAttribute")]),
    ("cuDeviceTotalMem", &[v(3020, "cuDeviceTotalMem_v2")]),
    (
        "cuDeviceGetUuid",
        &[v(9020, "cuDeviceGetUuid"), v(11040, "cuDeviceGetUuid_v2")],
    ),
    (
        "cuDevicePrimaryCtxRetain",
        &[v(7000, "cuDevicePrimaryCtxRetain")],
    ),
    (
        "cuDevicePrimaryCtxRelease",
        &[
            v(7000, "cuDevicePrimaryCtxRelease"),
            v(11000, "cuDevicePrimaryCtxRelease_v2"),
        ],
    ),
    (
        "cuDevicePrimaryCtxGetState",
        &[v(7000, "cuDevicePrimaryCtxGetState")],
    ),
    (
        "cuCtxCreate",
        &[
            v(2000, "cuCtxCreate"),
            v(3020, "cuCtxCreate_v2"),
            v(11040, "cuCtxCreate_v3"),
            v(12050, "cuCtxCreate_v4"),
        ],
    ),
    (
        "cuCtxDestroy",
        &[v(2000, "cuCtxDestroy"), v(4000, "cuCtxDestroy_v2")],
    ),
    (
        "cuCtxPushCurrent",
        &[v(2000, "cuCtxPushCurrent"), v(4000, "cuCtxPushCurrent_v2")],
    ),
    (
        "cuCtxPopCurrent",
        &[v(2000, "cuCtxPopCurrent"), v(4000, "cuCtxPopCurrent_v2")],
    ),
    ("cuCtxSetCurrent", &[v(4000, "cuCtxSetCurrent")]),
    ("cuCtxGetCurrent", &[v(4000, "cuCtxGetCurrent")]),
    ("cuCtxGetDevice", &[v(2000, "cuCtxGetDevice")]),
    (
        "cuThreadExchangeStreamCaptureMode",
        &[v(10010, "cuThreadExchangeStreamCaptureMode")],
    ),
    (
        "cuCtxSynchronize",
        &[v(2000, "cuCtxSynchronize"), v(13000, "cuCtxSynchronize_v2")],
    ),
    (
        "cuCtxGetStreamPriorityRange",
        &[v(5050, "cuCtxGetStreamPriorityRange")],
    ),
    ("cuMemGetInfo", &[v(3020, "cuMemGetInfo_v2")]),
    (
        "cuMemAlloc",
        &[v(2000, "cuMemAlloc"), v(3020, "cuMemAlloc_v2")],
    ),
    (
        "cuMemFree",
        &[v(2000, "cuMemFree"), v(3020, "cuMemFree_v2")],
    ),
    (
        "cuMemAllocHost",
        &[v(2000, "cuMemAllocHost"), v(3020, "cuMemAllocHost_v2")],
    ),
    ("cuMemFreeHost", &[v(2000, "cuMemFreeHost")]),
    ("cuMemHostAlloc", &[v(2020, "cuMemHostAlloc")]),
    (
        "cuMemAllocAsync",
        &[pt(11020, "cuMemAllocAsync", 11020, "cuMemAllocAsync_ptsz")],
    ),
    (
        "cuMemFreeAsync",
        &[pt(11020, "cuMemFreeAsync", 11020, "cuMemFreeAsync_ptsz")],
    ),
    ("cuMemcpy", &[pt(4000, "cuMemcpy", 7000, "cuMemcpy_ptds")]),
    (
        "cuMemcpyAsync",
        &[pt(4000, "cuMemcpyAsync", 7000, "cuMemcpyAsync_ptsz")],
    ),
    (
        "cuMemcpyHtoD",
        &[
            v(2000, "cuMemcpyHtoD"),
            pt(3020, "cuMemcpyHtoD_v2", 7000, "cuMemcpyHtoD_v2_ptds"),
        ],
    ),
    (
        "cuMemcpyDtoH",
        &[
            v(2000, "cuMemcpyDtoH"),
            pt(3020, "cuMemcpyDtoH_v2", 7000, "cuMemcpyDtoH_v2_ptds"),
        ],
    ),
    (
        "cuMemcpyDtoD",
        &[
            v(2000, "cuMemcpyDtoD"),
            pt(3020, "cuMemcpyDtoD_v2", 7000, "cuMemcpyDtoD_v2_ptds"),
        ],
    ),
    (
        "cuMemcpyHtoDAsync",
        &[
            v(2000, "cuMemcpyHtoDAsync"),
            pt(
                3020,
                "cuMemcpyHtoDAsync_v2",
                7000,
                "cuMemcpyHtoDAsync_v2_ptsz",
            ),
        ],
    ),
    (
        "cuMemcpyDtoHAsync",
        &[
            v(2000, "cuMemcpyDtoHAsync"),
            pt(
                3020,
                "cuMemcpyDtoHAsync_v2",
                7000,
                "cuMemcpyDtoHAsync_v2_ptsz",
            ),
        ],
    ),
    (
        "cuMemcpyDtoDAsync",
        &[
            v(3000, "cuMemcpyDtoDAsync"),
            pt(
                3020,
                "cuMemcpyDtoDAsync_v2",
                7000,
                "cuMemcpyDtoDAsync_v2_ptsz",
            ),
        ],
    ),
    (
        "cuMemsetD8",
        &[
            v(2000, "cuMemsetD8"),
            pt(3020, "cuMemsetD8_v2", 7000, "cuMemsetD8_v2_ptds"),
        ],
    ),
    (
        "cuMemsetD16",
        &[
            v(2000, "cuMemsetD16"),
            pt(3020, "cuMemsetD16_v2", 7000, "cuMemsetD16_v2_ptds"),
        ],
    ),
    (
        "cuMemsetD32",
        &[
            v(2000, "cuMemsetD32"),
            pt(3020, "cuMemsetD32_v2", 7000, "cuMemsetD32_v2_ptds"),
        ],
    ),
    (
        "cuMemsetD8Async",
        &[pt(3020, "cuMemsetD8Async", 7000, "cuMemsetD8Async_ptsz")],
    ),
    (
        "cuMemsetD16Async",
        &[pt(3020, "cuMemsetD16Async", 7000, "cuMemsetD16Async_ptsz")],
    ),
    (
        "cuMemsetD32Async",
        &[pt(3020, "cuMemsetD32Async", 7000, "cuMemsetD32Async_ptsz")],
    ),
    ("cuModuleLoadData", &[v(2000, "cuModuleLoadData")]),
    ("cuModuleGetFunction", &[v(2000, "cuModuleGetFunction")]),
    ("cuModuleUnload", &[v(2000, "cuModuleUnload")]),
    ("cuLibraryLoadData", &[v(12000, "cuLibraryLoadData")]),
    ("cuLibraryUnload", &[v(12000, "cuLibraryUnload")]),
    ("cuLibraryGetKernel", &[v(12000, "cuLibraryGetKernel")]),
    ("cuKernelGetFunction", &[v(12000, "cuKernelGetFunction")]),
    ("cuKernelGetName", &[v(12030, "cuKernelGetName")]),
    ("cuKernelGetParamInfo", &[v(12040, "cuKernelGetParamInfo")]),
    ("cuFuncGetName", &[v(12030, "cuFuncGetName")]),
    ("cuFuncGetParamInfo", &[v(12040, "cuFuncGetParamInfo")]),
    ("cuFuncGetAttribute", &[v(2020, "cuFuncGetAttribute")]),
    ("cuFuncSetAttribute", &[v(9000, "cuFuncSetAttribute")]),
    ("cuKernelGetAttribute", &[v(12000, "cuKernelGetAttribute")]),
    ("cuKernelSetAttribute", &[v(12000, "cuKernelSetAttribute")]),
    (
        "cuDeviceGetDevResource",
        &[v(12040, "cuDeviceGetDevResource")],
    ),
    (
        "cuDevSmResourceSplitByCount",
        &[v(12040, "cuDevSmResourceSplitByCount")],
    ),
    (
        "cuDevResourceGenerateDesc",
        &[v(12040, "cuDevResourceGenerateDesc")],
    ),
    ("cuGreenCtxCreate", &[v(12040, "cuGreenCtxCreate")]),
    ("cuGreenCtxDestroy", &[v(12040, "cuGreenCtxDestroy")]),
    (
        "cuGreenCtxStreamCreate",
        &[v(12050, "cuGreenCtxStreamCreate")],
    ),
    (
        "cuLaunchKernel",
        &[pt(4000, "cuLaunchKernel", 7000, "cuLaunchKernel_ptsz")],
    ),
    (
        "cuLaunchKernelEx",
        &[pt(
            11060,
            "cuLaunchKernelEx",
            11060,
            "cuLaunchKernelEx_ptsz",
        )],
    ),
    (
        "cuLaunchCooperativeKernel",
        &[pt(
            9000,
            "cuLaunchCooperativeKernel",
            9000,
            "cuLaunchCooperativeKernel_ptsz",
        )],
    ),
    (
        "cuLaunchHostFunc",
        &[pt(
            10000,
            "cuLaunchHostFunc",
            10000,
            "cuLaunchHostFunc_ptsz",
        )],
    ),
    ("cuStreamCreate", &[v(2000, "cuStreamCreate")]),
    (
        "cuStreamCreateWithPriority",
        &[v(5050, "cuStreamCreateWithPriority")],
    ),
    (
        "cuStreamDestroy",
        &[v(2000, "cuStreamDestroy"), v(4000, "cuStreamDestroy_v2")],
    ),
    (
        "cuStreamSynchronize",
        &[pt(
            2000,
            "cuStreamSynchronize",
            7000,
            "cuStreamSynchronize_ptsz",
        )],
    ),
    (
        "cuStreamQuery",
        &[pt(2000, "cuStreamQuery", 7000, "cuStreamQuery_ptsz")],
    ),
    (
        "cuStreamWaitEvent",
        &[pt(
            3020,
            "cuStreamWaitEvent",
            7000,
            "cuStreamWaitEvent_ptsz",
        )],
    ),
    (
        "cuStreamGetPriority",
        &[pt(
            5050,
            "cuStreamGetPriority",
            7000,
            "cuStreamGetPriority_ptsz",
        )],
    ),
    (
        "cuStreamGetFlags",
        &[pt(5050, "cuStreamGetFlags", 7000, "cuStreamGetFlags_ptsz")],
    ),
    (
        "cuStreamGetCtx",
        &[
            pt(9020, "cuStreamGetCtx", 9020, "cuStreamGetCtx_ptsz"),
            pt(12050, "cuStreamGetCtx_v2", 12050, "cuStreamGetCtx_v2_ptsz"),
        ],
    ),
    (
        "cuStreamBeginCapture",
        &[
            pt(
                10000,
                "cuStreamBeginCapture",
                10000,
                "cuStreamBeginCapture_ptsz",
            ),
            pt(
                10010,
                "cuStreamBeginCapture_v2",
                10010,
                "cuStreamBeginCapture_v2_ptsz",
            ),
        ],
    ),
    (
        "cuStreamEndCapture",
        &[pt(
            10000,
            "cuStreamEndCapture",
            10000,
            "cuStreamEndCapture_ptsz",
        )],
    ),
    (
        "cuStreamIsCapturing",
        &[pt(
            10000,
            "cuStreamIsCapturing",
            10000,
            "cuStreamIsCapturing_ptsz",
        )],
    ),
    (
        "cuStreamGetCaptureInfo",
        &[
            pt(
                10010,
                "cuStreamGetCaptureInfo",
                10010,
                "cuStreamGetCaptureInfo_ptsz",
            ),
            pt(
                11030,
                "cuStreamGetCaptureInfo_v2",
                11030,
                "cuStreamGetCaptureInfo_v2_ptsz",
            ),
            pt(
                12030,
                "cuStreamGetCaptureInfo_v3",
                12030,
                "cuStreamGetCaptureInfo_v3_ptsz",
            ),
        ],
    ),
    (
        "cuStreamWaitValue32",
        &[
            pt(
                8000,
                "cuStreamWaitValue32",
                8000,
                "cuStreamWaitValue32_ptsz",
            ),
            pt(
                11070,
                "cuStreamWaitValue32_v2",
                11070,
                "cuStreamWaitValue32_v2_ptsz",
            ),
        ],
    ),
    (
        "cuStreamWriteValue32",
        &[
            pt(
                8000,
                "cuStreamWriteValue32",
                8000,
                "cuStreamWriteValue32_ptsz",
            ),
            pt(
                11070,
                "cuStreamWriteValue32_v2",
                11070,
                "cuStreamWriteValue32_v2_ptsz",
            ),
        ],
    ),
    ("cuEventCreate", &[v(2000, "cuEventCreate")]),
    (
        "cuEventRecord",
        &[pt(2000, "cuEventRecord", 7000, "cuEventRecord_ptsz")],
    ),
    (
        "cuEventRecordWithFlags",
        &[pt(
            11010,
            "cuEventRecordWithFlags",
            11010,
            "cuEventRecordWithFlags_ptsz",
        )],
    ),
    ("cuEventQuery", &[v(2000, "cuEventQuery")]),
    ("cuEventSynchronize", &[v(2000, "cuEventSynchronize")]),
    (
        "cuEventElapsedTime",
        &[
            v(2000, "cuEventElapsedTime"),
            v(12080, "cuEventElapsedTime_v2"),
        ],
    ),
    (
        "cuEventDestroy",
        &[v(2000, "cuEventDestroy"), v(4000, "cuEventDestroy_v2")],
    ),
    (
        "cuGraphInstantiate",
        &[
            v(10000, "cuGraphInstantiate"),
            v(11000, "cuGraphInstantiate_v2"),
            v(12000, "cuGraphInstantiateWithFlags"),
        ],
    ),
    (
        "cuGraphInstantiateWithFlags",
        &[v(11040, "cuGraphInstantiateWithFlags")],
    ),
    (
        "cuGraphLaunch",
        &[pt(10000, "cuGraphLaunch", 10000, "cuGraphLaunch_ptsz")],
    ),
    (
        "cuGraphUpload",
        &[pt(11010, "cuGraphUpload", 11010, "cuGraphUpload_ptsz")],
    ),
    ("cuGraphExecDestroy", &[v(10000, "cuGraphExecDestroy")]),
    ("cuGraphDestroy", &[v(10000, "cuGraphDestroy")]),
];
