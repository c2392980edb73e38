//! Operations a stream executes, the graphs they form, and their execution on the stream's
//! worker thread.
//!
//! Every executed operation, graph nodes included, is logged with its start and end times
//! once it has finished (see [`crate::log::Exec`]). Device-side accesses are validated under
//! the memory table's read lock (see [`crate::memory`]); a failed access becomes the context's
//! sticky error, and once a context has one its later operations are skipped and logged with
//! that error, as on a GPU whose context was corrupted.
//!
//! A graph is what a stream capture recorded; instantiated, it is a [`GraphExec`] that a
//! `cuGraphLaunch` runs as one command ([`Op::Graph`]), node after node, on the launching
//! stream. Execution knows the stream's context and a recorded event only through the traits
//! [`ExecContext`] and [`RecordedEvent`], which contexts' streams and events implement.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use baton_cuda_sys::{
    CU_STREAM_WAIT_VALUE_AND, CU_STREAM_WAIT_VALUE_EQ, CU_STREAM_WAIT_VALUE_GEQ,
    CU_STREAM_WAIT_VALUE_NOR, CUresult,
};
use serde_json::{Value, json};

use crate::handle::Handle;
use crate::kernels::{Args, KernelDef};
use crate::log::{Exec, now_ns};
use crate::machine::machine;
use crate::memory::{AllocKind, MemoryTable, host_ptr};
use crate::result::CuResult;
use crate::sync::lock;

/// A kernel launch with its arguments copied at launch time.
#[derive(Clone)]
pub(crate) struct KernelLaunch {
    pub def: &'static KernelDef,
    /// The packed parameter buffer (layout of [`KernelDef::param_info`]).
    pub args: Vec<u8>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub cooperative: bool,
    /// Launch attributes: id and the first 16 bytes of the value, as four words.
    pub attrs: Vec<(u32, [u32; 4])>,
}

/// Where a copy reads from.
#[derive(Clone)]
pub(crate) enum Source {
    /// Memory read when the copy executes.
    Addr(u64),
    /// Pageable host memory, copied into a staging buffer when the copy was submitted.
    Staged { addr: u64, bytes: Arc<[u8]> },
}

/// One operation of a stream or a graph.
#[derive(Clone)]
pub(crate) enum Op {
    Kernel(Box<KernelLaunch>),
    /// `dst_device`/`src_device`: whether that side is memory of the table (checked again
    /// when the copy executes); the other side is host memory valid for the copy.
    Memcpy {
        dst: u64,
        src: Source,
        bytes: usize,
        dir: &'static str,
        dst_device: bool,
        src_device: bool,
    },
    Memset {
        dst: u64,
        value: u32,
        elem: usize,
        count: usize,
    },
    HostFunc {
        func: unsafe extern "C" fn(*mut c_void),
        data: usize,
    },
    EventRecord {
        event: Arc<dyn RecordedEvent>,
        generation: u64,
    },
    EventWait {
        event: u64,
    },
    Graph(Arc<GraphExec>),
    GraphUpload {
        exec: u64,
    },
    WaitValue {
        addr: u64,
        value: u32,
        flags: u32,
    },
    WriteValue {
        addr: u64,
        value: u32,
        flags: u32,
    },
    MemAlloc {
        ptr: u64,
        size: usize,
    },
    MemFree {
        ptr: u64,
    },
}

/// A graph under construction (by capture) or finished.
pub(crate) struct Graph {
    pub handle: Handle,
    nodes: Mutex<Vec<Op>>,
}

impl Graph {
    pub fn new(handle: Handle) -> Arc<Graph> {
        Arc::new(Graph {
            handle,
            nodes: Mutex::new(Vec::new()),
        })
    }

    /// Appends a node; its index.
    pub fn push(&self, op: Op) -> usize {
        let mut nodes = lock(&self.nodes);
        nodes.push(op);
        nodes.len() - 1
    }

    /// A copy of the nodes so far.
    pub fn nodes(&self) -> Vec<Op> {
        lock(&self.nodes).clone()
    }
}

/// An instantiated graph: a snapshot of the graph's nodes.
pub(crate) struct GraphExec {
    pub handle: Handle,
    pub nodes: Vec<Op>,
}

