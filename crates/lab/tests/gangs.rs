//! Gangs in virtual time: a data-parallel job of four ranks, one per device, meets at a
//! barrier after every step, beside a latency-critical service on device 0 and a low-priority
//! filler on device 1. Per device (`hpf`), the service holds rank 0 back and the three other
//! ranks busy-wait at the barrier on their devices meanwhile; as a gang (`gang:hpf`), every
//! rank is held while rank 0 is, their devices go to whatever else is there, and the job loses
//! nothing it was not already losing. The figures are printed (`--nocapture`) and quoted in
//! docs/MULTI_GPU.md.

use baton_core::Nanos;
use baton_lab::{ClientSpec, LabResult, LabSpec, SpanRange, Workload, run};
use baton_policies::{GangId, Hint, by_name};

const RANKS: u32 = 4;

fn spec(policy: &str, filler: bool) -> LabSpec {
    let mut spec = LabSpec::new(by_name(policy).unwrap(), Nanos::from_secs(1));
    let mut hp = ClientSpec::new(
        "hp",
        1,
        Workload::Periodic {
            period: Nanos::from_millis(10),
            offset: Nanos::from_micros(1_300),
            kernels: 8,
            kernel: SpanRange::fixed(Nanos::from_micros(500)),
            sms: 132,
            announce: None,
        },
    )
    .hint(Hint::priority(10).unwrap());
    hp.device = 0;
    spec.clients.push(hp);
    for r in 0..RANKS {
        let mut c = ClientSpec::new(
            &format!("rank{r}"),
            10 + r,
            Workload::Ranked {
                group: 1,
                kernels: 8,
                kernel: SpanRange::fixed(Nanos::from_micros(500)),
                sms: 132,
                spin: Nanos::from_micros(50),
            },
        )
        .hint(Hint::Gang(GangId(1)));
        c.device = r;
        spec.clients.push(c);
    }
    if filler {
        let mut f = ClientSpec::new(
            "filler",
            30,
            Workload::Flood {
                depth: 2,
                kernel: SpanRange::fixed(Nanos::from_micros(200)),
                sms: 132,
            },
        )
        .hint(Hint::priority(-10).unwrap());
        f.device = 1;
        spec.clients.push(f);
    }
    spec
}

/// The job's figures: steps every rank completed, device time spent busy-waiting (ranks 1–3),
/// and the rank-time idle at the barrier without spinning.
struct Job {
    steps: usize,
    spin: Nanos,
}

fn job(r: &LabResult) -> Job {
    let ranks: Vec<_> = (0..RANKS).map(|i| r.client(&format!("rank{i}"))).collect();
    Job {
        steps: ranks.iter().map(|c| c.jobs.len()).min().unwrap_or(0),
        spin: Nanos(ranks.iter().map(|c| c.spin.0).sum()),
    }
}

fn ms(n: Nanos) -> f64 {
    n.0 as f64 / 1e6
}

#[test]
fn a_gang_stops_spinning_while_one_rank_is_held_and_frees_its_devices() {
    let ind = run(spec("hpf", true));
    let tog = run(spec("gang:hpf", true));
    let (ji, jt) = (job(&ind), job(&tog));
    let line = |name: &str, r: &LabResult, j: &Job| {
        let hp = r.client("hp");
        println!(
            "{name:<12} HP p50 {:.2} ms p99 {:.2} ms · job steps {} · busy-wait {:.0} ms of device time · filler on device 1 {:.0} ms of work · gang holds {:?}",
            ms(hp.latency(0.5)),
            ms(hp.latency(0.99)),
            j.steps,
            ms(j.spin),
            ms(r.client("filler").work),
            r.counters
                .iter()
                .find(|(k, _)| *k == "gang_holds")
                .map(|c| c.1),
        );
    };
    line("independent", &ind, &ji);
    line("together", &tog, &jt);
    // The service is protected the same way under both.
    let (hi, ht) = (ind.client("hp"), tog.client("hp"));
    assert!(ht.latency(0.99) <= hi.latency(0.99) + Nanos::from_micros(100));
    assert!(
        hi.latency(0.99) < Nanos::from_millis(5),
        "HP p99 {}",
        hi.latency(0.99)
    );
    // Per device, ranks 1-3 busy-wait while rank 0 is held: about 3 × the service's 40 %.
    assert!(
        ji.spin > Nanos::from_millis(750),
        "independent spin {}",
        ji.spin
    );
    // As a gang they are held instead: a tenth of that at most (a spin already launched ends).
    assert!(
        jt.spin.0 * 10 < ji.spin.0,
        "together spin {} vs {}",
        jt.spin,
        ji.spin
    );
    // The job's progress is set by rank 0 either way: within 5 %.
    assert!(
        jt.steps * 100 >= ji.steps * 95,
        "steps {} vs {}",
        jt.steps,
        ji.steps
    );
    // Device 1's share the gang does not use goes to the filler instead of to busy-waiting.
    let (fi, ft) = (ind.client("filler").work, tog.client("filler").work);
    assert!(ft > fi + Nanos::from_millis(200), "filler {fi} vs {ft}");
}

/// Without the gang hint, `gang:hpf` is `hpf`: the same run, step for step.
#[test]
fn without_gangs_the_wrapper_changes_nothing() {
    let strip = |mut s: LabSpec| {
        for c in &mut s.clients {
            c.hints.retain(|h| !matches!(h, Hint::Gang(_)));
        }
        s
    };
    let a = run(strip(spec("hpf", false)));
    let b = run(strip(spec("gang:hpf", false)));
    for (x, y) in a.clients.iter().zip(&b.clients) {
        assert_eq!(x.jobs, y.jobs, "{}", x.name);
        assert_eq!(x.spin, y.spin, "{}", x.name);
    }
}
