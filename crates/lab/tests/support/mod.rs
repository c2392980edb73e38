//! What the co-location tests in virtual time share: a launch-bound service, a flood beside it
//! in one context (as under MPS), and the figures the co-location matrix judges a cell by.

#![allow(dead_code)]

use baton_core::{Level, Nanos, Priority};
use baton_lab::{ClientSpec, ContextSpec, LabResult, LabSpec, SpanRange, Workload, run};
use baton_policies::{GlobalHint, Hint, by_name};

/// How long every run lasts.
pub const RUN: Nanos = Nanos::from_secs(10);

pub fn us(a: u64, b: u64) -> SpanRange {
    SpanRange::new(Nanos::from_micros(a), Nanos::from_micros(b))
}

/// The launch-bound service ("hp", process 1, priority 10): jobs of 60 kernels of 10–30 µs on
/// 24 SMs launched 80 µs apart, then 1 ms of think time, at Level 1 in the shared context.
pub fn service() -> ClientSpec {
    ClientSpec {
        context: ContextSpec::Shared(0),
        level: Some(Level::L1),
        ..ClientSpec::new(
            "hp",
            1,
            Workload::Paced {
                kernels: 60,
                kernel: us(10, 30),
                sms: 24,
                gap: Nanos::from_micros(80),
                think: Nanos::from_millis(1),
            },
        )
        .hint(Hint::Priority(Priority::new(10).unwrap()))
    }
}

/// A service that replays one CUDA graph per request ("hp", process 1, priority 10): a request
/// every 6.3 ms, each one command of 1.4–1.6 ms on every SM (the device busy with it about a
/// quarter of the time), at Level 1 in `context`: the shape of the co-location matrix's
/// graph-replayed ResNet-50.
pub fn graph_service(context: ContextSpec) -> ClientSpec {
    ClientSpec {
        context,
        level: Some(Level::L1),
        ..ClientSpec::new(
            "hp",
            1,
            Workload::Periodic {
                period: Nanos::from_micros(6_300),
                offset: Nanos::from_micros(700),
                kernels: 1,
                kernel: us(1_400, 1_600),
                sms: 132,
                announce: None,
            },
        )
        .hint(Hint::Priority(Priority::new(10).unwrap()))
    }
}

/// The flood ("be", process 2): four `kernel`-long kernels on `sms` SMs in flight, at Level 1
/// in the shared context.
pub fn flood(kernel: SpanRange, sms: u32) -> ClientSpec {
    ClientSpec {
        context: ContextSpec::Shared(0),
        level: Some(Level::L1),
        ..ClientSpec::new(
            "be",
            2,
            Workload::Flood {
                depth: 4,
                kernel,
                sms,
            },
        )
    }
}

/// A training-like job ("be", process 2): kernels of 100–120 µs on every SM, 64 in flight, at
/// Level 1 in the shared context, its host looking at its queue 40 µs after a completion (a
/// thread woken from a sync point's wait, then launching).
pub fn training() -> ClientSpec {
    ClientSpec {
        workload: Workload::Flood {
            depth: 64,
            kernel: us(100, 120),
            sms: 132,
        },
        ..flood(us(100, 120), 132)
    }
    .reacting(Nanos::from_micros(40))
}

/// Runs `clients` under `policy`, or natively (no XQueues) with `None`.
pub fn lab(policy: Option<&str>, clients: Vec<ClientSpec>) -> LabResult {
    lab_with(policy, Vec::new(), clients)
}

/// [`lab`] with scheduler-wide hints `global` in force from the start.
pub fn lab_with(
    policy: Option<&str>,
    global: Vec<GlobalHint>,
    clients: Vec<ClientSpec>,
) -> LabResult {
    lab_on(
        baton_sim::SimConfig::default(),
        policy,
        RUN,
        global,
        clients,
    )
}

/// Runs `clients` for `run_for` on `device` under `policy` with scheduler-wide hints
/// `global`, or natively (no XQueues) with `None`.
fn lab_on(
    device: baton_sim::SimConfig,
    policy: Option<&str>,
    run_for: Nanos,
    global: Vec<GlobalHint>,
    clients: Vec<ClientSpec>,
) -> LabResult {
    let mut spec = LabSpec::new(by_name(policy.unwrap_or("hpf")).unwrap(), run_for);
    spec.device = device;
    spec.global = global;
    spec.idle_linger = Some(Nanos::from_micros(300));
    spec.clients = clients
        .into_iter()
        .map(|c| ClientSpec {
            scheduled: policy.is_some(),
            ..c
        })
        .collect();
    run(spec)
}

