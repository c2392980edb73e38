//! The Baton daemon: one scheduler for every process on the machine.
//!
//! Agents (the runtime inside each scheduled application) connect over a Unix socket,
//! announce their queues and report when each becomes ready or idle; the daemon runs a
//! [`Policy`](baton_policies::Policy) over all of them and sends each agent only the
//! operations that change its queues. The CLI connects to the same socket to list, steer and
//! trace. The moving parts:
//!
//! - [`Daemon`] binds the socket (per-user 0600, or `--system` 0660 group-restricted) and
//!   runs: an accept loop, one reader and one writer task per connection, and the
//!   **core** task, which alone owns the scheduling state and handles every connection's
//!   messages in order (`core`, fed by `event`). Everything runs on one tokio thread: the
//!   decision path has no lock and no cross-thread hand-off. The core itself is plain state
//!   with an injected clock, so its tests run in virtual time.
//! - The scheduling itself is `baton_scheduler::LocalScheduler`, the same code that schedules
//!   inside a process, run over one `proxy::RemoteQueue` per remote queue: its suspend and
//!   resume become [`Operations`](baton_protocol::Operations) for the queue's agent, batched so
//!   each agent gets at most one frame per decision round, naming only changed queues.
//! - Client death is seen twice over: the connection closing (end of file) and the process
//!   exiting (a pidfd); either frees the client's queues at once.
//! - `auth` decides who may change what: the peer's uid comes from `SO_PEERCRED`, never from
//!   a message.
//! - `metrics` serves Prometheus `/metrics` and a JSON status on an explicit loopback address
//!   (`--metrics`), the only listener besides the Unix socket.
//!
//! **Architecture invariant:** no network listener except the explicit metrics endpoint; no
//! identity taken from message contents; a bad frame from one client never affects another.

mod auth;
mod cluster;
mod config;
mod conn;
mod core;
mod error;
mod event;
mod hints;
mod latency;
mod listen;
mod metrics;
mod mps;
mod peer;
mod proxy;
mod server;
mod service;
mod timer;
mod trace;

pub use cluster::{KubernetesConfig, SlurmConfig};
pub use config::{
    DEFAULT_LEASE, DEFAULT_LINGER, DEFAULT_STALL, DEFAULT_STATS_INTERVAL_MS, DaemonConfig, GangMode,
};
pub use error::DaemonError;
pub use mps::{HEALTH_EVERY, MPS_CONTROL, MpsDirs, MpsError, MpsServer, find_control};
pub use server::Daemon;
