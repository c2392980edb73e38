//! Every policy Baton knows, by name.

use crate::{
    Awf, Cfs, Chaos, Chpf, Gangs, Guard, Hhpf, Hpf, Kedf, Lax, Mlfq, Policy, PrePreempt,
    ProcessUnits, Pup, Slo, Up,
};

/// A policy's name, what it does, and what it reads.
#[derive(Clone, Copy, Debug)]
pub struct PolicyInfo {
    /// The name to select it by.
    pub name: &'static str,
    /// What it does, in one line.
    pub description: &'static str,
    /// The hints and process facts it reads, with their ranges.
    pub reads: &'static [&'static str],
    /// Whether some ready queue on each device always runs under it.
    pub work_conserving: bool,
    /// Whether every continuously ready queue is guaranteed device time.
    pub starvation_free: bool,
    make: fn() -> Box<dyn Policy>,
}

impl PolicyInfo {
    /// A fresh instance of the policy, honouring upcoming-work hints (pre-preemption).
    pub fn instantiate(&self) -> Box<dyn Policy> {
        Box::new(PrePreempt::new((self.make)()))
    }
}

const UPCOMING: &str = "upcoming work: in 0..=10 s, grace 0..=10 s (pre-preemption)";
const PRIORITY: &str = "priority: -100..=100, default 0";
const TIMESLICE: &str = "time slice (global): 100 µs..=1 s";

const CATALOG: &[PolicyInfo] = &[
    PolicyInfo {
        name: "guard",
        description: "highest priority first where it helps: lower work waits only while that measurably speeds up the service",
        reads: &[PRIORITY, UPCOMING],
        work_conserving: true,
        starvation_free: false,
        make: || Box::new(Guard::new()),
    },
    PolicyInfo {
        name: "hpf",
        description: "highest priority first per device: lower priorities wait while a higher one is ready",
        reads: &[PRIORITY, UPCOMING],
        work_conserving: true,
        starvation_free: false,
        make: || Box::new(Hpf),
    },
    PolicyInfo {
        name: "hhpf",
        description: "highest priority first across all devices: a ready priority anywhere stops lower work everywhere",
        reads: &[PRIORITY, UPCOMING],
        work_conserving: false,
        starvation_free: false,
        make: || Box::new(Hhpf),
    },
    PolicyInfo {
        name: "chpf",
        description: "highest priority first, priority from the process's OS niceness (nice/renice steer the GPU)",
        reads: &["process niceness: -20..=19, read by the agent", UPCOMING],
        work_conserving: true,
        starvation_free: false,
        make: || Box::new(Chpf),
    },
    PolicyInfo {
        name: "up",
        description: "utilization partition per queue: each queue gets its share of every time slice",
        reads: &[
            "utilization: 0.1..=100 %",
            "time slice (global): period, default 20 ms",
            UPCOMING,
        ],
        work_conserving: true,
        starvation_free: true,
        make: || Box::new(Up::default()),
    },
    PolicyInfo {
        name: "pup",
        description: "utilization partition per process, unused time carried as decaying credit",
        reads: &[
            "process utilization: 0.1..=100 %",
            "time slice (global): quantum, default 5 ms",
            UPCOMING,
        ],
        work_conserving: true,
        starvation_free: true,
        make: || Box::new(Pup::default()),
    },
    PolicyInfo {
        name: "kedf",
        description: "k earliest deadlines first: the k ready queues whose jobs are due soonest run",
        reads: &[
            "deadline: 10 µs..=1 h after each release",
            "k (global): 1..=1024, default 1",
            UPCOMING,
        ],
        work_conserving: true,
        starvation_free: false,
        make: || Box::new(Kedf::default()),
    },
    PolicyInfo {
        name: "lax",
        description: "priority first, a job's priority turns critical once its laxity has expired",
        reads: &[
            PRIORITY,
            "laxity: 0..=1 h, critical priority -100..=100",
            "deadline: reported misses only",
            UPCOMING,
        ],
        work_conserving: true,
        starvation_free: false,
        make: || Box::new(Lax::default()),
    },
    PolicyInfo {
        name: "awf",
        description: "active window first: the focused process's queues run before everyone else's",
        reads: &["active window (global): a pid, or none", UPCOMING],
        work_conserving: true,
        starvation_free: false,
        make: || Box::new(Awf),
    },
    PolicyInfo {
        name: "cfs",
        description: "weighted fair share like Linux CFS: device time in proportion to priority weights",
        reads: &[
            "priority: weight 1024 × 1.25^(priority/5)",
            "time slice (global): period, default 20 ms",
            UPCOMING,
        ],
        work_conserving: true,
        starvation_free: true,
        make: || Box::new(Cfs::default()),
    },
    PolicyInfo {
        name: "mlfq",
        description: "multi-level feedback queue: demoted as quanta are used, all boosted back to prevent starvation",
        reads: &[TIMESLICE, UPCOMING],
        work_conserving: true,
        starvation_free: true,
        make: || Box::new(Mlfq::default()),
    },
    PolicyInfo {
        name: "slo",
        description: "keeps HP p99 under its SLO target by feedback, giving BE every cycle the target allows",
        reads: &[
            "SLO target: p99 10 µs..=10 s (marks a queue HP)",
            "time slice (global): duty cycle, default 1 ms",
            UPCOMING,
        ],
        work_conserving: true,
        starvation_free: false,
        make: || Box::new(Slo::new()),
    },
];