/// An event as an `event_record` command sees it (implemented by events).
pub(crate) trait RecordedEvent: Send + Sync {
    /// The event's short id, for the log.
    fn short(&self) -> u64;
    /// Called by the worker executing record `generation`, at `time_ns`.
    fn complete(&self, generation: u64, time_ns: u64);
}

/// The context of the stream an operation executes on, as execution sees it (implemented by
/// the state a context's streams share).
pub(crate) trait ExecContext {
    /// The context's short id, for the log.
    fn short(&self) -> u64;
    /// The physical device the context is on, for the log.
    fn device(&self) -> u32;
    /// The context's sticky error, if it has one.
    fn sticky(&self) -> CuResult<()>;
    /// Records an error that makes the context unusable.
    fn set_sticky(&self, code: CUresult);
}

/// The stream an operation executes on, as the log describes it.
#[derive(Clone, Copy)]
pub(crate) struct StreamInfo {
    /// The stream's short id.
    pub short: u64,
    /// On a green context's stream: the SMs it runs on.
    pub sms: Option<u32>,
    /// Whether the stream is the legacy default stream.
    pub legacy: bool,
    /// Whether the stream is a per-thread default stream.
    pub ptds: bool,
}

/// Where an operation executes: its stream and command, and its graph node if it is one.
struct Site<'a, C> {
    /// The stream's context; gone once the context is destroyed.
    ctx: &'a Weak<C>,
    stream: StreamInfo,
    cmd: u64,
    graph: Option<u64>,
    node: Option<usize>,
}

/// Executes command `cmd` (its index on its stream) of the stream `stream` of `ctx`, and logs
/// it.
pub(crate) fn run_command<C: ExecContext>(op: &Op, ctx: &Weak<C>, stream: StreamInfo, cmd: u64) {
    execute(
        op,
        &Site {
            ctx,
            stream,
            cmd,
            graph: None,
            node: None,
        },
    );
}

fn execute<C: ExecContext>(op: &Op, site: &Site<'_, C>) {
    let ctx = site.ctx.upgrade();
    let start_ns = now_ns();
    let result = match ctx.as_ref().map(|ctx| ctx.sticky()) {
        Some(Ok(())) => perform(op, site),
        Some(Err(code)) => Err(code),
        None => Err(CUresult::INVALID_CONTEXT),
    };
    let end_ns = now_ns();
    if let (Err(code), Some(ctx)) = (result, &ctx) {
        if code == CUresult::ILLEGAL_ADDRESS || code == CUresult::MISALIGNED_ADDRESS {
            ctx.set_sticky(code);
        }
    }
    let (name, args, launch) = describe(op);
    let exec = Exec {
        op: label(op),
        name,
        stream: site.stream.short,
        ctx: ctx.as_ref().map_or(0, |ctx| ctx.short()),
        device: ctx.map_or(0, |ctx| ctx.device()),
        sms: site.stream.sms,
        legacy: site.stream.legacy,
        ptds: site.stream.ptds,
        cmd: site.cmd,
        args,
        start_ns,
        end_ns,
        graph: site.graph,
        node: site.node,
        launch,
        error: result
            .err()
            .map(|code| code.name().unwrap_or("CUDA_ERROR_UNKNOWN")),
    };
    if let Some(log) = &machine().log {
        log.exec(&exec);
    }
}

fn memory() -> std::sync::RwLockReadGuard<'static, MemoryTable> {
    baton_core::locks::read(&machine().memory)
}

