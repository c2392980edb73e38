//! The GPU demo's report: the clients' results as a [`DemoSummary`], and as a table.

use super::worker::{BeResult, HpResult};
use crate::report::{BE_IDLE_SHARE_TARGET, HP_P99_TARGET};
use crate::{DemoDevice, DemoFigures, DemoSummary, Phase};

/// The phase's name in the GPU demo's table and progress.
pub fn phase_label(phase: Phase) -> &'static str {
    match phase {
        Phase::HpAlone => "HP alone",
        Phase::BeAlone => "BE alone",
        Phase::Native => "native",
        Phase::Baton => "Baton",
    }
}

/// The report of the four phases: HP alone, BE alone, both natively, both under Baton.
pub fn summary(
    hp_alone: &HpResult,
    be_alone: &BeResult,
    native: (&HpResult, &BeResult),
    baton: (&HpResult, &BeResult),
) -> DemoSummary {
    DemoSummary {
        schema: DemoSummary::SCHEMA.into(),
        device: DemoDevice::Gpu,
        figures: DemoFigures {
            hp_alone_p50_us: hp_alone.p50_us,
            hp_alone_p99_us: hp_alone.p99_us,
            hp_native_p50_us: native.0.p50_us,
            hp_native_p99_us: native.0.p99_us,
            hp_baton_p50_us: baton.0.p50_us,
            hp_baton_p99_us: baton.0.p99_us,
            be_alone_tput: be_alone.throughput,
            be_native_tput: native.1.throughput,
            be_baton_tput: baton.1.throughput,
            hp_busy_fraction: hp_alone.busy_fraction,
        },
        simulated: None,
    }
}

impl DemoFigures {
    /// HP p99 under Baton over HP p99 alone.
    pub fn hp_baton_p99_ratio(&self) -> f64 {
        self.hp_baton_p99_us / self.hp_alone_p99_us.max(1e-9)
    }

    /// The share of the device time HP leaves idle that BE used under Baton (0 when HP leaves
    /// none).
    pub fn be_idle_share(&self) -> f64 {
        let left = self.be_alone_tput.max(1e-9) * (1.0 - self.hp_busy_fraction);
        if left > 0.0 {
            self.be_baton_tput / left
        } else {
            0.0
        }
    }

    /// Whether Baton met both of the demo's targets (what `baton demo --check` asks).
    pub fn meets_targets(&self) -> bool {
        self.hp_baton_p99_ratio() <= HP_P99_TARGET && self.be_idle_share() >= BE_IDLE_SHARE_TARGET
    }
}

