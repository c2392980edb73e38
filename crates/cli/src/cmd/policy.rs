//! `baton policy`: the scheduling policies Baton offers.

use std::process::ExitCode;

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    action: PolicyAction,
}

#[derive(Debug, Subcommand)]
enum PolicyAction {
    /// List every policy with one line of description.
    List,
    /// Show what a policy does, the hints it reads (with their ranges) and what it promises.
    Show {
        /// The policy's name (see `baton policy list`).
        name: String,
    },
}

pub fn run(args: PolicyArgs) -> anyhow::Result<ExitCode> {
    match args.action {
        PolicyAction::List => {
            let catalog = baton_policies::catalog();
            let width = catalog.iter().map(|p| p.name.len()).max().unwrap_or(0);
            for p in catalog {
                println!("{:<width$}  {}", p.name, p.description);
            }
        }
        PolicyAction::Show { name } => {
            let p = baton_policies::registry::info(&name)?;
            println!("{}: {}", p.name, p.description);
            println!("reads:");
            for r in p.reads {
                println!("  - {r}");
            }
            let yes_no = |b: bool| if b { "yes" } else { "no" };
            println!("work-conserving per device: {}", yes_no(p.work_conserving));
            println!("starvation-free: {}", yes_no(p.starvation_free));
            println!(
                "as process units: process:{} (each process's queues run or stop together)",
                p.name
            );
            println!("details: docs/POLICIES.md#{}", p.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}
