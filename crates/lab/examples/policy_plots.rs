//! Runs one scenario per policy in virtual time and writes `target/policy-plots/NAME.json` (or
//! into the folder given as the first argument), which `scripts/plot_policies.py` turns into
//! `docs/policies/NAME.png`.
//!
//! ```text
//! cargo run --release -p baton-lab --example policy_plots [OUT_DIR]
//! python3 scripts/plot_policies.py [OUT_DIR]
//! ```

use baton_core::{LaunchConfig, Level, Nanos};
use baton_lab::{
    Action, Announce, ClientSpec, ContextSpec, LabResult, LabSpec, LabSummary, SpanRange, Workload,
    run,
};
use baton_policies::{GlobalHint, Hint, ProcessHint, Slo, by_name};
use baton_scheduler::ProcessFacts;
use baton_sim::SimConfig;
use serde::Serialize;

const US: fn(u64) -> Nanos = Nanos::from_micros;
const MS: fn(u64) -> Nanos = Nanos::from_millis;

fn flood(name: &str, pid: u32, kernel: SpanRange) -> ClientSpec {
    ClientSpec::new(
        name,
        pid,
        Workload::Flood {
            depth: 4,
            kernel,
            sms: 132,
        },
    )
}

fn periodic(name: &str, pid: u32, period: Nanos, kernels: u32, kernel: Nanos) -> ClientSpec {
    ClientSpec::new(
        name,
        pid,
        Workload::Periodic {
            period,
            offset: Nanos::ZERO,
            kernels,
            kernel: SpanRange::fixed(kernel),
            sms: 132,
            announce: None,
        },
    )
}

fn lab(policy: &str, duration: Nanos, clients: Vec<ClientSpec>) -> LabSpec {
    let mut spec = LabSpec::new(by_name(policy).unwrap(), duration);
    spec.clients = clients;
    spec.sample_every = MS(20);
    spec
}

struct Plot {
    name: &'static str,
    title: String,
    runs: Vec<(String, LabResult)>,
    lines: Vec<(String, f64)>,
}

fn single(name: &'static str, title: &str, spec: LabSpec) -> Plot {
    Plot {
        name,
        title: title.to_string(),
        runs: vec![(String::new(), run(spec))],
        lines: Vec::new(),
    }
}

fn hp_be(name: &'static str) -> Plot {
    let clients = vec![
        periodic("hp (priority 10)", 1, MS(10), 20, US(100)).hint(Hint::priority(10).unwrap()),
        flood("be (priority 0)", 2, SpanRange::new(MS(1), MS(3))),
    ];
    single(
        name,
        "HP: 2 ms jobs every 10 ms; BE: flood of 1–3 ms kernels",
        lab(name, Nanos::from_secs(2), clients),
    )
}

