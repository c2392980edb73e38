//! `baton demo`: the scheduler side by side with native sharing — on a real GPU when there is
//! one (`baton_demo::gpu`, with this binary's processes as its clients), otherwise on the
//! simulated device.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use baton_core::{LaunchConfig, Level, Nanos};
use baton_demo::gpu::{self, GpuPlan, WorkerRole};
use baton_demo::{Scenario, SpanRange, SpanRangeError, Trace};
use baton_sim::{SimConfig, TimeMode};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

/// Where the demo runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DemoDevice {
    /// A CUDA GPU if this machine has one and the run asks for none of --realtime, --trace and
    /// --check (they pick the simulated device: `--device gpu --check` judges a GPU run),
    /// otherwise the simulated device.
    Auto,
    /// The simulated device.
    Sim,
    /// The first CUDA GPU (fails if there is none).
    Gpu,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    device: DemoDevice,
    /// Internal: run one client of the GPU demo (hp or be).
    #[arg(long, hide = true, value_name = "ROLE")]
    gpu_worker: Option<String>,
    /// Internal: where a GPU demo client writes its result.
    #[arg(long, hide = true, value_name = "FILE")]
    worker_out: Option<PathBuf>,
    /// Internal: a GPU demo BE client creates this file once warmed up.
    #[arg(long, hide = true, value_name = "FILE")]
    ready_file: Option<PathBuf>,
    /// Internal: a GPU demo BE client stops once this file exists.
    #[arg(long, hide = true, value_name = "FILE")]
    stop_file: Option<PathBuf>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write a Perfetto / chrome://tracing timeline of each phase's start to FILE.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// How much of each phase's start goes into the trace, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 100.0)]
    trace_ms: f64,
    /// Run on the wall clock with live threads (default: virtual time, deterministic and fast).
    #[arg(long)]
    realtime: bool,
    /// Exit with status 3 if Baton misses its targets (HP p99 ≤ ×1.05, BE ≥ 90 % of HP's idle time).
    #[arg(long)]
    check: bool,
    /// Length of each phase in seconds [default: 10 in virtual time, 2 in real time, 5 on a
    /// GPU].
    #[arg(long, value_name = "S")]
    duration_s: Option<f64>,
    /// Kernels per HP request.
    #[arg(long, value_name = "N", default_value_t = 40)]
    hp_kernels: u32,
    /// HP kernel duration range in microseconds (LOW-HIGH).
    #[arg(long, value_name = "US", default_value = "20-80", value_parser = parse_us)]
    hp_kernel_us: SpanRange,
    /// One HP request every this many milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5.0)]
    hp_period_ms: f64,
    /// SMs each HP kernel asks for.
    #[arg(long, value_name = "N", default_value_t = 66)]
    hp_sms: u32,
    /// BE kernel duration range in milliseconds (LOW-HIGH).
    #[arg(long, value_name = "MS", default_value = "1-5", value_parser = parse_ms)]
    be_kernel_ms: SpanRange,
    /// SMs each BE kernel asks for.
    #[arg(long, value_name = "N", default_value_t = 132)]
    be_sms: u32,
    /// BE kernels kept queued at all times.
    #[arg(long, value_name = "N", default_value_t = 32)]
    be_depth: u32,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Level Baton suspends BE with: 1 (progressive launch), 2 (deactivate), 3 (interrupt)
    /// [default: the highest the device supports].
    #[arg(long, value_name = "L", value_parser = super::parse_level)]
    level: Option<Level>,
    /// At most this many commands of a queue in flight.
    #[arg(long, value_name = "N", default_value_t = LaunchConfig::DEFAULT_THRESHOLD)]
    threshold: u32,
    /// A sync point every this many commands.
    #[arg(long, value_name = "N", default_value_t = LaunchConfig::DEFAULT_BATCH)]
    batch: u32,
    /// The simulated device's highest level (1–3).
    #[arg(long, value_name = "L", default_value = "3")]
    device_level: Level,
    /// The simulated device's context time slice in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 2.0)]
    timeslice_ms: f64,
    /// The simulated device's context switch cost in microseconds.
    #[arg(long, value_name = "US", default_value_t = 25.0)]
    switch_us: f64,
    /// The simulated device's Level-3 interrupt latency in microseconds.
    #[arg(long, value_name = "US", default_value_t = 30.0)]
    interrupt_us: f64,
}

