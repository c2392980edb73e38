//! Random workloads under every policy, on the simulated device: policies that promise
//! progress never starve a continuously ready queue, and every policy finishes finite work.

use baton_core::Nanos;
use baton_lab::{ClientSpec, LabSpec, SpanRange, Workload, run};
use baton_policies::{GlobalHint, Hint, ProcessHint, catalog};
use proptest::prelude::*;

#[derive(Clone, Debug)]
struct Client {
    flood: bool,
    kernel_us: u64,
    priority: i64,
    share: f64,
    pid: u32,
}

fn client() -> impl Strategy<Value = Client> {
    (
        any::<bool>(),
        50u64..3_000,
        -20i64..=20,
        5.0f64..60.0,
        1u32..4,
    )
        .prop_map(|(flood, kernel_us, priority, share, pid)| Client {
            flood,
            kernel_us,
            priority,
            share,
            pid,
        })
}

fn spec(name: &str, clients: &[Client], duration: Nanos) -> LabSpec {
    let info = baton_policies::registry::info(name).unwrap();
    let mut spec = LabSpec::new(info.instantiate(), duration);
    spec.global = vec![
        GlobalHint::k(2).unwrap(),
        GlobalHint::active_window(Some(1)).unwrap(),
    ];
    for (i, c) in clients.iter().enumerate() {
        let kernel = SpanRange::new(
            Nanos::from_micros(c.kernel_us / 2 + 10),
            Nanos::from_micros(c.kernel_us),
        );
        let workload = if c.flood {
            Workload::Flood {
                depth: 4,
                kernel,
                sms: 132,
            }
        } else {
            Workload::Periodic {
                period: Nanos::from_millis(7),
                offset: Nanos::ZERO,
                kernels: 5,
                kernel,
                sms: 66,
                announce: None,
            }
        };
        spec.clients.push(
            ClientSpec::new(&format!("c{i}"), c.pid, workload)
                .hint(Hint::priority(c.priority).unwrap())
                .hint(Hint::utilization(c.share).unwrap())
                .hint(Hint::deadline(Nanos::from_millis(7)).unwrap())
                .hint(Hint::laxity(Nanos::from_millis(3), 50).unwrap())
                .process_hint(ProcessHint::utilization(c.share).unwrap()),
        );
    }
    spec
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Under UP, PUP, CFS and MLFQ every flooding client completes work in every 300 ms
    /// window of a 2 s run, whatever the others do.
    #[test]
    fn starvation_free_policies_serve_every_flood(
        clients in proptest::collection::vec(client(), 2..5),
        which in 0usize..16,
    ) {
        let fair: Vec<&str> = catalog().iter().filter(|p| p.starvation_free).map(|p| p.name).collect();
        let name = fair[which % fair.len()];
        let r = run(spec(name, &clients, Nanos::from_secs(2)));
        for (c, spec) in r.clients.iter().zip(&clients) {
            if !spec.flood {
                continue;
            }
            for w in c.work_series.windows(4) {
                prop_assert!(w[3] > w[0], "{name}: {} starved: {:?}", c.name, c.work_series);
            }
        }
    }

    /// Under every policy, work that stops arriving at 0.5 s is all done by 3 s: no policy
    /// holds a queue back for ever once nothing competes with it.
    #[test]
    fn every_policy_finishes_finite_work(
        clients in proptest::collection::vec(client(), 1..5),
        which in 0usize..64,
    ) {
        let name = catalog()[which % catalog().len()].name;
        let mut spec = spec(name, &clients, Nanos::from_secs(3));
        for c in &mut spec.clients {
            c.until = Some(Nanos::from_millis(500));
        }
        let r = run(spec);
        for c in &r.clients {
            prop_assert_eq!(c.open_jobs, 0, "{}: {} left work unfinished", name, c.name);
        }
    }
}
