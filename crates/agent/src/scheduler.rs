//! Who schedules a process's queues: a scheduler thread inside it, or the daemon.
//!
//! Backends (the CUDA interposer, …) hold one [`AgentScheduler`] and do not care which: they
//! give its [`sink`](AgentScheduler::sink) to their queues and register and unregister queues
//! with it.

use std::sync::Arc;

use baton_core::{Clock, EventSink, Nanos, Priority, QueueControl, XQueueId};
use baton_protocol::{DeviceRef, Hint, WirePriority};

use baton_scheduler::{LocalScheduler, QueueMeta, SchedulerThread};

use crate::{AgentConfig, ClientConfig, DaemonClient, QueueInfo, SchedulerMode};

/// What a backend knows about a new queue.
#[derive(Clone, Debug)]
pub struct Registration {
    /// The scheduler's view: process, device number, initial hints.
    pub meta: QueueMeta,
    /// A short description for `baton list`.
    pub label: String,
    /// The device, with its machine-wide identity (for the daemon).
    pub device: DeviceRef,
}

/// The scheduler a process's settings ask for could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// `BATON_POLICY` names no policy.
    #[error(transparent)]
    UnknownPolicy(#[from] baton_policies::UnknownPolicy),
    /// The scheduler's thread could not be created.
    #[error("cannot start the {what} thread: {source}")]
    Thread {
        /// Which thread.
        what: &'static str,
        /// Why the system refused.
        source: std::io::Error,
    },
}

/// The scheduler a process's settings ask for.
pub enum AgentScheduler {
    /// A policy on a thread of this process (`BATON_SCHEDULER=local`).
    Local(SchedulerThread),
    /// The daemon (`BATON_SCHEDULER=global`).
    Global {
        /// The link to the daemon.
        client: DaemonClient,
        /// The process's own priority: a queue whose priority differs says so in a hint.
        priority: Priority,
    },
}

impl AgentScheduler {
    /// Starts the scheduler `cfg` asks for; `None` when the application schedules its queues
    /// itself (`app`) or Baton is disabled.
    pub fn start(cfg: &AgentConfig, clock: Arc<dyn Clock>) -> Result<Option<Self>, StartError> {
        if !cfg.enabled {
            return Ok(None);
        }
        match cfg.scheduler {
            SchedulerMode::App => Ok(None),
            SchedulerMode::Local => {
                let policy = baton_policies::by_name(&cfg.policy)?;
                let t = SchedulerThread::start(LocalScheduler::new(policy), clock).map_err(
                    |source| StartError::Thread {
                        what: "scheduler",
                        source,
                    },
                )?;
                Ok(Some(AgentScheduler::Local(t)))
            }
            SchedulerMode::Global => {
                let client = DaemonClient::start(ClientConfig::from_agent_config(cfg, clock))
                    .map_err(|source| StartError::Thread {
                        what: "daemon link",
                        source,
                    })?;
                Ok(Some(AgentScheduler::Global {
                    client,
                    priority: cfg.priority,
                }))
            }
        }
    }

    /// Where queues report their events.
    pub fn sink(&self) -> Arc<dyn EventSink> {
        match self {
            AgentScheduler::Local(t) => t.inbox(),
            AgentScheduler::Global { client, .. } => client.sink(),
        }
    }

    /// Starts scheduling `ctl`.
    pub fn register(&self, ctl: Arc<dyn QueueControl>, reg: Registration, now: Nanos) {
        match self {
            AgentScheduler::Local(t) => t.lock().register(ctl, reg.meta, now),
            AgentScheduler::Global { client, priority } => {
                let mut hints = Vec::new();
                if reg.meta.hints.priority != *priority {
                    hints.push(Hint::Priority(WirePriority::from(reg.meta.hints.priority)));
                }
                client.register(
                    ctl,
                    QueueInfo {
                        label: reg.label,
                        device: reg.device,
                        hints,
                    },
                );
            }
        }
    }

    /// Stops scheduling `id`; a suspended queue is resumed first.
    pub fn unregister(&self, id: XQueueId, now: Nanos) {
        match self {
            AgentScheduler::Local(t) => {
                let _ = t.lock().unregister(id, now);
            }
            AgentScheduler::Global { client, .. } => client.unregister(id),
        }
    }

    /// In a forked child (async-signal-safe): lets go of what the parent owned outside memory
    /// (the daemon connection).
    pub fn forget_in_child(&self) {
        if let AgentScheduler::Global { client, .. } = self {
            client.forget_in_child();
        }
    }
}
