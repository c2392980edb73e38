//! What Baton says inside someone else's process: logs when asked, and a few notices.
//!
//! Baton runs inside other programs, so it never writes to their stdout and logs nothing
//! unless asked: when `BATON_LOG` sets a filter, [`init`] installs a `tracing` subscriber that
//! writes to stderr (the process's global one, unless the application installed its own).
//! A few **notices** are for the user whether or not they asked for logs: Baton is not active
//! in this process, a `BATON_*` setting was ignored, a stall report they asked for. Without
//! `BATON_LOG` they are written to stderr as plain lines through a dispatcher private to
//! Baton, so the application's own `tracing` setup is left alone; with it they are log events
//! of target `baton::notice` like any other, so `BATON_LOG=off` silences them too.

use std::sync::OnceLock;

use tracing::Dispatch;

use crate::AgentConfig;

/// Where notices go.
enum Sink {
    /// Through whatever subscriber is the process's default (`BATON_LOG` is set).
    Logs,
    /// Plain lines on stderr through Baton's own dispatcher.
    Plain(Dispatch),
}

static SINK: OnceLock<Sink> = OnceLock::new();

fn plain() -> Sink {
    let subscriber = tracing_subscriber::fmt()
        .without_time()
        .with_level(false)
        .with_target(false)
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .finish();
    Sink::Plain(Dispatch::new(subscriber))
}

/// Sets up logging as `cfg` asks; the first call decides, later ones change nothing.
pub fn init(cfg: &AgentConfig) {
    SINK.get_or_init(|| match &cfg.log {
        Some(filter) => {
            // An application that installed its own subscriber keeps it; Baton's events then
            // go there.
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_ansi(false)
                .with_writer(std::io::stderr)
                .try_init();
            Sink::Logs
        }
        None => plain(),
    });
}

/// Tells the user `message` (one or more lines), as the module documentation says.
pub fn notice(message: &str) {
    match SINK.get_or_init(plain) {
        Sink::Logs => tracing::warn!(target: "baton::notice", "{message}"),
        Sink::Plain(d) => tracing::dispatcher::with_default(d, || {
            tracing::warn!(target: "baton::notice", "{message}");
        }),
    }
}
