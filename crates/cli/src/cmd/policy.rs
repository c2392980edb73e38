//! `baton policy`: the daemon's policy (show or switch), and every policy Baton offers.

use std::path::Path;
use std::process::ExitCode;

use anyhow::bail;
use baton_protocol::{PolicyParam, Reply, Request};
use clap::{Args, Subcommand};

use crate::client::Client;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PolicyArgs {
    #[command(subcommand)]
    action: Option<PolicyAction>,
    /// Switch the daemon to this policy (queues and hints are kept). Without it, show the
    /// policy in force.
    #[arg(value_name = "NAME")]
    name: Option<String>,
    /// The policy's parameters, KEY=VALUE.
    #[arg(value_name = "KEY=VALUE", requires = "name")]
    params: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum PolicyAction {
    /// List every policy with one line of description (no daemon needed).
    List,
    /// Show what a policy does, the hints it reads (with their ranges) and what it promises
    /// (no daemon needed).
    Show {
        /// The policy's name (see `baton policy list`).
        name: String,
    },
}

pub fn run(args: PolicyArgs, socket: Option<&Path>) -> anyhow::Result<ExitCode> {
    match args.action {
        Some(PolicyAction::List) => {
            let catalog = baton_policies::catalog();
            let width = catalog.iter().map(|p| p.name.len()).max().unwrap_or(0);
            for p in catalog {
                println!("{:<width$}  {}", p.name, p.description);
            }
            return Ok(ExitCode::SUCCESS);
        }
        Some(PolicyAction::Show { name }) => {
            show(&name)?;
            return Ok(ExitCode::SUCCESS);
        }
        None => {}
    }
    let mut c = Client::connect(socket)?;
    match args.name {
        Some(name) => {
            let params = args
                .params
                .iter()
                .map(|kv| match kv.split_once('=') {
                    Some((k, v)) => Ok(PolicyParam {
                        key: k.to_string(),
                        value: v.to_string(),
                    }),
                    None => Err(super::Exit::usage(format!(
                        "policy parameter {kv:?} must be KEY=VALUE"
                    ))),
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            c.done(&Request::SetPolicy {
                name: name.to_ascii_lowercase(),
                params,
            })?;
            eprintln!("baton: policy is now {}", name.to_ascii_lowercase());
        }
        None => match c.request(&Request::GetPolicy)? {
            Reply::Policy(p) => {
                let params: Vec<String> = p
                    .params
                    .iter()
                    .map(|x| format!("{}={}", x.key, x.value))
                    .collect();
                println!("{} {}", p.current, params.join(" "));
                for e in &p.available {
                    let mark = if e.name == p.current { '*' } else { ' ' };
                    println!("{mark} {:<8} {}", e.name, e.description);
                }
            }
            r => bail!("unexpected answer from the daemon: {}", r.name()),
        },
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what the policy `name` does, reads and promises.
fn show(name: &str) -> anyhow::Result<()> {
    let p = baton_policies::registry::info(name)?;
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
    Ok(())
}
