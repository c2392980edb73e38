//! `baton-webhook`: the mutating admission webhook's server (see the `baton_webhook` crate and
//! docs/CLUSTER.md).

use std::path::PathBuf;
use std::process::ExitCode;

use baton_webhook::Injection;
use baton_webhook::server::{Server, tls_config};
use clap::Parser;

/// Adds the node's Baton directory and environment to pods labelled baton.dev/inject=true, as
/// a Kubernetes mutating admission webhook (POST /mutate, over HTTPS).
#[derive(Parser)]
#[command(name = "baton-webhook", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:8443")]
    listen: String,
    /// The certificate chain, PEM (a kubernetes.io/tls Secret's tls.crt).
    #[arg(long, value_name = "PATH")]
    tls_cert: PathBuf,
    /// The certificate's private key, PEM (the Secret's tls.key).
    #[arg(long, value_name = "PATH")]
    tls_key: PathBuf,
    /// Where Baton lives on the nodes (the Helm chart's hostDir).
    #[arg(long, value_name = "DIR", default_value = "/var/lib/baton")]
    host_dir: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BATON_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .init();
    let server = tls_config(&args.tls_cert, &args.tls_key)
        .and_then(|tls| Server::bind(&args.listen, tls, Injection::new(&args.host_dir)));
    let server = match server {
        Ok(s) => s,
        Err(e) => {
            eprintln!("baton-webhook: {e}");
            return ExitCode::FAILURE;
        }
    };
    match server.local_addr() {
        Ok(addr) => eprintln!("baton-webhook: listening on {addr}"),
        Err(e) => eprintln!("baton-webhook: listening ({e})"),
    }
    server.serve()
}
