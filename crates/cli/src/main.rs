//! `baton`: the command-line face of Baton. This file is the CLI definition and glue; the work
//! happens in the library crates.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Baton shares one GPU between a latency-critical service and best-effort jobs: the service
/// keeps its standalone latency, the jobs use the rest, and nobody changes their code.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show what Baton does: an HP service and a BE flood on one device, alone, natively and
    /// under Baton, with latency and throughput side by side.
    Demo(cmd::demo::DemoArgs),
    /// Run a program with its GPU work scheduled by Baton (no code change needed).
    Run(cmd::run::RunArgs),
    /// Scheduling policies.
    Policy(cmd::policy::PolicyArgs),
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => cmd::demo::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Policy(args) => cmd::policy::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("baton: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr, filtered by `BATON_LOG` (e.g. `BATON_LOG=debug`); warnings by default.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("BATON_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
