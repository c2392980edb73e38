//! The built-in kernels a fake module image can name, and their parameter layouts.
//!
//! A kernel runs once over its whole range on the stream worker; grid and block dimensions are
//! validated at launch but do not change what it computes. Parameters are laid out as a C
//! compiler lays out the kernel's arguments (each at the next multiple of its alignment), which
//! is what `cuFuncGetParamInfo` reports and what a packed `extra` buffer must follow. A launch
//! may use all the device's SMs ([`device_sms`]), or only those of its green context (what
//! `baton_smid` reports).
//!
//! | kernel | parameters | effect |
//! | --- | --- | --- |
//! | `add_i32` | `int* data, int n, int value` | `data[i] += value` |
//! | `mul_i32` | `int* data, int n, int factor` | `data[i] *= factor` |
//! | `fill_i32` | `int* data, int n, int value` | `data[i] = value` |
//! | `copy_i32` | `int* dst, const int* src, int n` | `dst[i] = src[i]` |
//! | `spin_us` | `unsigned long long us` | takes `us` microseconds |
//! | `append_tag` | `int* log, int* counter, int tag` | `log[atomicAdd(counter, 1)] = tag` |
//! | `mixed` | `char a, double b, int* p, short c` | `p[0] = a; p[1] = (int)(b * 100); p[2] = c` |
//! | `baton_smid` | `unsigned* out, unsigned n, unsigned long long ns` | `out[i]` = the SM block `i` ran on, for `i < n`: `i` modulo the stream's SMs |
//! | `empty` | none | nothing |

use std::ffi::CStr;
use std::time::Duration;

use baton_cuda_sys::CUresult;
use serde_json::Value;

use crate::memory::MemoryTable;
use crate::result::CuResult;

/// The device's SMs unless `FAKE_CUDA_SMS` says otherwise: a launch runs on all of them unless
/// its stream is a green context's.
pub(crate) const DEVICE_SMS: u32 = 132;

/// The device's SMs: `FAKE_CUDA_SMS` (a whole number from 1), else [`DEVICE_SMS`]. Read once.
pub(crate) fn device_sms() -> u32 {
    static SMS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *SMS.get_or_init(|| {
        std::env::var("FAKE_CUDA_SMS")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|n| *n >= 1)
            .unwrap_or(DEVICE_SMS)
    })
}

/// The C type of one kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Param {
    I8,
    I16,
    I32,
    U64,
    F64,
    Ptr,
}

impl Param {
    /// Size and alignment in bytes (64-bit Linux ABI).
    const fn size(self) -> usize {
        match self {
            Param::I8 => 1,
            Param::I16 => 2,
            Param::I32 => 4,
            Param::U64 | Param::F64 | Param::Ptr => 8,
        }
    }
}

/// What a kernel does, given its decoded arguments and the memory table (read-locked). It
/// returns how long it takes beyond its memory work (slept with the table unlocked).
type Body = fn(&Args<'_>, &MemoryTable) -> CuResult<Duration>;

/// A built-in kernel.
pub(crate) struct KernelDef {
    pub name: &'static CStr,
    pub params: &'static [Param],
    pub body: Body,
}

impl KernelDef {
    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("?")
    }

    /// Offset and size of parameter `index`, as `cuFuncGetParamInfo` reports them.
    pub fn param_info(&self, index: usize) -> Option<(usize, usize)> {
        let mut offset: usize = 0;
        for (i, param) in self.params.iter().enumerate() {
            offset = offset.next_multiple_of(param.size());
            if i == index {
                return Some((offset, param.size()));
            }
            offset += param.size();
        }
        None
    }

    /// The size of the packed parameter buffer: the end of the last parameter.
    pub fn args_size(&self) -> usize {
        self.params
            .len()
            .checked_sub(1)
            .and_then(|last| self.param_info(last))
            .map_or(0, |(offset, size)| offset + size)
    }

    /// The arguments in a packed buffer, decoded by type, for the log.
    pub fn decode(&self, bytes: &[u8]) -> Vec<Value> {
        let args = Args::new(self, bytes);
        (0..self.params.len())
            .map(|i| match self.params[i] {
                Param::I8 | Param::I16 | Param::I32 => Value::from(args.int(i)),
                Param::U64 | Param::Ptr => Value::from(args.u64(i)),
                Param::F64 => Value::from(args.f64(i)),
            })
            .collect()
    }
}

/// A packed argument buffer of one launch, and the SMs the launch may use.
pub(crate) struct Args<'a> {
    def: &'a KernelDef,
    bytes: &'a [u8],
    sms: u32,
}

impl<'a> Args<'a> {
    /// The arguments of a launch on the whole device.
    pub fn new(def: &'a KernelDef, bytes: &'a [u8]) -> Self {
        Self {
            def,
            bytes,
            sms: device_sms(),
        }
    }

