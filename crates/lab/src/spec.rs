//! What a lab run consists of: the device, the policy, the clients and their workloads, and
//! actions at given times.

use std::collections::BTreeMap;

use baton_core::{LaunchConfig, Level, Nanos};
use baton_demo::SpanRange;
use baton_policies::{GlobalHint, Hint, Policy, ProcessHint};
use baton_scheduler::ProcessFacts;
use baton_sim::SimConfig;

/// Announced work: a pre-preemption hint sent `lead` before each release, lapsing `grace`
/// after the expected arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Announce {
    /// How far ahead.
    pub lead: Nanos,
    /// How long after the expected arrival it holds.
    pub grace: Nanos,
}

/// What a client submits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Open loop: a job of `kernels` kernels released every `period` from `offset` (a late job
    /// queues behind the previous one).
    Periodic {
        /// Time between releases.
        period: Nanos,
        /// The first release.
        offset: Nanos,
        /// Kernels per job.
        kernels: u32,
        /// Each kernel's duration.
        kernel: SpanRange,
        /// SMs each kernel asks for.
        sms: u32,
        /// Announce each job ahead of time.
        announce: Option<Announce>,
    },
    /// Closed loop: a job of `kernels` kernels; the next is released `think` after it completes.
    ClosedLoop {
        /// Kernels per job.
        kernels: u32,
        /// Each kernel's duration.
        kernel: SpanRange,
        /// SMs each kernel asks for.
        sms: u32,
        /// Pause between a job's completion and the next release.
        think: Nanos,
    },
    /// Closed loop, launch-bound: a job's `kernels` kernels are launched one at a time, `gap`
    /// of host time apart (an LLM decoder's token, small-batch inference: the host, not the
    /// device, sets the pace); the next job is released `think` after one completes.
    Paced {
        /// Kernels per job.
        kernels: u32,
        /// Each kernel's duration.
        kernel: SpanRange,
        /// SMs each kernel asks for.
        sms: u32,
        /// Host time between two launches of a job.
        gap: Nanos,
        /// Pause between a job's completion and the next release.
        think: Nanos,
    },
    /// One rank of a distributed job: each step is a job of `kernels` kernels, after which the
    /// rank waits at a barrier for every rank of `group` (the clients naming the same group)
    /// before the next step, as data-parallel ranks meet in a collective. While it waits it
    /// keeps one `spin` kernel at a time on its device, as a collective's kernel busy-waits
    /// for its peers; that device time is the rank's *spin*, reported apart from its work.
    Ranked {
        /// The job the rank belongs to.
        group: u32,
        /// Kernels per step.
        kernels: u32,
        /// Each kernel's duration.
        kernel: SpanRange,
        /// SMs each kernel asks for.
        sms: u32,
        /// The busy-wait kernel's duration (how often a waiting rank looks at its peers).
        spin: Nanos,
    },
    /// A loop launching one kernel every `gap` of host time, each a job, that keeps at most
    /// `depth` of them unfinished: with that many it blocks until the oldest completes (a
    /// PyTorch loop waiting on the event it recorded `depth` launches back). Bound by its
    /// launching while the device keeps up; held back, it soon blocks.
    Looping {
        /// Kernels unfinished at most.
        depth: u32,
        /// Each kernel's duration.
        kernel: SpanRange,
        /// SMs each kernel asks for.
        sms: u32,
        /// Host time between two launches.
        gap: Nanos,
    },
    /// Keeps `depth` kernels submitted and unfinished at all times; each kernel is a job.
    Flood {
        /// Kernels outstanding.
        depth: u32,
        /// Each kernel's duration.
        kernel: SpanRange,
        /// SMs each kernel asks for.
        sms: u32,
    },
}

/// Which simulated context (process on the device) a client's stream lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContextSpec {
    /// A context of its own.
    Own,
    /// The context shared by every client naming the same number.
    Shared(u32),
}