fn perform<C: ExecContext>(op: &Op, site: &Site<'_, C>) -> CuResult<()> {
    match op {
        Op::Kernel(launch) => {
            let extra = {
                let mem = memory();
                (launch.def.body)(
                    &Args::new(launch.def, &launch.args).on_sms(site.stream.sms),
                    &mem,
                )?
            };
            let total = extra + machine().kernel_extra;
            if !total.is_zero() {
                std::thread::sleep(total);
            }
            Ok(())
        }
        Op::Memcpy {
            dst,
            src,
            bytes,
            dst_device,
            src_device,
            ..
        } => {
            let mem = memory();
            let dst = if *dst_device {
                mem.access(*dst, *bytes, 1)?
            } else {
                host_ptr(*dst)
            };
            let src = match src {
                Source::Addr(addr) if *src_device => mem.access(*addr, *bytes, 1)?.cast_const(),
                Source::Addr(addr) => host_ptr(*addr).cast_const(),
                Source::Staged { bytes, .. } => bytes.as_ptr(),
            };
            // SAFETY: device sides were checked against live allocations under the read lock
            // held here; host sides are pinned memory, a staging buffer, or memory the
            // submitting call keeps valid by waiting for this copy. `copy` allows overlap.
            unsafe { std::ptr::copy(src, dst, *bytes) };
            Ok(())
        }
        Op::Memset {
            dst,
            value,
            elem,
            count,
        } => {
            let mem = memory();
            let len = elem.checked_mul(*count).ok_or(CUresult::INVALID_VALUE)?;
            let ptr = mem.access(*dst, len, *elem)?;
            for i in 0..*count {
                // SAFETY: `count` elements of `elem` bytes at `ptr` were checked (aligned) under
                // the read lock held here.
                unsafe {
                    match elem {
                        1 => ptr.add(i).write(u8::try_from(*value & 0xff).unwrap_or(0)),
                        2 => ptr
                            .cast::<u16>()
                            .add(i)
                            .write(u16::try_from(*value & 0xffff).unwrap_or(0)),
                        _ => ptr.cast::<u32>().add(i).write(*value),
                    }
                }
            }
            Ok(())
        }
        Op::HostFunc { func, data } => {
            // SAFETY: the application passed this function and argument to cuLaunchHostFunc,
            // promising the function may be called with it once the stream reaches it.
            unsafe { func(std::ptr::with_exposed_provenance_mut(*data)) };
            Ok(())
        }
        Op::EventRecord { event, generation } => {
            event.complete(*generation, now_ns());
            Ok(())
        }
        Op::EventWait { .. } | Op::GraphUpload { .. } | Op::MemAlloc { .. } => Ok(()),
        Op::Graph(exec) => {
            for (index, node) in exec.nodes.iter().enumerate() {
                let node_site = Site {
                    ctx: site.ctx,
                    stream: site.stream,
                    cmd: site.cmd,
                    graph: Some(exec.handle.short),
                    node: Some(index),
                };
                execute(node, &node_site);
            }
            Ok(())
        }
        Op::WaitValue { addr, value, flags } => wait_value(*addr, *value, *flags),
        Op::WriteValue { addr, value, .. } => {
            let mem = memory();
            let ptr = mem.access(*addr, 4, 4)?;
            // SAFETY: `ptr` is a checked, 4-byte aligned word of a live allocation; other parties
            // (host threads, other streams) access such flag words atomically too.
            unsafe { AtomicU32::from_ptr(ptr.cast()).store(*value, Ordering::Release) };
            Ok(())
        }
        Op::MemFree { ptr } => baton_core::locks::write(&machine().memory)
            .free(*ptr, &[AllocKind::Device, AllocKind::Device32])
            .map_err(|_| CUresult::ILLEGAL_ADDRESS),
    }
}

/// Whether `current` satisfies a `cuStreamWaitValue32` condition.
pub(crate) fn value_satisfied(current: u32, value: u32, flags: u32) -> bool {
    match flags & 0xf {
        CU_STREAM_WAIT_VALUE_GEQ => (current.wrapping_sub(value) as i32) >= 0,
        CU_STREAM_WAIT_VALUE_EQ => current == value,
        CU_STREAM_WAIT_VALUE_AND => current & value != 0,
        CU_STREAM_WAIT_VALUE_NOR => !(current | value) != 0,
        _ => false,
    }
}

/// Polls a memory word, as a GPU front-end does, until the condition holds.
fn wait_value(addr: u64, value: u32, flags: u32) -> CuResult<()> {
    let mut pause = Duration::from_micros(1);
    loop {
        let current = {
            let mem = memory();
            let ptr = mem.access(addr, 4, 4)?;
            // SAFETY: as for WriteValue: a checked, aligned word read atomically.
            unsafe { AtomicU32::from_ptr(ptr.cast()).load(Ordering::Acquire) }
        };
        if value_satisfied(current, value, flags) {
            return Ok(());
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_micros(200));
    }
}

