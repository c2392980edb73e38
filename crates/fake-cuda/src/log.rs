//! The JSON-lines log that integration tests assert on (`FAKE_CUDA_LOG=<path>`).
//!
//! One line per event, appended with a single `write` to a file opened with `O_APPEND` and
//! never buffered, so a killed or forked process leaves every line it wrote readable (but for
//! the last one, cut short without its newline, when the process exits while another of its
//! threads is in the middle of writing it: readers drop such a final fragment). Each
//! line carries `seq`, a per-process sequence number assigned under the same lock as the
//! write (file order is `seq` order within a process), and `pid`. Timestamps are
//! `CLOCK_MONOTONIC` nanoseconds, comparable across processes of one boot.
//!
//! - `{"ev":"call","fn":SYMBOL,"pid","tid","seq","t_ns"}`: an exported symbol was entered.
//! - `{"ev":"procaddr","symbol","version","flags","result","resolved","pid","tid","seq"}`: what
//!   `cuGetProcAddress[_v2]` answered (`resolved` is the exported symbol handed out, or null).
//! - `{"ev":"exec","op","name","stream","ctx","legacy","ptds","cmd","args","start_ns","end_ns",
//!   "pid","seq"}` plus optional `graph`, `node`, `launch`, `error`: a command finished
//!   executing on a stream worker (see [`Exec`]).
//!
//! The process's [`Log`] is part of the machine state (`machine.rs`); this module knows only
//! the format.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;

use crate::process::{current_pid, current_tid};
use crate::sync::lock;

/// The open log file and the next sequence number.
pub(crate) struct Log {
    inner: Mutex<(File, u64)>,
}

impl Log {
    /// Opens `path` for appending; `None` if it cannot be opened (the fake then logs nothing).
    pub fn open(path: &Path) -> Option<Log> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ok()?;
        Some(Log {
            inner: Mutex::new((file, 0)),
        })
    }

    /// Writes one line built by `line` from the sequence number.
    fn emit(&self, line: impl FnOnce(u64) -> Option<String>) {
        let mut inner = lock(&self.inner);
        let seq = inner.1;
        inner.1 += 1;
        if let Some(mut text) = line(seq) {
            text.push('\n');
            // A failed write loses one line; there is nobody to report it to.
            let _ = inner.0.write_all(text.as_bytes());
        }
    }
}

/// Monotonic time in nanoseconds (`CLOCK_MONOTONIC`).
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs * 1_000_000_000 + nanos
}

#[derive(Serialize)]
struct Call<'a> {
    ev: &'static str,
    #[serde(rename = "fn")]
    symbol: &'a str,
    pid: u32,
    tid: u32,
    seq: u64,
    t_ns: u64,
}

#[derive(Serialize)]
struct ProcAddr<'a> {
    ev: &'static str,
    symbol: &'a str,
    version: i32,
    flags: u64,
    result: &'static str,
    resolved: Option<&'a str>,
    pid: u32,
    tid: u32,
    seq: u64,
}

/// One executed command, as logged.
#[derive(Serialize)]
pub(crate) struct Exec {
    /// `kernel`, `memcpy`, `memset`, `host_func`, `event_record`, `event_wait`, `graph`,
    /// `graph_upload`, `wait_value`, `write_value`, `mem_alloc` or `mem_free`.
    pub op: &'static str,
    /// The kernel name, the copy direction (`HtoD`, `DtoH`, `DtoD`, `HtoH`), or `op` again.
    pub name: String,
    /// The stream's short id (unique in the process).
    pub stream: u64,
    /// The context's short id.
    pub ctx: u64,
    /// The physical device the context is on (its number on the machine, whatever ordinal
    /// `CUDA_VISIBLE_DEVICES` gives it in the process).
    pub device: u32,
    /// On a green context's stream: the SMs it runs on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sms: Option<u32>,
    /// Whether the stream is the legacy default stream.
    pub legacy: bool,
    /// Whether the stream is a per-thread default stream.
    pub ptds: bool,
    /// The command's index on its stream (0, 1, 2, … in submission order).
    pub cmd: u64,
    /// Operation arguments (kernel parameters decoded by type; addresses, sizes, ids).
    pub args: Vec<Value>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// For a node of a launched graph: the executable graph's short id, and the node index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<usize>,
    /// For kernels: grid, block, shared memory, cooperative flag and launch attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub launch: Option<Value>,
    /// The error the command raised (`CUDA_ERROR_ILLEGAL_ADDRESS`, …), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'static str>,
}

#[derive(Serialize)]
struct ExecLine<'a> {
    ev: &'static str,
    #[serde(flatten)]
    exec: &'a Exec,
    pid: u32,
    seq: u64,
}

impl Log {
    /// Logs that the exported `symbol` was entered.
    pub fn call(&self, symbol: &str) {
        let (pid, tid, t_ns) = (current_pid(), current_tid(), now_ns());
        self.emit(|seq| {
            serde_json::to_string(&Call {
                ev: "call",
                symbol,
                pid,
                tid,
                seq,
                t_ns,
            })
            .ok()
        });
    }

    /// Logs what `cuGetProcAddress` answered for `symbol`.
    pub fn proc_address(
        &self,
        symbol: &str,
        version: i32,
        flags: u64,
        result: &'static str,
        resolved: Option<&str>,
    ) {
        let (pid, tid) = (current_pid(), current_tid());
        self.emit(|seq| {
            let record = ProcAddr {
                ev: "procaddr",
                symbol,
                version,
                flags,
                result,
                resolved,
                pid,
                tid,
                seq,
            };
            serde_json::to_string(&record).ok()
        });
    }

    /// Logs an executed command.
    pub fn exec(&self, exec: &Exec) {
        let pid = current_pid();
        self.emit(|seq| {
            serde_json::to_string(&ExecLine {
                ev: "exec",
                exec,
                pid,
                seq,
            })
            .ok()
        });
    }
}