/// One client: a process's stream with a workload, reached through an XQueue the scheduler
/// manages (or, `scheduled: false`, straight on the stream: native).
#[derive(Clone, Debug)]
pub struct ClientSpec {
    /// A name for reports and plots.
    pub name: String,
    /// The process it belongs to (clients may share one).
    pub pid: u32,
    /// The device it runs on (each device is a separate simulated device; default 0).
    pub device: u32,
    /// Its context on the device.
    pub context: ContextSpec,
    /// Its stream's device priority (SM allocation within a context).
    pub stream_priority: i32,
    /// Through an XQueue under the scheduler, or native.
    pub scheduled: bool,
    /// The level its XQueue suspends with (default: the device's highest).
    pub level: Option<Level>,
    /// Its XQueue's launch window.
    pub launch: LaunchConfig,
    /// Hints given when it registers.
    pub hints: Vec<Hint>,
    /// Process hints given when it registers.
    pub process_hints: Vec<ProcessHint>,
    /// What it submits.
    pub workload: Workload,
    /// Stop releasing jobs at this time (default: the run's end).
    pub until: Option<Nanos>,
    /// Jobs should complete within this span of their release (for miss counts).
    pub deadline: Option<Nanos>,
    /// Scheduled in a context of its own: the context gives the device up within this slice
    /// whenever the queue may be suspended, and the policy is told so
    /// ([`Hint::Yielding`](baton_policies::Hint::Yielding)), as `baton run --yield` does on a
    /// GPU between processes.
    pub yields: Option<Nanos>,
    /// Yielding, its context's slice is this long while it runs freely and outranks other
    /// work, as a service beside a job gets on a GPU.
    pub leads: Option<Nanos>,
    /// Scheduled, its kernels keep to this many SMs whenever the queue may be suspended, as
    /// `baton run --yield` does on a GPU under MPS, where the policy is told so
    /// ([`Hint::Confining`](baton_policies::Hint::Confining)); or, told nothing, as
    /// `BATON_YIELD_SMS` without `--yield` does, the queue held back as well
    /// ([`ClientSpec::confined_and_held`]).
    pub confines: Option<u32>,
    /// Whether its scheduler is told how long its commands take once its queue has measured
    /// it ([`Hint::CommandTime`](baton_policies::Hint::CommandTime)), as a process under the
    /// interposer does unless `BATON_COMMAND_TIME=off` (default: told).
    pub measures: bool,
    /// Scheduled, the device time its commands in flight may take while its window applies,
    /// by its measured command time
    /// ([`XQueueBuilder::inflight_budget`](baton_core::XQueueBuilder::inflight_budget)), as
    /// `BATON_INFLIGHT_US` sets on a GPU (default: none, bounded by count only).
    pub inflight_budget: Option<Nanos>,
    /// With the budget, sync points every half of what it admits
    /// ([`XQueueBuilder::early_refill`](baton_core::XQueueBuilder::early_refill),
    /// `BATON_EARLY_REFILL`).
    pub early_refill: bool,
    /// How long its host takes to look at its queue after one of its commands completes (a
    /// thread woken from its wait on a sync point, then launching): its queue is looked at
    /// only then, at its own timers and when it submits (default: zero, at once).
    pub reacts: Nanos,
}

impl ClientSpec {
    /// A scheduled client of its own process `pid` and context, default settings.
    pub fn new(name: &str, pid: u32, workload: Workload) -> ClientSpec {
        ClientSpec {
            name: name.to_string(),
            pid,
            device: 0,
            context: ContextSpec::Own,
            stream_priority: 0,
            scheduled: true,
            level: None,
            launch: LaunchConfig::default(),
            hints: Vec::new(),
            process_hints: Vec::new(),
            workload,
            until: None,
            deadline: None,
            yields: None,
            leads: None,
            confines: None,
            measures: true,
            inflight_budget: None,
            early_refill: false,
            reacts: Nanos::ZERO,
        }
    }

    /// Yielding its context's time slice, `slice` long (see [`ClientSpec::yields`]).
    pub fn yielding(mut self, slice: Nanos) -> ClientSpec {
        self.yields = Some(slice);
        self.hints.push(Hint::Yielding(slice));
        self
    }

    /// Yielding (`slice`) and leading (`lead`; see [`ClientSpec::leads`]).
    pub fn time_sliced(self, slice: Nanos, lead: Nanos) -> ClientSpec {
        let mut c = self.yielding(slice);
        c.leads = Some(lead);
        c
    }