fn plots() -> Vec<Plot> {
    let flood_k = SpanRange::new(US(200), US(400));
    let mut v = vec![hp_be("hpf")];

    let mut hh = lab(
        "hhpf",
        Nanos::from_secs(2),
        vec![
            periodic("hp on device 0", 1, MS(10), 20, US(100)).hint(Hint::priority(10).unwrap()),
            flood("be on device 0", 2, flood_k),
            flood("be on device 1", 3, flood_k),
        ],
    );
    hh.clients[2].device = 1;
    v.push(single(
        "hhpf",
        "HP on device 0 also stops BE on device 1",
        hh,
    ));

    let mut ch = lab(
        "chpf",
        Nanos::from_secs(2),
        vec![
            periodic("nice -5", 1, MS(10), 20, US(100)),
            periodic("nice 0", 2, MS(10), 20, US(100)),
            flood("nice 5 (flood)", 3, flood_k),
        ],
    );
    for (pid, nice) in [(1, -5), (2, 0), (3, 5)] {
        ch.processes.insert(pid, ProcessFacts { uid: 0, nice });
    }
    v.push(single("chpf", "Priority from the processes' niceness", ch));

    let up = (100u32..)
        .zip([50.0, 30.0, 20.0])
        .map(|(pid, s)| {
            flood(&format!("{s}% share"), pid, flood_k).hint(Hint::utilization(s).unwrap())
        })
        .collect();
    v.push(single(
        "up",
        "Three floods with utilization 50/30/20 %",
        lab("up", Nanos::from_secs(2), up),
    ));

    let pup = [(100, 60.0), (100, 60.0), (200, 25.0), (300, 15.0)]
        .into_iter()
        .enumerate()
        .map(|(i, (pid, s))| {
            flood(&format!("pid {pid} ({s}%) queue {i}"), pid, flood_k)
                .process_hint(ProcessHint::utilization(s).unwrap())
        })
        .collect();
    v.push(single(
        "pup",
        "Processes with 60/25/15 %; process 100 has two queues",
        lab("pup", Nanos::from_secs(2), pup),
    ));

    let kedf = vec![
        periodic("a: 3 ms / 10 ms", 1, MS(10), 30, US(100)).hint(Hint::deadline(MS(10)).unwrap()),
        periodic("b: 1 ms / 4 ms", 2, MS(4), 10, US(100)).hint(Hint::deadline(MS(4)).unwrap()),
        periodic("c: 4.5 ms / 15 ms", 3, MS(15), 45, US(100)).hint(Hint::deadline(MS(15)).unwrap()),
    ];
    let mut p = single(
        "kedf",
        "EDF (k = 1), utilization 0.85: every job within its deadline",
        lab("kedf", Nanos::from_secs(2), kedf),
    );
    p.lines = vec![
        ("deadline a".into(), 10.0),
        ("deadline b".into(), 4.0),
        ("deadline c".into(), 15.0),
    ];
    v.push(p);

    let lax = vec![
        flood("flood (priority 5)", 9, SpanRange::fixed(US(200))).hint(Hint::priority(5).unwrap()),
        periodic("rt: 2 ms / 10 ms, laxity 6 ms", 1, MS(10), 20, US(100))
            .hint(Hint::laxity(MS(6), 50).unwrap()),
    ];
    let mut p = single(
        "lax",
        "A low-priority real-time task turns critical after its laxity",
        lab("lax", Nanos::from_secs(2), lax),
    );
    p.lines = vec![("rt deadline".into(), 10.0), ("laxity".into(), 6.0)];
    v.push(p);

    let mut awf = lab(
        "awf",
        Nanos::from_secs(2),
        vec![
            periodic("app (focused until 1 s)", 42, MS(16), 30, US(100)),
            flood(
                "background 7 (focused after 1 s)",
                7,
                SpanRange::fixed(MS(1)),
            ),
            flood("background 8", 8, SpanRange::fixed(MS(1))),
        ],
    );
    awf.global = vec![GlobalHint::active_window(Some(42)).unwrap()];
    awf.actions = vec![(
        Nanos::from_secs(1),
        Action::Global(GlobalHint::active_window(Some(7)).unwrap()),
    )];
    v.push(single(
        "awf",
        "Focus moves from the app to a background process at 1 s",
        awf,
    ));

    let cfs = (100u32..)
        .zip([0, 15, 30])
        .map(|(pid, p)| {
            flood(&format!("priority {p}"), pid, flood_k).hint(Hint::priority(p).unwrap())
        })
        .collect();
    v.push(single(
        "cfs",
        "Weights 1024/1991/3906 (priorities 0/15/30)",
        lab("cfs", Nanos::from_secs(2), cfs),
    ));

    let mlfq = vec![
        ClientSpec::new(
            "short: 1 ms jobs, 4 ms pauses",
            1,
            Workload::ClosedLoop {
                kernels: 10,
                kernel: SpanRange::fixed(US(100)),
                sms: 132,
                think: MS(4),
            },
        ),
        ClientSpec::new(
            "long: 100 ms jobs",
            2,
            Workload::ClosedLoop {
                kernels: 200,
                kernel: SpanRange::fixed(US(500)),
                sms: 132,
                think: Nanos::ZERO,
            },
        ),
    ];
    v.push(single(
        "mlfq",
        "Short jobs stay on top, the long job sinks and is boosted every 100 ms",
        lab("mlfq", Nanos::from_secs(2), mlfq),
    ));

    v.push(slo());
    v.push(prepreempt());
    v
}

