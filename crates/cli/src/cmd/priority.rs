//! `baton priority (--pid P | --queue Q) N`.

use std::path::Path;
use std::process::ExitCode;

use baton_core::Priority;
use baton_protocol::{QueueRef, Request, Target, WirePriority};
use clap::Args;

use crate::client::Client;

/// A process or one of its queues.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct TargetArgs {
    /// A process (every queue of it), by pid as `baton list` shows it.
    #[arg(long, value_name = "PID")]
    pub pid: Option<u32>,
    /// One queue, as `baton list` shows it: PID:qN.
    #[arg(long, value_name = "PID:qN")]
    pub queue: Option<QueueRef>,
}

impl TargetArgs {
    pub fn target(&self) -> Target {
        match (self.pid, self.queue) {
            (_, Some(q)) => Target::Queue(q),
            (Some(pid), None) => Target::Process { pid },
            (None, None) => unreachable!("clap requires one of --pid and --queue"),
        }
    }
}

#[derive(Debug, Args)]
pub struct PriorityArgs {
    #[command(flatten)]
    target: TargetArgs,
    /// The priority, −100 to 100; higher runs first.
    #[arg(value_name = "N", allow_negative_numbers = true)]
    priority: i64,
}

pub fn run(args: PriorityArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    let p = Priority::new(args.priority).map_err(|e| super::Exit::usage(e.to_string()))?;
    let mut c = Client::connect(socket)?;
    c.done(&Request::SetPriority {
        target: args.target.target(),
        priority: WirePriority::from(p),
    })?;
    Ok(ExitCode::SUCCESS)
}