    /// As `baton run` with no flags sets a process up between time-sliced contexts (its own
    /// context, scheduled by the daemon, no MPS): yielding and leading by the agent's default
    /// slices when it yields to others by default, as it is otherwise.
    pub fn as_by_default(self) -> ClientSpec {
        let mut cfg = baton_agent::AgentConfig::default();
        cfg.scheduler = baton_agent::SchedulerMode::Global;
        cfg.mps = Some(false);
        cfg.level = self.level.unwrap_or(cfg.level);
        if !cfg.yields_to_others() {
            return self;
        }
        self.time_sliced(
            Nanos::from_micros(cfg.yield_slice_us()),
            Nanos::from_micros(cfg.lead_slice_us()),
        )
    }

    /// Confining its kernels to `sms` SMs while outranked (see [`ClientSpec::confines`]).
    pub fn confining(mut self, sms: u32) -> ClientSpec {
        self.confines = Some(sms);
        self.hints.push(Hint::Confining(sms));
        self
    }

    /// Keeping its kernels to `sms` SMs while outranked and held back as any other queue
    /// (no hint: `BATON_YIELD_SMS` without `--yield` under MPS; see [`ClientSpec::confines`]).
    pub fn confined_and_held(mut self, sms: u32) -> ClientSpec {
        self.confines = Some(sms);
        self
    }

    /// Its work in flight bounded to `budget` of device time, with sync points every half of
    /// what the budget admits if `early_refill`, as a held-back job under `baton run` (see
    /// [`ClientSpec::inflight_budget`]).
    pub fn budgeted(mut self, budget: Nanos, early_refill: bool) -> ClientSpec {
        self.inflight_budget = Some(budget);
        self.early_refill = early_refill;
        self
    }

    /// Its host looking at its queue `reacts` after each completion (see
    /// [`ClientSpec::reacts`]).
    pub fn reacting(mut self, reacts: Nanos) -> ClientSpec {
        self.reacts = reacts;
        self
    }

    /// With `hint`.
    pub fn hint(mut self, hint: Hint) -> ClientSpec {
        self.hints.push(hint);
        self
    }

    /// With a process hint.
    pub fn process_hint(mut self, hint: ProcessHint) -> ClientSpec {
        self.process_hints.push(hint);
        self
    }

    /// With a deadline for miss counting.
    pub fn deadline(mut self, d: Nanos) -> ClientSpec {
        self.deadline = Some(d);
        self
    }
}

/// Something done to the scheduler at a given time.
pub enum Action {
    /// A scheduler-wide hint.
    Global(GlobalHint),
    /// A hint for client number `.0`'s queue.
    Hint(usize, Hint),
    /// Switch to another policy (queues and hints are kept).
    Policy(Box<dyn Policy>),
}

/// A whole lab run.
pub struct LabSpec {
    /// The simulated devices' configuration (every device alike).
    pub device: SimConfig,
    /// The policy the scheduler starts with.
    pub policy: Box<dyn Policy>,
    /// Simulated time to run.
    pub duration: Nanos,
    /// Seed of every random draw.
    pub seed: u64,
    /// How often cumulative work is sampled for time series.
    pub sample_every: Nanos,
    /// What the agent reads about each process (unknown pids: uid 0, nice 0).
    pub processes: BTreeMap<u32, ProcessFacts>,
    /// Scheduler-wide hints given at the start.
    pub global: Vec<GlobalHint>,
    /// The clients.
    pub clients: Vec<ClientSpec>,
    /// Actions at given times, in any order.
    pub actions: Vec<(Nanos, Action)>,
    /// How long a scheduled queue's launches must pause before its in-flight tail is found
    /// done, as a launch worker does on a GPU (`Some(300 µs)`, the worker's linger); none: at
    /// once. With it, a launch-bound client is busy from its first launch to its last
    /// completion, as such a program looks to a scheduler on a GPU.
    pub idle_linger: Option<Nanos>,
}

impl LabSpec {
    /// A run of `duration` under `policy` on the default simulated device, with no clients.
    pub fn new(policy: Box<dyn Policy>, duration: Nanos) -> LabSpec {
        LabSpec {
            device: SimConfig::default(),
            policy,
            duration,
            seed: 1,
            sample_every: Nanos::from_millis(100),
            processes: BTreeMap::new(),
            global: Vec::new(),
            clients: Vec::new(),
            actions: Vec::new(),
            idle_linger: None,
        }
    }

    /// With `client`.
    pub fn client(mut self, client: ClientSpec) -> LabSpec {
        self.clients.push(client);
        self
    }
}
