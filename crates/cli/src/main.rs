//! `baton`: the command-line face of Baton. This file is the CLI definition and glue; the work
//! happens in the library crates.

mod client;
mod cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Baton shares one GPU between a latency-critical service and best-effort jobs: the service
/// keeps its standalone latency, the jobs use the rest, and nobody changes their code.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, long_about = None)]
struct Cli {
    /// The daemon's socket [default: $BATON_SOCKET, else the per-user socket, else the
    /// system socket].
    #[arg(long, global = true, value_name = "PATH")]
    socket: Option<PathBuf>,
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
    /// Run the daemon that schedules every process's queues.
    Daemon(cmd::daemon::DaemonArgs),
    /// List scheduled processes and their queues.
    List(cmd::list::ListArgs),
    /// A live view of scheduled queues (q quits).
    Top(cmd::top::TopArgs),
    /// Set the priority of a process or a queue.
    Priority(cmd::priority::PriorityArgs),
    /// Give the scheduler a hint about a queue, a process, a device or everything.
    Hint(cmd::hint::HintArgs),
    /// Show or switch the daemon's policy; `baton policy list` lists them all.
    Policy(cmd::policy::PolicyArgs),
    /// Change a queue's (or a process's queues') level or launch window.
    Config(cmd::config::ConfigArgs),
    /// Record run/suspend spans and decisions for Perfetto / chrome://tracing.
    Trace(cmd::trace::TraceArgs),
    /// Check the driver, the interposer, the daemon and the levels each device supports.
    Doctor(cmd::doctor::DoctorArgs),
}

fn main() -> ExitCode {
    init_logging();
    let cli = Cli::parse();
    let socket = cli.socket.as_deref();
    let result = match cli.command {
        Command::Demo(args) => cmd::demo::run(args),
        Command::Run(args) => cmd::run::run(args, socket),
        Command::Daemon(args) => cmd::daemon::run(args, socket),
        Command::List(args) => cmd::list::run(args, socket),
        Command::Top(args) => cmd::top::run(args, socket),
        Command::Priority(args) => cmd::priority::run(args, socket),
        Command::Hint(args) => cmd::hint::run(args, socket),
        Command::Policy(args) => cmd::policy::run(args, socket),
        Command::Config(args) => cmd::config::run(args, socket),
        Command::Trace(args) => cmd::trace::run(args, socket),
        Command::Doctor(args) => cmd::doctor::run(args, socket),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("baton: error: {e:#}");
            ExitCode::from(cmd::Exit::code_of(&e))
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