fn parse_us(s: &str) -> Result<SpanRange, SpanRangeError> {
    SpanRange::parse(s, Nanos::from_micros(1))
}

fn parse_ms(s: &str) -> Result<SpanRange, SpanRangeError> {
    SpanRange::parse(s, Nanos::from_millis(1))
}

/// A non-negative finite number of `unit`s as a span; the error names the flag.
fn span(flag: &str, v: f64, unit: Nanos) -> anyhow::Result<Nanos> {
    Nanos::from_f64_units(v, unit, 1e9)
        .ok_or_else(|| anyhow::anyhow!("invalid value {v} for {flag}: use a non-negative number"))
}

impl DemoArgs {
    fn gpu_plan(&self) -> GpuPlan {
        let us = |n: Nanos| n.0 / 1_000;
        GpuPlan {
            seconds: self.duration_s.unwrap_or(5.0),
            hp_kernels: self.hp_kernels,
            hp_kernel_us: (us(self.hp_kernel_us.low), us(self.hp_kernel_us.high)),
            hp_period_ms: self.hp_period_ms,
            be_kernel_us: (us(self.be_kernel_ms.low), us(self.be_kernel_ms.high)),
            be_depth: self.be_depth.min(64),
            seed: self.seed,
        }
    }

    fn scenario(&self) -> anyhow::Result<Scenario> {
        let ms = Nanos::from_millis(1);
        let us = Nanos::from_micros(1);
        let default_s = if self.realtime { 2.0 } else { 10.0 };
        let launch = LaunchConfig::new(self.threshold, self.batch)
            .map_err(|e| super::Exit::usage(format!("--threshold/--batch: {e}")))?;
        Ok(Scenario {
            hp_kernels: self.hp_kernels,
            hp_kernel: self.hp_kernel_us,
            hp_period: span("--hp-period-ms", self.hp_period_ms, ms)?,
            hp_sms: self.hp_sms,
            be_kernel: self.be_kernel_ms,
            be_sms: self.be_sms,
            be_depth: self.be_depth,
            duration: span(
                "--duration-s",
                self.duration_s.unwrap_or(default_s),
                Nanos::from_secs(1),
            )?,
            seed: self.seed,
            level: self.level,
            launch,
            device: SimConfig {
                timeslice: span("--timeslice-ms", self.timeslice_ms, ms)?,
                switch_cost: span("--switch-us", self.switch_us, us)?,
                interrupt_latency: span("--interrupt-us", self.interrupt_us, us)?,
                max_level: self.device_level,
                ..SimConfig::default()
            },
            trace_window: span("--trace-ms", self.trace_ms, ms)?,
            ..Scenario::default()
        })
    }
}

/// The demo's progress bar of `len` steps, showing `count` (an indicatif template piece);
/// hidden when the report is JSON.
fn progress(len: u64, count: &str, hidden: bool) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if hidden {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(&format!("{{prefix:>14}} [{{bar:30}}] {count}  {{msg}}"))
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar
}