/// The report as a table, like the simulated demo's; `name` is the GPU's.
pub fn table(name: &str, f: &DemoFigures) -> String {
    let a99 = f.hp_alone_p99_us.max(1e-9);
    let a50 = f.hp_alone_p50_us.max(1e-9);
    let be = f.be_alone_tput.max(1e-9);
    let mut s = format!("Baton demo on {name}\n\n");
    s += "              HP p50        HP p99        BE throughput (GPU-s/s)\n";
    for (phase, p50, p99, tput) in [
        (Phase::HpAlone, f.hp_alone_p50_us, f.hp_alone_p99_us, None),
        (
            Phase::Native,
            f.hp_native_p50_us,
            f.hp_native_p99_us,
            Some(f.be_native_tput),
        ),
        (
            Phase::Baton,
            f.hp_baton_p50_us,
            f.hp_baton_p99_us,
            Some(f.be_baton_tput),
        ),
    ] {
        let label = phase_label(phase);
        let tput = match tput {
            None => String::from("–"),
            Some(t) => format!("{t:.2} ({:.0} % of alone)", 100.0 * t / be),
        };
        s += &format!(
            "{label:<12} {:>8.0} µs ×{:<4.2} {:>8.0} µs ×{:<4.2} {tput}\n",
            p50,
            p50 / a50,
            p99,
            p99 / a99
        );
    }
    s += &format!(
        "\nBE alone: {:.2} GPU-s/s; HP keeps the GPU busy {:.0} % of the time when alone.\n",
        f.be_alone_tput,
        100.0 * f.hp_busy_fraction
    );
    // The simulated demo's targets, said as plainly here.
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    let r = f.hp_baton_p99_ratio();
    s += &format!(
        "HP p99 under Baton: ×{r:.2} of alone (target ≤ ×{HP_P99_TARGET}: {}).\n",
        verdict(r <= HP_P99_TARGET)
    );
    let share = f.be_idle_share();
    s += &format!(
        "BE under Baton used {:.0} % of the GPU time HP leaves (target ≥ {:.0} %: {}).\n",
        100.0 * share,
        100.0 * BE_IDLE_SHARE_TARGET,
        verdict(share >= BE_IDLE_SHARE_TARGET)
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp(p50_us: f64, p99_us: f64, busy_fraction: f64) -> HpResult {
        HpResult {
            schema: HpResult::SCHEMA.into(),
            requests: 100,
            p50_us,
            p99_us,
            busy_fraction,
        }
    }

    fn be(throughput: f64) -> BeResult {
        BeResult {
            schema: BeResult::SCHEMA.into(),
            kernels: 10,
            throughput,
            iters_per_us: 1.0,
        }
    }

    fn h100() -> DemoSummary {
        summary(
            &hp(2090.0, 2353.0, 0.4),
            &be(1.0),
            (&hp(4431.0, 7107.0, 0.5), &be(0.58)),
            (&hp(2319.0, 2991.0, 0.4), &be(0.52)),
        )
    }

    #[test]
    fn the_summary_has_the_figures_every_demo_reports() {
        let s = h100();
        let v = serde_json::to_value(&s).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "be_alone_tput",
                "be_baton_tput",
                "be_native_tput",
                "device",
                "hp_alone_p50_us",
                "hp_alone_p99_us",
                "hp_baton_p50_us",
                "hp_baton_p99_us",
                "hp_busy_fraction",
                "hp_native_p50_us",
                "hp_native_p99_us",
                "schema",
            ]
        );
        assert_eq!(v["device"], "gpu");
        assert_eq!(v["hp_native_p99_us"], 7107.0);
        assert_eq!(v["be_baton_tput"], 0.52);
        assert_eq!(v["hp_busy_fraction"], 0.4);
        let back: DemoSummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
        assert!(back.simulated.is_none());
    }

    #[test]
    fn the_table_shows_each_phase_against_hp_alone() {
        assert_eq!(
            table("NVIDIA H100 80GB HBM3", &h100().figures),
            "Baton demo on NVIDIA H100 80GB HBM3\n\
             \n              HP p50        HP p99        BE throughput (GPU-s/s)\n\
             HP alone         2090 µs ×1.00     2353 µs ×1.00 –\n\
             native           4431 µs ×2.12     7107 µs ×3.02 0.58 (58 % of alone)\n\
             Baton            2319 µs ×1.11     2991 µs ×1.27 0.52 (52 % of alone)\n\
             \nBE alone: 1.00 GPU-s/s; HP keeps the GPU busy 40 % of the time when alone.\n\
             HP p99 under Baton: ×1.27 of alone (target ≤ ×1.05: MISSED).\n\
             BE under Baton used 87 % of the GPU time HP leaves (target ≥ 90 %: MISSED).\n"
        );
        assert_eq!(phase_label(Phase::BeAlone), "BE alone");
    }

    #[test]
    fn the_targets_are_judged_from_the_figures() {
        // A GPU run's figures (docs/benchmarks/demo/README.md): HP misses its p99 target; BE
        // meets its share of HP's idle time.
        let missed = summary(
            &hp(2090.0, 2398.6, 0.42),
            &be(1.002),
            (&hp(4388.0, 7074.0, 0.5), &be(0.590)),
            (&hp(2316.0, 2579.6, 0.42), &be(0.5654)),
        )
        .figures;
        assert!((missed.hp_baton_p99_ratio() - 1.0755).abs() < 1e-3);
        assert!((missed.be_idle_share() - 0.9728).abs() < 1e-3);
        assert!(!missed.meets_targets());
        let met = DemoFigures {
            hp_baton_p99_us: 2450.0,
            ..missed.clone()
        };
        assert!(met.meets_targets());
        let starved = DemoFigures {
            be_baton_tput: 0.50,
            ..met.clone()
        };
        assert!(!starved.meets_targets());
        let always_busy = DemoFigures {
            hp_busy_fraction: 1.0,
            ..met
        };
        assert_eq!(always_busy.be_idle_share(), 0.0);
    }
}
