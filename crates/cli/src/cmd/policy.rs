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
    }
    Ok(ExitCode::SUCCESS)
}