    /// The launch runs on `sms` SMs only (a green context's stream).
    pub fn on_sms(self, sms: Option<u32>) -> Self {
        Self {
            sms: sms.unwrap_or(self.sms),
            ..self
        }
    }

    fn raw<const N: usize>(&self, index: usize) -> [u8; N] {
        let mut out = [0; N];
        if let Some((offset, size)) = self.def.param_info(index) {
            let len = size.min(N);
            if let Some(src) = self.bytes.get(offset..offset + len) {
                out[..len].copy_from_slice(src);
            }
        }
        out
    }

    /// An integer parameter (`char`, `short` or `int`), sign-extended.
    fn int(&self, index: usize) -> i64 {
        match self.def.params[index] {
            Param::I8 => i64::from(i8::from_ne_bytes(self.raw::<1>(index))),
            Param::I16 => i64::from(i16::from_ne_bytes(self.raw::<2>(index))),
            _ => i64::from(i32::from_ne_bytes(self.raw::<4>(index))),
        }
    }

    fn i32(&self, index: usize) -> i32 {
        i32::from_ne_bytes(self.raw::<4>(index))
    }

    fn u64(&self, index: usize) -> u64 {
        u64::from_ne_bytes(self.raw::<8>(index))
    }

    fn f64(&self, index: usize) -> f64 {
        f64::from_ne_bytes(self.raw::<8>(index))
    }
}

/// `n` ints at `addr`, checked against the table.
fn ints(mem: &MemoryTable, addr: u64, n: i32) -> CuResult<(*mut i32, usize)> {
    let n = usize::try_from(n).unwrap_or(0);
    let ptr = mem.access(addr, n * 4, 4)?;
    Ok((ptr.cast::<i32>(), n))
}

fn elementwise(
    args: &Args<'_>,
    mem: &MemoryTable,
    f: impl Fn(i32, i32) -> i32,
) -> CuResult<Duration> {
    let (data, n) = ints(mem, args.u64(0), args.i32(1))?;
    let operand = args.i32(2);
    for i in 0..n {
        // SAFETY: `ints` checked that `n` ints at `data` lie in a live, aligned allocation, and
        // the caller holds the table's read lock, so no free can intervene.
        unsafe { data.add(i).write(f(data.add(i).read(), operand)) };
    }
    Ok(Duration::ZERO)
}

fn add_i32(args: &Args<'_>, mem: &MemoryTable) -> CuResult<Duration> {
    elementwise(args, mem, i32::wrapping_add)
}

fn mul_i32(args: &Args<'_>, mem: &MemoryTable) -> CuResult<Duration> {
    elementwise(args, mem, i32::wrapping_mul)
}

fn fill_i32(args: &Args<'_>, mem: &MemoryTable) -> CuResult<Duration> {
    elementwise(args, mem, |_, value| value)
}

fn copy_i32(args: &Args<'_>, mem: &MemoryTable) -> CuResult<Duration> {
    let n = args.i32(2);
    let (dst, len) = ints(mem, args.u64(0), n)?;
    let (src, _) = ints(mem, args.u64(1), n)?;
    // SAFETY: both ranges of `len` ints were checked against live allocations under the read
    // lock the caller holds; `copy` tolerates overlap.
    unsafe { std::ptr::copy(src, dst, len) };
    Ok(Duration::ZERO)
}

fn spin_us(args: &Args<'_>, _mem: &MemoryTable) -> CuResult<Duration> {
    Ok(Duration::from_micros(args.u64(0)))
}

/// Baton's PTX spin kernel: its argument in ns.
fn baton_spin(args: &Args<'_>, _mem: &MemoryTable) -> CuResult<Duration> {
    Ok(Duration::from_nanos(args.u64(0)))
}

/// Baton's PTX work kernel: its argument is a number of multiply-adds; here 1000 take 1 µs.
fn baton_work(args: &Args<'_>, _mem: &MemoryTable) -> CuResult<Duration> {
    Ok(Duration::from_nanos(args.u64(0)))
}

fn append_tag(args: &Args<'_>, mem: &MemoryTable) -> CuResult<Duration> {
    let (counter, _) = ints(mem, args.u64(1), 1)?;
    // The slot is taken atomically, as `atomicAdd` would on a GPU: kernels of two streams
    // appending to one log at the same time each get their own slot.
    // SAFETY: `counter` is one checked, aligned int under the caller's read lock; every access
    // to it while kernels run goes through this atomic view.
    let index = unsafe { std::sync::atomic::AtomicI32::from_ptr(counter) }
        .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    let slot = u64::try_from(index).map_err(|_| CUresult::ILLEGAL_ADDRESS)?;
    let (log, _) = ints(mem, args.u64(0).wrapping_add(slot * 4), 1)?;
    // SAFETY: `log` is a single checked int under the caller's read lock.
    unsafe { log.write(args.i32(2)) };
    Ok(Duration::ZERO)
}

