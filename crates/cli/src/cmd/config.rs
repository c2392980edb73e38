//! `baton config (--queue Q | --pid P) [--level L] [--threshold T] [--batch B]`.

use std::path::Path;
use std::process::ExitCode;

use baton_core::{LaunchConfig, Level};
use baton_protocol::{LaunchWindow, Request, WireLevel};
use clap::Args;

use super::priority::TargetArgs;
use crate::client::Client;

#[derive(Debug, Args)]
pub struct ConfigArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// Preemption level 1, 2 or 3 (never above what the queue's hardware supports).
    #[arg(long, value_name = "L", value_parser = super::parse_level)]
    level: Option<Level>,
    /// Commands in flight.
    #[arg(long, value_name = "N")]
    threshold: Option<u32>,
    /// Commands between sync points (smaller than the threshold).
    #[arg(long, value_name = "N", requires = "threshold")]
    batch: Option<u32>,
}

pub fn run(args: ConfigArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    let launch = match args.threshold {
        None => None,
        Some(t) => {
            let b = args
                .batch
                .unwrap_or(LaunchConfig::DEFAULT_BATCH.min(t.saturating_sub(1).max(1)));
            Some(LaunchWindow::from(LaunchConfig::new(t, b).map_err(
                |e| super::Exit::usage(format!("--threshold/--batch: {e}")),
            )?))
        }
    };
    let level = args.level.map(WireLevel::from);
    if level.is_none() && launch.is_none() {
        return Err(super::Exit::usage(
            "nothing to change: give --level, --threshold (and --batch), or both",
        ));
    }
    let mut c = Client::connect(socket)?;
    c.done(&Request::SetConfig {
        target: args.target.target(),
        level,
        launch,
    })?;
    Ok(ExitCode::SUCCESS)
}