fn slo() -> Plot {
    // The demo's workload in one process (one context): BE beside HP takes SMs HP wanted, so
    // the BE share trades HP latency for BE work; the target is 1.25 × HP alone.
    let target = US(2_800);
    let mut hp = ClientSpec::new(
        "hp (SLO p99 2.8 ms)",
        1,
        Workload::Periodic {
            period: MS(5),
            offset: Nanos::ZERO,
            kernels: 40,
            kernel: SpanRange::new(US(20), US(80)),
            sms: 100,
            announce: None,
        },
    )
    .hint(Hint::slo_target(target).unwrap());
    let mut be = ClientSpec::new(
        "be",
        2,
        Workload::Flood {
            depth: 32,
            kernel: SpanRange::new(MS(1), MS(5)),
            sms: 66,
        },
    );
    hp.context = ContextSpec::Shared(0);
    be.context = ContextSpec::Shared(0);
    let mut spec = LabSpec::new(Box::new(Slo::new()), Nanos::from_secs(6));
    spec.clients = vec![hp, be];
    spec.sample_every = MS(20);
    Plot {
        name: "slo",
        title:
            "One process, two streams: BE's share grows by feedback up to what the target allows"
                .into(),
        runs: vec![(String::new(), run(spec))],
        lines: vec![("target".into(), 2.8)],
    }
}

fn prepreempt() -> Plot {
    let spec = |announce: Option<Announce>| {
        let mut spec = LabSpec::new(by_name("hpf").unwrap(), Nanos::from_secs(1));
        spec.device = SimConfig {
            timeslice: MS(50),
            ..SimConfig::default()
        };
        spec.sample_every = MS(20);
        let launch = LaunchConfig::new(4, 2).unwrap();
        let mut hp = ClientSpec::new(
            "hp",
            1,
            Workload::Periodic {
                period: MS(20),
                offset: MS(10),
                kernels: 20,
                kernel: SpanRange::fixed(US(50)),
                sms: 132,
                announce,
            },
        )
        .hint(Hint::priority(10).unwrap());
        let mut be = flood("be", 2, SpanRange::fixed(MS(1)));
        for c in [&mut hp, &mut be] {
            c.level = Some(Level::L1);
            c.launch = launch;
        }
        spec.clients = vec![hp, be];
        spec
    };
    let hint = Announce {
        lead: MS(5),
        grace: MS(1),
    };
    Plot {
        name: "prepreempt",
        title: "HPF at Level 1, HP announcing its work 5 ms ahead or not".into(),
        runs: vec![
            ("no hint".into(), run(spec(None))),
            ("with hint".into(), run(spec(Some(hint)))),
        ],
        lines: Vec::new(),
    }
}

/// What `scripts/plot-policies.py` reads: the runs of one plot and its reference lines.
#[derive(Serialize)]
struct PlotDocument<'a> {
    /// `baton.lab.plot/1`.
    schema: &'static str,
    policy: &'a str,
    title: &'a str,
    command: &'static str,
    runs: Vec<RunDocument<'a>>,
    lines: Vec<LineDocument<'a>>,
}

#[derive(Serialize)]
struct RunDocument<'a> {
    label: &'a str,
    result: LabSummary,
}

#[derive(Serialize)]
struct LineDocument<'a> {
    label: &'a str,
    ms: f64,
}

fn document(p: &Plot) -> PlotDocument<'_> {
    PlotDocument {
        schema: "baton.lab.plot/1",
        policy: p.name,
        title: &p.title,
        command: "cargo run --release -p baton-lab --example policy_plots",
        runs: p
            .runs
            .iter()
            .map(|(label, r)| RunDocument {
                label,
                result: r.summary(),
            })
            .collect(),
        lines: p
            .lines
            .iter()
            .map(|(label, ms)| LineDocument { label, ms: *ms })
            .collect(),
    }
}

fn main() -> std::io::Result<()> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/policy-plots".to_string());
    std::fs::create_dir_all(&out)?;
    for p in plots() {
        let path = format!("{out}/{}.json", p.name);
        let text = serde_json::to_string(&document(&p)).unwrap_or_default();
        std::fs::write(&path, text + "\n")?;
        println!("wrote {path}");
    }
    Ok(())
}