#[allow(clippy::cast_possible_truncation)] // (int)(b * 100) truncates, as in C.
fn mixed(args: &Args<'_>, mem: &MemoryTable) -> CuResult<Duration> {
    let (out, _) = ints(mem, args.u64(2), 3)?;
    let values = [
        args.int(0) as i32,
        (args.f64(1) * 100.0) as i32,
        args.int(3) as i32,
    ];
    for (i, value) in values.into_iter().enumerate() {
        // SAFETY: three ints at `out` were checked under the caller's read lock.
        unsafe { out.add(i).write(value) };
    }
    Ok(Duration::ZERO)
}

/// Baton's PTX SM probe: block `i` reports SM `i` modulo the SMs the launch may use (the fake
/// runs every block at once, so each SM it has takes a block in turn).
fn baton_smid(args: &Args<'_>, mem: &MemoryTable) -> CuResult<Duration> {
    let (out, n) = ints(mem, args.u64(0), args.i32(1))?;
    for i in 0..n {
        let sm = i32::try_from(i % args.sms.max(1) as usize).unwrap_or(i32::MAX);
        // SAFETY: `ints` checked that `n` ints at `out` lie in a live allocation, under the
        // read lock the caller holds.
        unsafe { out.add(i).write(sm) };
    }
    Ok(Duration::from_nanos(args.u64(2)))
}

fn empty(_args: &Args<'_>, _mem: &MemoryTable) -> CuResult<Duration> {
    Ok(Duration::ZERO)
}

use Param::{F64, I8, I16, I32, Ptr, U64};

/// Every built-in kernel.
pub(crate) static BUILTINS: &[KernelDef] = &[
    KernelDef {
        name: c"add_i32",
        params: &[Ptr, I32, I32],
        body: add_i32,
    },
    KernelDef {
        name: c"mul_i32",
        params: &[Ptr, I32, I32],
        body: mul_i32,
    },
    KernelDef {
        name: c"fill_i32",
        params: &[Ptr, I32, I32],
        body: fill_i32,
    },
    KernelDef {
        name: c"copy_i32",
        params: &[Ptr, Ptr, I32],
        body: copy_i32,
    },
    KernelDef {
        name: c"spin_us",
        params: &[U64],
        body: spin_us,
    },
    KernelDef {
        name: c"baton_spin",
        params: &[U64],
        body: baton_spin,
    },
    KernelDef {
        name: c"baton_work",
        params: &[U64],
        body: baton_work,
    },
    KernelDef {
        name: c"append_tag",
        params: &[Ptr, Ptr, I32],
        body: append_tag,
    },
    KernelDef {
        name: c"mixed",
        params: &[I8, F64, Ptr, I16],
        body: mixed,
    },
    KernelDef {
        name: c"baton_smid",
        params: &[Ptr, I32, U64],
        body: baton_smid,
    },
    KernelDef {
        name: c"empty",
        params: &[],
        body: empty,
    },
];

/// The built-in kernel called `name`.
pub(crate) fn find(name: &str) -> Option<&'static KernelDef> {
    BUILTINS.iter().find(|def| def.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_params_follow_c_alignment() {
        let def = find("mixed").unwrap();
        let layout: Vec<_> = (0..4).map(|i| def.param_info(i).unwrap()).collect();
        assert_eq!(layout, [(0, 1), (8, 8), (16, 8), (24, 2)]);
        assert_eq!(def.param_info(4), None);
        assert_eq!(def.args_size(), 26);
    }

    #[test]
    fn three_int_kernels_pack_pointer_then_ints() {
        let def = find("append_tag").unwrap();
        assert_eq!(def.param_info(2), Some((16, 4)));
        assert_eq!(find("add_i32").unwrap().param_info(2), Some((12, 4)));
        assert_eq!(find("empty").unwrap().args_size(), 0);
    }

    #[test]
    fn decode_reads_each_type() {
        let def = find("mixed").unwrap();
        let mut bytes = vec![0u8; def.args_size()];
        bytes[0] = (-3i8).to_ne_bytes()[0];
        bytes[8..16].copy_from_slice(&2.5f64.to_ne_bytes());
        bytes[16..24].copy_from_slice(&0x1000u64.to_ne_bytes());
        bytes[24..26].copy_from_slice(&(-7i16).to_ne_bytes());
        let decoded = def.decode(&bytes);
        assert_eq!(
            decoded,
            vec![
                Value::from(-3),
                Value::from(2.5),
                Value::from(0x1000u64),
                Value::from(-7)
            ]
        );
    }
}