/// Runs `clients` for `run_for` under HPF with scheduler-wide hints `global` (`scheduled`), or
/// natively, on a device whose context switch costs 200 µs, of the order of a hand-over
/// between time-sliced contexts on a GPU (docs/benchmarks/matrix/README.md).
pub fn lab_costly_switch(
    run_for: Nanos,
    global: Vec<GlobalHint>,
    scheduled: bool,
    clients: Vec<ClientSpec>,
) -> LabResult {
    lab_switching(None, run_for, global, scheduled, clients)
}

/// [`lab_costly_switch`] on a device where leaving a context with no kernel running costs
/// `idle_switch` instead (nothing of it to save).
pub fn lab_costly_busy_switch(
    run_for: Nanos,
    idle_switch: Nanos,
    scheduled: bool,
    clients: Vec<ClientSpec>,
) -> LabResult {
    lab_switching(Some(idle_switch), run_for, Vec::new(), scheduled, clients)
}

fn lab_switching(
    idle_switch: Option<Nanos>,
    run_for: Nanos,
    global: Vec<GlobalHint>,
    scheduled: bool,
    clients: Vec<ClientSpec>,
) -> LabResult {
    let device = baton_sim::SimConfig {
        switch_cost: Nanos::from_micros(200),
        idle_switch_cost: idle_switch,
        ..baton_sim::SimConfig::default()
    };
    lab_on(device, scheduled.then_some("hpf"), run_for, global, clients)
}

/// One cell: the service beside `be` under `policy` (natively with `None`).
#[derive(Debug)]
pub struct Cell {
    /// HP p99 ÷ HP alone.
    pub hp_p99_ratio: f64,
    /// BE work ÷ BE alone.
    pub be_share: f64,
    /// HP's device-busy fraction alone.
    pub hp_busy: f64,
}

pub fn cell(policy: Option<&str>, be: ClientSpec) -> Cell {
    cell_with(policy, service(), be)
}

/// One cell: `hp` beside `be` under `policy` (natively with `None`).
pub fn cell_with(policy: Option<&str>, hp: ClientSpec, be: ClientSpec) -> Cell {
    cell_global(policy, Vec::new(), hp, be)
}

/// [`cell_with`] with scheduler-wide hints `global`.
pub fn cell_global(
    policy: Option<&str>,
    global: Vec<GlobalHint>,
    hp: ClientSpec,
    be: ClientSpec,
) -> Cell {
    let alone = lab_with(policy, global.clone(), vec![hp.clone()]);
    let be_alone = lab_with(policy, global.clone(), vec![be.clone()]);
    let both = lab_with(policy, global, vec![hp, be]);
    let hp_alone = alone.client("hp");
    Cell {
        hp_p99_ratio: both.client("hp").latency(0.99).0 as f64 / hp_alone.latency(0.99).0 as f64,
        be_share: both.client("be").work.0 as f64 / be_alone.client("be").work.0 as f64,
        hp_busy: hp_alone.context_busy.0 as f64 / RUN.0 as f64,
    }
}

/// Both sides of the promise: HP p99 within ×1.10 of alone, BE at least 90 % of what HP
/// leaves.
pub fn keeps_the_promise(c: &Cell) {
    assert!(
        c.hp_p99_ratio <= 1.10,
        "protect: HP p99 ×{:.3} of alone",
        c.hp_p99_ratio
    );
    let target = 0.9 * (1.0 - c.hp_busy);
    assert!(
        c.be_share >= target,
        "work-conserving: BE {:.0} % of alone, target {:.0} %",
        c.be_share * 100.0,
        target * 100.0
    );
}

/// The failure shape of holding beside a launch-bound service: the flood `held` back keeps
/// less than half of its speed alone, for a service that leaves the device mostly idle.
pub fn starved_when_held(held: &Cell) {
    assert!(
        held.be_share < 0.5,
        "the failure shape: the flood is held back for a service that leaves the device \
         mostly idle ({:.0} % of alone)",
        held.be_share * 100.0
    );
}
