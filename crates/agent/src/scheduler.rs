//! Who schedules a process's queues: a scheduler thread inside it, or the daemon.
//!
//! Backends (the CUDA interposer, …) hold one [`AgentScheduler`] and do not care which: they
//! give its [`sink`](AgentScheduler::sink) to their queues and register and unregister queues
//! with it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

use baton_core::{Clock, EventSink, Nanos, QueueControl, XQueueId};
use baton_policies::QueueHints;
use baton_protocol::{AgentTarget, DeviceRef, Hint, ProtocolError, QueueId, WirePriority};

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
    /// The SMs the queue's kernels keep to while outranked when it is held back as well
    /// (`BATON_YIELD_SMS` without `--yield` under MPS): told to the daemon as
    /// `Hint::ConfinedHeld`, for `baton list`; no policy reads it.
    pub confined_held: Option<u32>,
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
        priority: AtomicI32,
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
                    priority: AtomicI32::new(cfg.priority.get()),
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
                if reg.meta.hints.priority.get() != priority.load(Ordering::Relaxed) {
                    hints.push(Hint::Priority(WirePriority::from(reg.meta.hints.priority)));
                }
                if let Some(sms) = reg.meta.hints.confining {
                    hints.push(Hint::Confining { sms });
                }
                if let Some(sms) = reg.confined_held {
                    hints.push(Hint::ConfinedHeld { sms });
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

    /// Changes queue `id`'s hints: `local` runs on the scheduler's thread when the scheduler is
    /// in this process; `wire` goes to the daemon otherwise. Never runs a policy on the calling
    /// thread; refused only if the daemon would refuse `wire`.
    pub fn hint_queue(
        &self,
        id: XQueueId,
        local: impl FnOnce(&mut QueueHints, Nanos) + Send + 'static,
        wire: Hint,
    ) -> Result<(), ProtocolError> {
        match self {
            AgentScheduler::Local(t) => {
                t.post_hints(id, local);
                Ok(())
            }
            AgentScheduler::Global { client, .. } => {
                client.hint(AgentTarget::Queue(QueueId::from(id)), wire)
            }
        }
    }

    /// Gives the daemon a hint about the whole process (`Ok` and nothing sent when the
    /// scheduler is in this process, which holds only this process's queues: give each queue
    /// its hint instead). A priority also becomes the one new queues are compared with.
    pub fn hint_process(&self, wire: Hint) -> Result<(), ProtocolError> {
        match self {
            AgentScheduler::Local(_) => Ok(()),
            AgentScheduler::Global { client, priority } => {
                client.hint(AgentTarget::Process, wire)?;
                if let Hint::Priority(p) = wire {
                    priority.store(p.0, Ordering::Relaxed);
                }
                Ok(())
            }
        }
    }

    /// Whether a daemon schedules the process and is connected now (`None` when the
    /// scheduler is in this process).
    pub fn connected(&self) -> Option<bool> {
        match self {
            AgentScheduler::Local(_) => None,
            AgentScheduler::Global { client, .. } => Some(client.is_connected()),
        }
    }

    /// The frames exchanged with the daemon so far (`None` when the scheduler is in this
    /// process).
    pub fn traffic(&self) -> Option<crate::LinkTraffic> {
        match self {
            AgentScheduler::Local(_) => None,
            AgentScheduler::Global { client, .. } => Some(client.traffic()),
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
