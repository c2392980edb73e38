//! Unit tests of `AgentConfig`: reading, aliases, warnings and the getters.

use std::collections::HashMap;

use super::*;

fn cfg(pairs: &[(&str, &str)]) -> AgentConfig {
    let m: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    AgentConfig::from_lookup(|n| m.get(n).cloned())
}

#[test]
fn the_gang_is_declared_or_read_from_the_launcher() {
    let gang = |pairs: &[(&str, &str)]| cfg(pairs).gang;
    assert_eq!(gang(&[]), None);
    assert_eq!(
        gang(&[("BATON_GANG", " train-7 ")]).as_deref(),
        Some("train-7")
    );
    let slurm = [("SLURM_JOB_ID", "812"), ("SLURM_STEP_ID", "0")];
    assert_eq!(gang(&slurm).as_deref(), Some("slurm:812.0"));
    let mut declared = slurm.to_vec();
    declared.push(("BATON_GANG", "mine"));
    assert_eq!(gang(&declared).as_deref(), Some("mine"));
    assert_eq!(gang(&[("TORCHELASTIC_RUN_ID", "none")]), None);
    assert_eq!(
        gang(&[("TORCHELASTIC_RUN_ID", "3f2a")]).as_deref(),
        Some("torchelastic:3f2a")
    );
    let torch = [("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "29500")];
    assert_eq!(
        gang(&torch),
        None,
        "no world size: not known to be a job of ranks"
    );
    let mut world = torch.to_vec();
    world.push(("WORLD_SIZE", "4"));
    assert_eq!(gang(&world).as_deref(), Some("torch:10.0.0.1:29500"));
    // Every rank derives the same id from the same name.
    let hints = cfg(&[("BATON_GANG", "job")]).process_hints();
    assert_eq!(
        hints,
        [Hint::Gang {
            id: baton_policies::GangId::of_name("job").0
        }]
    );
}

#[test]
fn confined_kernels_under_mps_make_the_process_isolated() {
    let dir = std::env::temp_dir().join(format!("baton-mps-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pipe = dir.to_str().unwrap();
    let isolated = |pairs: &[(&str, &str)]| cfg(pairs).isolated_sms();
    // No control pipe where CUDA would look: not MPS, so --sms isolates nothing.
    let sms = [("BATON_SMS", "112"), ("CUDA_MPS_PIPE_DIRECTORY", pipe)];
    assert_eq!(isolated(&sms), None);
    std::fs::write(dir.join("control"), b"").unwrap();
    assert_eq!(isolated(&sms), Some(112));
    // Isolation is claimed by the interposer once confined, not at hello; sharing the
    // GPU's context is claimed at hello.
    assert_eq!(cfg(&sms).process_hints(), [Hint::SharedContext]);
    // MPS without confinement: nothing to claim.
    assert_eq!(isolated(&[("CUDA_MPS_PIPE_DIRECTORY", pipe)]), None);
    // BATON_MPS decides over the pipe; a bad value warns and looks.
    let off = [
        ("BATON_SMS", "112"),
        ("CUDA_MPS_PIPE_DIRECTORY", pipe),
        ("BATON_MPS", "off"),
    ];
    assert_eq!(isolated(&off), None);
    assert_eq!(
        isolated(&[("BATON_SMS", "64"), ("BATON_MPS", "on")]),
        Some(64)
    );
    let bad = cfg(&[("BATON_MPS", "maybe"), ("CUDA_MPS_PIPE_DIRECTORY", pipe)]);
    assert_eq!(bad.warnings().len(), 1, "{:?}", bad.warnings());
    assert!(bad.under_mps());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_process_claims_to_be_merely_time_sliced_any_more() {
    // Time-sliced processes yield by their slices by default: none tells the daemon it
    // is only time-sliced (`Hint::TimeSliced`, which spared it beside launch-bound
    // services).
    let global = ("BATON_SCHEDULER", "global");
    let alone = ("BATON_MPS", "off");
    for pairs in [
        vec![global, alone],
        vec![global, alone, ("BATON_YIELD", "off")],
    ] {
        assert!(!cfg(&pairs).process_hints().contains(&Hint::TimeSliced));
    }
}

#[test]
fn under_mps_a_yielding_process_confines_its_kernels_while_outranked() {
    let global = ("BATON_SCHEDULER", "global");
    let (mps, on) = (("BATON_MPS", "on"), ("BATON_YIELD", "on"));
    let confines = |pairs: &[(&str, &str)]| cfg(pairs).confines_while_outranked();
    assert_eq!(confines(&[global, mps, on]), Some(SmShare::Percent(85)));
    assert!(
        !cfg(&[global, mps, on]).yields_to_others(),
        "no slice of its own"
    );
    // Only when asked: by default (auto) it is held back under MPS, its work in flight
    // bounded by time; only against other processes, under MPS, and not isolated for good.
    assert_eq!(confines(&[global, mps]), None);
    assert_eq!(confines(&[global, mps, ("BATON_YIELD", "auto")]), None);
    assert_eq!(confines(&[global, mps, ("BATON_YIELD", "off")]), None);
    assert!(cfg(&[global, mps, on]).claims_confining());
    // Held back (auto) with BATON_YIELD_SMS named: confined while outranked and held
    // back too, so it claims nothing; `--hold` (off) is never confined.
    let sms = ("BATON_YIELD_SMS", "50%");
    assert_eq!(confines(&[global, mps, sms]), Some(SmShare::Percent(50)));
    assert!(!cfg(&[global, mps, sms]).claims_confining());
    assert_eq!(confines(&[global, mps, ("BATON_YIELD", "off"), sms]), None);
    assert_eq!(confines(&[global, ("BATON_MPS", "off"), sms]), None);
    // A share that does not parse confines nothing where only it asked for confinement,
    // and the warning says so.
    let bad = cfg(&[global, mps, ("BATON_YIELD_SMS", "lots")]);
    assert_eq!(bad.confines_while_outranked(), None);
    assert!(
        bad.warnings()[0].contains("not confined"),
        "{:?}",
        bad.warnings()
    );
    assert_eq!(cfg(&[global, mps]).inflight_budget_us(), 250);
    assert_eq!(confines(&[mps, on]), None);
    assert_eq!(confines(&[global, ("BATON_MPS", "off"), on]), None);
    assert_eq!(confines(&[global, mps, on, ("BATON_SMS", "64")]), None);
    // How many: a count or a share; anything else warns and keeps 85 %.
    for (v, want) in [
        ("112", SmShare::Count(112)),
        ("50%", SmShare::Percent(50)),
        (" 90 % ", SmShare::Percent(90)),
    ] {
        assert_eq!(
            confines(&[global, mps, on, ("BATON_YIELD_SMS", v)]),
            Some(want),
            "{v}"
        );
    }
    for v in ["0", "100%", "0%", "lots", "-8"] {
        let c = cfg(&[global, mps, on, ("BATON_YIELD_SMS", v)]);
        assert_eq!(c.confines_while_outranked(), Some(SmShare::DEFAULT), "{v}");
        assert_eq!(c.warnings().len(), 1, "{v}: {:?}", c.warnings());
    }
    assert_eq!(SmShare::Percent(85).of(132), 112);
    assert_eq!(SmShare::Percent(1).of(8), 1);
    assert_eq!(SmShare::Count(64).of(132), 64);
}

#[test]
fn a_process_yields_by_time_slice_when_asked_under_the_daemon_without_mps() {
    let no_mps = ("BATON_MPS", "off");
    let global = ("BATON_SCHEDULER", "global");
    let on = ("BATON_YIELD", "on");
    assert!(cfg(&[global, no_mps, on]).yields_to_others());
    // By default too (auto); `--hold` turns it off.
    assert!(cfg(&[global, no_mps]).yields_to_others());
    assert!(!cfg(&[global, no_mps, ("BATON_YIELD", "off")]).yields_to_others());
    // Only against other processes: not for the local scheduler, nor under MPS.
    assert!(!cfg(&[no_mps, on]).yields_to_others());
    assert!(!cfg(&[global, ("BATON_MPS", "on"), on]).yields_to_others());
    let bad = cfg(&[global, no_mps, ("BATON_YIELD", "sometimes")]);
    assert_eq!(bad.warnings().len(), 1, "{:?}", bad.warnings());
    assert!(bad.yields_to_others());
    assert!(
        bad.warnings()[0].contains("on, off or auto"),
        "{:?}",
        bad.warnings()
    );
    assert_eq!(
        bad.yield_to_others, None,
        "a bad value keeps the default, auto"
    );
    // Outranked, the slice is short (the GPU hands over within its switch time); leading,
    // long; either as set; the in-flight bound likewise.
    assert_eq!(cfg(&[global, no_mps, on]).yield_slice_us(), 100);
    assert_eq!(cfg(&[global, ("BATON_LEVEL", "3")]).yield_slice_us(), 100);
    assert_eq!(cfg(&[]).lead_slice_us(), 10_000);
    assert_eq!(
        cfg(&[("BATON_LEAD_SLICE_US", "4000")]).lead_slice_us(),
        4000
    );
    assert_eq!(cfg(&[("BATON_INFLIGHT_US", "0")]).inflight_budget_us(), 0);
    assert!(!cfg(&[]).l3_off);
    assert!(cfg(&[("BATON_L3_OFF", "on")]).l3_off);
    assert!(cfg(&[]).early_refill);
    assert!(!cfg(&[("BATON_EARLY_REFILL", "off")]).early_refill);
    let bad = cfg(&[("BATON_EARLY_REFILL", "soon")]);
    assert!(bad.early_refill && bad.warnings()[0].contains("BATON_EARLY_REFILL"));
    let bad = cfg(&[("BATON_LEAD_SLICE_US", "0"), ("BATON_INFLIGHT_US", "x")]);
    assert_eq!(bad.warnings().len(), 2, "{:?}", bad.warnings());
    assert_eq!(
        (bad.lead_slice_us(), bad.inflight_budget_us()),
        (10_000, 250)
    );
    assert_eq!(
        cfg(&[("BATON_YIELD_SLICE_US", "250")]).yield_slice_us(),
        250
    );
    assert_eq!(cfg(&[]).run_slice_us, None);
    assert_eq!(
        cfg(&[("BATON_RUN_SLICE_US", "300")]).run_slice_us,
        Some(300)
    );
}

#[test]
fn defaults_when_nothing_is_set() {
    let c = cfg(&[]);
    assert_eq!(c, AgentConfig::default());
    assert!(c.warnings().is_empty());
}

#[test]
fn baton_names_and_xsched_aliases() {
    let c = cfg(&[
        ("BATON_PRIORITY", "10"),
        ("BATON_LEVEL", "2"),
        ("BATON_THRESHOLD", "4"),
        ("BATON_BATCH", "2"),
        ("BATON_SCHEDULER", "global"),
        ("BATON_POLICY", "HPF"),
        ("BATON_CUDA_LIB", "/usr/lib/libcuda.so.1"),
        ("BATON_ENABLE", "off"),
        ("BATON_UTILIZATION", "30%"),
        ("BATON_DEADLINE_US", "2500"),
        ("BATON_KEEP_WINDOW", "on"),
        ("BATON_MAX_BUFFERED", "64"),
        ("BATON_YIELD_SLICE_US", "5"),
        ("BATON_SMS", "112"),
        ("BATON_STALL_REPORT_S", "5"),
        ("BATON_PROFILE", "on"),
        ("BATON_COMMAND_TIME", "off"),
    ]);
    assert!(c.profile && !AgentConfig::default().profile);
    assert!(!c.command_time && AgentConfig::default().command_time);
    assert_eq!((c.sms, c.stall_report_s), (Some(112), Some(5)));
    assert_eq!(c.priority.get(), 10);
    assert_eq!((c.max_buffered, c.yield_slice_us()), (64, 5));
    assert!(c.keep_window && !AgentConfig::default().keep_window);
    assert_eq!(c.utilization, Some(30));
    assert_eq!(c.deadline, Some(Nanos::from_micros(2500)));
    assert_eq!(
        c.process_hints(),
        vec![
            Hint::Priority(WirePriority(10)),
            Hint::Utilization { percent: 30 },
            Hint::Deadline {
                deadline_ns: 2_500_000
            }
        ]
    );
    assert!(AgentConfig::default().process_hints().is_empty());
    assert_eq!(c.level, Level::L2);
    assert_eq!(c.launch, LaunchConfig::new(4, 2).unwrap());
    assert_eq!(c.scheduler, SchedulerMode::Global);
    assert_eq!(c.policy, "hpf");
    assert_eq!(AgentConfig::default().policy, "hpf");
    assert!(!c.enabled);
    assert!(c.warnings().is_empty(), "{:?}", c.warnings());

    let x = cfg(&[
        ("XSCHED_AUTO_XQUEUE_PRIORITY", "-3"),
        ("XSCHED_AUTO_XQUEUE_LEVEL", "3"),
        ("XSCHED_AUTO_XQUEUE_THRESHOLD", "1"),
        ("XSCHED_AUTO_XQUEUE_BATCH_SIZE", "1"),
        ("XSCHED_SCHEDULER", "APP"),
        ("XSCHED_CUDA_LIB", "/opt/libcuda.so.1"),
    ]);
    assert_eq!(x.priority.get(), -3);
    assert_eq!(x.level, Level::L3);
    assert_eq!(x.launch, LaunchConfig::new(1, 1).unwrap());
    assert_eq!(x.scheduler, SchedulerMode::App);
    assert!(x.warnings().is_empty(), "{:?}", x.warnings());
    // BATON_* wins over the alias.
    let both = cfg(&[
        ("BATON_PRIORITY", "5"),
        ("XSCHED_AUTO_XQUEUE_PRIORITY", "7"),
    ]);
    assert_eq!(both.priority.get(), 5);
    // XSCHED_POLICY selects the local scheduler, as in XSched.
    let p = cfg(&[("XSCHED_SCHEDULER", "GLB"), ("XSCHED_POLICY", "HPF")]);
    assert_eq!(p.scheduler, SchedulerMode::Local);
}

#[test]
fn invalid_values_warn_once_each_and_keep_the_default() {
    let c = cfg(&[
        ("BATON_PRIORITY", "1000"),
        ("BATON_LEVEL", "9"),
        ("BATON_THRESHOLD", "8"),
        ("BATON_BATCH", "8"),
        ("BATON_SCHEDULER", "cluster"),
        ("BATON_POLICY", "fastest"),
        ("BATON_CUDA_LIB", "libcuda.so.1"),
        ("BATON_ENABLE", "maybe"),
        ("BATON_UTILIZATION", "0"),
        ("BATON_DEADLINE_US", "soon"),
        ("BATON_KEEP_WINDOW", "sometimes"),
        ("BATON_MAX_BUFFERED", "0"),
        ("BATON_YIELD_SLICE_US", "forever"),
        ("BATON_SMS", "0"),
        ("BATON_STALL_REPORT_S", "0"),
    ]);
    assert_eq!((c.sms, c.stall_report_s), (None, None));
    let d = AgentConfig::default();
    assert!(!c.keep_window);
    assert_eq!(c.max_buffered, baton_core::DEFAULT_MAX_BUFFERED);
    assert_eq!(
        (
            c.priority,
            c.level,
            c.launch,
            c.scheduler,
            &c.policy,
            &c.cuda_lib,
            c.enabled
        ),
        (
            d.priority,
            d.level,
            d.launch,
            d.scheduler,
            &d.policy,
            &d.cuda_lib,
            d.enabled
        )
    );
    assert_eq!((c.utilization, c.deadline), (None, None));
    // Fourteen settings, fourteen lines: threshold and batch are judged together.
    assert_eq!(c.warnings().len(), 14, "{:#?}", c.warnings());
    for w in c.warnings() {
        assert!(w.starts_with("baton: ignoring"), "{w}");
        assert!(w.contains("using"), "{w}");
    }
    let only_threshold = cfg(&[("BATON_THRESHOLD", "4")]);
    assert_eq!(only_threshold.launch, LaunchConfig::new(4, 3).unwrap());
}

#[test]
fn every_variable_read_is_in_the_table_and_every_entry_is_read() {
    // With nothing set, every setting is looked up by its name, then by its alias.
    let asked = std::cell::RefCell::new(Vec::<String>::new());
    AgentConfig::from_lookup(|n| {
        asked.borrow_mut().push(n.to_string());
        None
    });
    let asked: Vec<String> = asked
        .into_inner()
        .into_iter()
        .filter(|n| n.starts_with("BATON_") || n.starts_with("XSCHED_"))
        .collect();
    let table: Vec<&str> = AgentConfig::SETTINGS
        .iter()
        .flat_map(|s| std::iter::once(s.name).chain(s.alias))
        .collect();
    for n in &asked {
        assert!(
            table.contains(&n.as_str()),
            "{n} is read but not in SETTINGS"
        );
    }
    for n in &table {
        assert!(
            asked.iter().any(|a| a == n),
            "{n} is in SETTINGS but never read"
        );
    }
    assert_eq!(asked.len(), table.len(), "each read once: {asked:?}");
}

#[test]
fn the_table_names_each_variable_once() {
    for (i, s) in AgentConfig::SETTINGS.iter().enumerate() {
        assert!(s.name.starts_with("BATON_"), "{}", s.name);
        assert!(s.alias.is_none_or(|a| a.starts_with("XSCHED_")), "{s:?}");
        for t in &AgentConfig::SETTINGS[i + 1..] {
            assert_ne!(s.name, t.name);
            assert!(s.alias.is_none() || s.alias != t.alias, "{s:?} {t:?}");
        }
    }
}

#[test]
fn the_table_holds_the_defaults_the_settings_use() {
    let default = |name: &str| {
        AgentConfig::SETTINGS
            .iter()
            .find(|s| s.name == name)
            .unwrap()
            .default
            .to_string()
    };
    let d = AgentConfig::default();
    let on = |b: bool| if b { "on" } else { "off" };
    assert_eq!(default("BATON_PRIORITY"), d.priority.to_string());
    assert_eq!(default("BATON_LEVEL"), d.level.number().to_string());
    assert_eq!(default("BATON_THRESHOLD"), d.launch.threshold().to_string());
    assert_eq!(default("BATON_BATCH"), d.launch.batch().to_string());
    assert_eq!(default("BATON_MAX_BUFFERED"), d.max_buffered.to_string());
    assert_eq!(
        default("BATON_YIELD_SLICE_US"),
        d.yield_slice_us().to_string()
    );
    assert_eq!(
        default("BATON_LEAD_SLICE_US"),
        d.lead_slice_us().to_string()
    );
    assert_eq!(
        default("BATON_INFLIGHT_US"),
        d.inflight_budget_us().to_string()
    );
    assert_eq!(default("BATON_ENABLE"), on(d.enabled));
    assert_eq!(default("BATON_KEEP_WINDOW"), on(d.keep_window));
    assert_eq!(default("BATON_EARLY_REFILL"), on(d.early_refill));
    assert_eq!(default("BATON_L3_OFF"), on(d.l3_off));
    assert_eq!(default("BATON_COMMAND_TIME"), on(d.command_time));
    assert_eq!(default("BATON_PROFILE"), on(d.profile));
    assert_eq!(default("BATON_SCHEDULER"), d.scheduler.to_string());
    assert_eq!(default("BATON_POLICY"), d.policy);
    assert_eq!(default("BATON_YIELD_SMS"), SmShare::DEFAULT.to_string());
    // How the user documentation writes them.
    assert_eq!(LEAD_SLICE_US.default.documented(), " 10000");
    assert_eq!(ENABLE.default.documented(), " `on`");
    assert_eq!(YIELD_SMS.default.documented(), " `85%`");
    assert_eq!(RUN_SLICE_US.default.documented(), ": the driver's");
}

#[test]
fn every_warning_says_it_comes_from_baton() {
    let bad = cfg(&[
        ("BATON_MPS", "sometimes"),
        ("BATON_YIELD", "sometimes"),
        ("BATON_THRESHOLD", "lots"),
    ]);
    assert_eq!(bad.warnings().len(), 3, "{:?}", bad.warnings());
    for w in bad.warnings() {
        assert!(w.starts_with("baton: "), "{w}");
    }
}

#[test]
fn a_process_under_mps_says_it_shares_the_gpus_context_and_a_time_sliced_one_does_not() {
    let shared = |pairs: &[(&str, &str)]| cfg(pairs).process_hints().contains(&Hint::SharedContext);
    assert!(shared(&[("BATON_MPS", "on")]));
    assert!(shared(&[("BATON_MPS", "on"), ("BATON_YIELD", "off")]));
    assert!(!shared(&[("BATON_MPS", "off")]));
}
