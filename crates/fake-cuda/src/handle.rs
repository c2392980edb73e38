//! Handles: the values the fake hands to the application for its objects.
//!
//! A handle embeds its kind and the pid of the process that made it, so that handles of another
//! process, a forked parent included, are unknown (see [`Handle`]).

/// The kind of object a handle names; its value is the handle's top byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Context = 1,
    Stream = 2,
    Event = 3,
    Module = 4,
    Library = 5,
    Function = 6,
    Kernel = 7,
    Graph = 8,
    GraphExec = 9,
    Node = 10,
    GreenCtx = 11,
}

/// A handle value given to the application, and the short id the log uses for it.
///
/// `raw` is `kind << 56 | pid << 24 | short`: distinct per kind, never 0, 1 or 2 (the special
/// stream handles), and unknown in any other process, a forked child included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Handle {
    pub raw: u64,
    pub short: u64,
}

impl Handle {
    /// The handle of `kind` with short id `short` (24 bits) in process `pid`.
    pub fn new(kind: Kind, pid: u32, short: u64) -> Handle {
        let raw = (kind as u64) << 56 | u64::from(pid) << 24 | short;
        Handle { raw, short }
    }
}

/// A handle value as the pointer the application sees.
#[allow(clippy::cast_possible_truncation)] // usize is 64 bits: see lib.rs.
pub(crate) fn to_ptr<T>(raw: u64) -> *mut T {
    std::ptr::without_provenance_mut(raw as usize)
}

/// The value of a handle the application passed.
pub(crate) fn raw_of<T>(handle: *mut T) -> u64 {
    handle.addr() as u64
}
