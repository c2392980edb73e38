//! Why a daemon could not start or run.

use std::net::SocketAddr;
use std::path::PathBuf;

/// A daemon failed to start or stopped on an error.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Another daemon holds the socket's lock.
    #[error(
        "a Baton daemon is already running on {socket}: use it (`baton list`), or stop it with \
         `baton daemon --stop --socket {socket}` before starting another"
    )]
    AlreadyRunning {
        /// The socket it serves.
        socket: PathBuf,
    },
    /// The daemon's MPS server (`--mps-server`) could not be started.
    #[error("the daemon's MPS server: {0}")]
    Mps(#[from] crate::mps::MpsError),
    /// The socket could not be created.
    #[error(
        "cannot listen on {path}: {source}; choose another path with --socket, or check the \
         directory's permissions"
    )]
    Socket {
        /// The socket (or its directory or lock file).
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The socket's directory could be used by other users.
    #[error(
        "refusing to use {dir}: {why}; remove it (or fix its owner and mode) so the daemon can \
         create it afresh with mode 0700"
    )]
    UnsafeDirectory {
        /// The directory.
        dir: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// The policy asked for does not exist.
    #[error("{0}; see `baton policy list`")]
    UnknownPolicy(#[from] baton_policies::UnknownPolicy),
    /// The group of a system daemon does not exist.
    #[error("unknown group {0:?}: create it (`groupadd {0}`) or name another with --group")]
    UnknownGroup(String),
    /// The metrics endpoint could not be opened.
    #[error("cannot serve metrics on {addr}: {source}; choose another address with --metrics")]
    Metrics {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's error.
        source: std::io::Error,
    },
    /// The metrics address is not a loopback one: the daemon opens no network listener.
    #[error(
        "refusing to serve metrics on {addr}: only a loopback address (127.0.0.1, ::1) may be \
         given to --metrics; reach it from elsewhere through a proxy or an SSH tunnel"
    )]
    MetricsNotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// A setting is out of range.
    #[error("{0}")]
    BadSetting(String),
    /// The async runtime failed.
    #[error("the daemon's runtime failed: {0}")]
    Runtime(#[source] std::io::Error),
}