/// The GPU demo: its report as a table or JSON.
fn run_gpu(args: &DemoArgs, name: &str) -> anyhow::Result<ExitCode> {
    let plan = args.gpu_plan();
    let bar = progress(4, "{pos}/{len}", args.json);
    bar.set_message(format!("{name}, {:.0} s per run", plan.seconds));
    let exe = std::env::current_exe().context("finding baton itself")?;
    let report = gpu::run(&plan, &exe, &mut |p| {
        bar.set_prefix(gpu::phase_label(p.phase));
        bar.set_position(p.index as u64);
    })?;
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", gpu::table(name, &report.figures));
    }
    if args.check && !report.figures.meets_targets() {
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    if let Some(role) = &args.gpu_worker {
        let plan = args.gpu_plan();
        let out = args
            .worker_out
            .as_deref()
            .ok_or_else(|| anyhow::anyhow!("--gpu-worker needs --worker-out"))?;
        match role.parse::<WorkerRole>()? {
            WorkerRole::Hp => gpu::hp_worker(&plan, out)?,
            WorkerRole::Be => gpu::be_worker(
                &plan,
                out,
                args.ready_file.as_deref(),
                args.stop_file.as_deref(),
            )?,
        }
        return Ok(ExitCode::SUCCESS);
    }
    let sim_only = args.realtime || args.trace.is_some() || args.check;
    let gpu = match args.device {
        DemoDevice::Sim => None,
        DemoDevice::Gpu => Some(gpu::available().ok_or_else(|| {
            anyhow::anyhow!("no CUDA GPU found (driver, cuInit, a device): use --device sim")
        })?),
        DemoDevice::Auto if sim_only => None,
        DemoDevice::Auto => gpu::available(),
    };
    if let Some(name) = gpu {
        match run_gpu(&args, &name) {
            Ok(code) => return Ok(code),
            Err(e) if args.device == DemoDevice::Auto => eprintln!(
                "baton: the demo on {name} failed: {e:#}; running it on the simulated device instead"
            ),
            Err(e) => return Err(e),
        }
    }
    let scenario = args.scenario()?;
    scenario.validate()?;
    let mode = if args.realtime {
        TimeMode::RealTime
    } else {
        TimeMode::Virtual
    };
    let bar = progress(1000, "{percent:>3}%", args.json);
    let mut trace = args.trace.as_ref().map(|_| Trace::new());
    let report = baton_demo::run(&scenario, mode, trace.as_mut(), &mut |p| {
        bar.set_prefix(p.phase.name());
        bar.set_message(format!("phase {}/{}", p.index + 1, p.count));
        let overall = (p.index as f64 + p.fraction) / p.count as f64;
        let permille = Nanos::from_f64_units(overall, Nanos(1_000), 1.0).unwrap_or_default();
        bar.set_position(permille.0);
    })?;
    bar.finish_and_clear();
    if let (Some(path), Some(trace)) = (&args.trace, &trace) {
        trace
            .write(path)
            .with_context(|| format!("cannot write the trace to {}", path.display()))?;
        if !args.json {
            eprintln!(
                "trace written to {} (open it in https://ui.perfetto.dev)",
                path.display()
            );
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.summary())?);
    } else {
        print!("{}", report.table());
    }
    if args.check && !report.meets_targets() {
        return Ok(ExitCode::from(3));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Demo {
        #[command(flatten)]
        args: DemoArgs,
    }

    fn parse(args: &[&str]) -> DemoArgs {
        Demo::try_parse_from(std::iter::once("demo").chain(args.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn the_gpu_plan_defaults_to_the_documented_story() {
        assert_eq!(
            parse(&[]).gpu_plan(),
            GpuPlan {
                seconds: 5.0,
                hp_kernels: 40,
                hp_kernel_us: (20, 80),
                hp_period_ms: 5.0,
                be_kernel_us: (1000, 5000),
                be_depth: 32,
                seed: 1,
            }
        );
        // The BE client keeps at most 64 kernels outstanding on a GPU.
        assert_eq!(parse(&["--be-depth", "500"]).gpu_plan().be_depth, 64);
    }

    #[test]
    fn a_worker_reads_back_the_plan_its_parent_gave() {
        let parent = parse(&[
            "--duration-s",
            "0.3",
            "--hp-kernels",
            "7",
            "--hp-kernel-us",
            "15-95",
            "--hp-period-ms",
            "2.5",
            "--be-kernel-ms",
            "0.5-2.25",
            "--be-depth",
            "9",
            "--seed",
            "42",
        ])
        .gpu_plan();
        let mut worker = vec!["--gpu-worker", "be", "--worker-out", "/tmp/x.json"];
        let flags = parent.args();
        worker.extend(flags.iter().map(String::as_str));
        let w = parse(&worker);
        assert_eq!(w.gpu_worker.as_deref(), Some("be"));
        assert_eq!(
            w.worker_out.as_deref(),
            Some(std::path::Path::new("/tmp/x.json"))
        );
        assert_eq!(w.gpu_plan(), parent);
        assert_eq!(parent.be_kernel_us, (500, 2250));
    }
}