/// Every registered policy, in a stable order.
pub fn catalog() -> &'static [PolicyInfo] {
    CATALOG
}

/// The catalog entry called `name` (case-insensitive).
pub fn info(name: &str) -> Result<&'static PolicyInfo, UnknownPolicy> {
    CATALOG
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name.trim()))
        .ok_or_else(|| UnknownPolicy {
            name: name.to_string(),
            known: CATALOG
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// No policy is registered under this name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown policy {name:?}: choose one of {known} (prefix process: to schedule whole processes, gang: to hold each gang's processes back together; chaos:SEED is a test mode that suspends queues at random)"
)]
pub struct UnknownPolicy {
    /// The name asked for.
    pub name: String,
    /// The names that exist, comma-separated.
    pub known: String,
}

/// A fresh instance of the policy called `name` (case-insensitive). `process:NAME` wraps it in
/// [`ProcessUnits`], so each process's queues run or stop together; `gang:NAME` wraps the
/// policy `NAME` (itself possibly `process:…`) in [`Gangs`]. `chaos` and `chaos:SEED`
/// (a decimal `u64`) are the [`Chaos`] test mode, outside the catalog.
pub fn by_name(name: &str) -> Result<Box<dyn Policy>, UnknownPolicy> {
    let t = name.trim();
    if t.eq_ignore_ascii_case("chaos") {
        return Ok(Box::new(Chaos::new(0)));
    }
    match t.split_once(':') {
        Some((prefix, seed)) if prefix.eq_ignore_ascii_case("chaos") => seed
            .trim()
            .parse()
            .map(|seed| Box::new(Chaos::new(seed)) as Box<dyn Policy>)
            .map_err(|_| UnknownPolicy {
                name: name.to_string(),
                known: "chaos:SEED with SEED a number, such as chaos:42".to_string(),
            }),
        Some((prefix, inner)) if prefix.eq_ignore_ascii_case("gang") => by_name(inner)
            .map(|p| Box::new(Gangs::new(p)) as Box<dyn Policy>)
            .map_err(|e| UnknownPolicy {
                name: name.to_string(),
                ..e
            }),
        Some((prefix, inner)) if prefix.eq_ignore_ascii_case("process") => info(inner)
            .map(|i| Box::new(ProcessUnits::new(i.instantiate())) as Box<dyn Policy>)
            .map_err(|e| UnknownPolicy {
                name: name.to_string(),
                ..e
            }),
        _ => info(t).map(PolicyInfo::instantiate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_instantiates_itself() {
        for info in catalog() {
            assert_eq!(by_name(info.name).unwrap().name(), info.name);
            assert!(!info.description.is_empty());
            assert!(!info.reads.is_empty());
        }
        assert_eq!(catalog().len(), 12);
        assert_eq!(by_name("process:PUP").unwrap().name(), "pup");
        assert_eq!(by_name("gang:hpf").unwrap().name(), "hpf");
        assert_eq!(by_name("gang:process:cfs").unwrap().name(), "cfs");
        assert!(by_name("gang:nope").is_err());
        assert_eq!(by_name("chaos").unwrap().name(), "chaos");
        assert_eq!(by_name("Chaos:42").unwrap().name(), "chaos");
        assert!(by_name("chaos:many").is_err());
    }

    /// The wrappers the registry adds must not hide what the policy says about attention:
    /// a lone HPF queue is never suspended, so it needs no window and no reports.
    #[test]
    fn wrapped_policies_keep_their_attention_answers() {
        let lone = [crate::QueueView::new(1, 7, 0, true)];
        let snap = crate::Snapshot::new(baton_core::Nanos::ZERO, &lone);
        for name in ["hpf", "process:hpf", "gang:hpf"] {
            let plan = by_name(name).unwrap().decide(&snap).plan(0);
            assert!(!plan.may_suspend, "{name}");
            assert!(!plan.report, "{name}");
        }
        assert!(by_name("up").unwrap().decide(&snap).plan(0).may_suspend);
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let err = by_name("fastest").err().unwrap();
        assert!(err.to_string().contains("hpf"), "{err}");
        assert!(err.to_string().contains("mlfq"), "{err}");
        assert!(by_name("process:nope").is_err());
    }
}