fn label(op: &Op) -> &'static str {
    match op {
        Op::Kernel(_) => "kernel",
        Op::Memcpy { .. } => "memcpy",
        Op::Memset { .. } => "memset",
        Op::HostFunc { .. } => "host_func",
        Op::EventRecord { .. } => "event_record",
        Op::EventWait { .. } => "event_wait",
        Op::Graph(_) => "graph",
        Op::GraphUpload { .. } => "graph_upload",
        Op::WaitValue { .. } => "wait_value",
        Op::WriteValue { .. } => "write_value",
        Op::MemAlloc { .. } => "mem_alloc",
        Op::MemFree { .. } => "mem_free",
    }
}

/// The logged name, arguments and launch details of `op`.
fn describe(op: &Op) -> (String, Vec<Value>, Option<Value>) {
    let name = label(op).to_owned();
    match op {
        Op::Kernel(launch) => {
            let attrs: Vec<Value> = launch
                .attrs
                .iter()
                .map(|(id, words)| json!({"id": id, "words": words}))
                .collect();
            let details = json!({
                "grid": launch.grid,
                "block": launch.block,
                "shared": launch.shared,
                "cooperative": launch.cooperative,
                "attrs": attrs,
            });
            (
                launch.def.name().to_owned(),
                launch.def.decode(&launch.args),
                Some(details),
            )
        }
        Op::Memcpy {
            dst,
            src,
            bytes,
            dir,
            ..
        } => {
            let src = match src {
                Source::Addr(addr) | Source::Staged { addr, .. } => *addr,
            };
            (
                (*dir).to_owned(),
                vec![json!(dst), json!(src), json!(bytes)],
                None,
            )
        }
        Op::Memset {
            dst,
            value,
            elem,
            count,
        } => (
            name,
            vec![json!(dst), json!(value), json!(elem), json!(count)],
            None,
        ),
        Op::HostFunc { func, data } => (name, vec![json!(*func as usize), json!(data)], None),
        Op::EventRecord { event, .. } => (name, vec![json!(event.short())], None),
        Op::EventWait { event } => (name, vec![json!(event)], None),
        Op::Graph(exec) => (
            name,
            vec![json!(exec.handle.short), json!(exec.nodes.len())],
            None,
        ),
        Op::GraphUpload { exec } => (name, vec![json!(exec)], None),
        Op::WaitValue { addr, value, flags } | Op::WriteValue { addr, value, flags } => {
            (name, vec![json!(addr), json!(value), json!(flags)], None)
        }
        Op::MemAlloc { ptr, size } => (name, vec![json!(ptr), json!(size)], None),
        Op::MemFree { ptr } => (name, vec![json!(ptr)], None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_conditions_match_cuda_h() {
        assert!(value_satisfied(5, 5, CU_STREAM_WAIT_VALUE_GEQ));
        assert!(value_satisfied(6, 5, CU_STREAM_WAIT_VALUE_GEQ));
        assert!(!value_satisfied(4, 5, CU_STREAM_WAIT_VALUE_GEQ));
        // GEQ compares cyclically: 0 is "after" 0xffff_ffff.
        assert!(value_satisfied(0, u32::MAX, CU_STREAM_WAIT_VALUE_GEQ));
        assert!(value_satisfied(7, 7, CU_STREAM_WAIT_VALUE_EQ));
        assert!(!value_satisfied(8, 7, CU_STREAM_WAIT_VALUE_EQ));
        assert!(value_satisfied(0b110, 0b010, CU_STREAM_WAIT_VALUE_AND));
        assert!(!value_satisfied(0b100, 0b010, CU_STREAM_WAIT_VALUE_AND));
        assert!(value_satisfied(0, 0, CU_STREAM_WAIT_VALUE_NOR));
        assert!(!value_satisfied(u32::MAX, 0, CU_STREAM_WAIT_VALUE_NOR));
    }
}
