//! The priority family in virtual time: HHPF orders work across devices, CHPF follows the OS
//! niceness the agent reads.

use baton_core::Nanos;
use baton_lab::{ClientSpec, LabResult, LabSpec, SpanRange, Workload, run};
use baton_policies::{Hint, by_name};
use baton_scheduler::ProcessFacts;

fn periodic(name: &str, pid: u32, device: u32) -> ClientSpec {
    let mut c = ClientSpec::new(
        name,
        pid,
        Workload::Periodic {
            period: Nanos::from_millis(10),
            offset: Nanos::ZERO,
            kernels: 20,
            kernel: SpanRange::fixed(Nanos::from_micros(100)),
            sms: 132,
            announce: None,
        },
    );
    c.device = device;
    c
}

fn flood(name: &str, pid: u32, device: u32) -> ClientSpec {
    let mut c = ClientSpec::new(
        name,
        pid,
        Workload::Flood {
            depth: 4,
            kernel: SpanRange::fixed(Nanos::from_micros(500)),
            sms: 132,
        },
    );
    c.device = device;
    c
}

fn two_devices(policy: &str) -> LabResult {
    let mut spec = LabSpec::new(by_name(policy).unwrap(), Nanos::from_secs(2));
    spec.clients = vec![
        periodic("hp", 1, 0).hint(Hint::priority(10).unwrap()),
        flood("be0", 2, 0),
        flood("be1", 3, 1),
    ];
    run(spec)
}

#[test]
fn hhpf_stops_be_on_the_other_device_while_hp_runs_hpf_does_not() {
    let hh = two_devices("hhpf");
    let h = two_devices("hpf");
    let (hh1, h1) = (hh.client("be1").work, h.client("be1").work);
    println!(
        "HP p99 hhpf {} hpf {}; BE on device 1: hhpf {hh1}, hpf {h1}",
        hh.client("hp").latency(0.99),
        h.client("hp").latency(0.99)
    );
    // HP is busy 20 % of the time: under HHPF device 1's BE loses about that, under HPF nothing.
    assert!(h1 >= Nanos::from_millis(1_990));
    assert!(hh1.0 as f64 <= 0.85 * h1.0 as f64);
    assert!(hh.client("hp").latency(0.99) <= Nanos::from_micros(2_100));
}

#[test]
fn chpf_orders_processes_by_niceness() {
    let mut spec = LabSpec::new(by_name("chpf").unwrap(), Nanos::from_secs(2));
    spec.clients = vec![
        periodic("nice-5", 1, 0),
        periodic("nice0", 2, 0),
        flood("nice5", 3, 0),
    ];
    for (pid, nice) in [(1, -5), (2, 0), (3, 5)] {
        spec.processes.insert(pid, ProcessFacts { uid: 1000, nice });
    }
    let r = run(spec);
    let (a, b) = (r.client("nice-5"), r.client("nice0"));
    println!(
        "p99: nice -5 {}, nice 0 {}; nice 5 flood work {}",
        a.latency(0.99),
        b.latency(0.99),
        r.client("nice5").work
    );
    // The least nice never waits for the others; nice 0 waits at most for it.
    assert!(a.latency(0.99) <= Nanos::from_micros(2_100));
    assert!(b.latency(0.99) <= Nanos::from_micros(4_200));
    // The nicest gets what is left: 60 % of 2 s.
    assert!(r.client("nice5").work >= Nanos::from_millis(1_100));
}
