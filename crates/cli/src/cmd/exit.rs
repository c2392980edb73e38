//! Exit codes other than 1, as shells and other command-line tools use them.

/// An error that calls for its own exit code; any other error exits 1.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    /// The exit code.
    pub code: u8,
    message: String,
}

impl Exit {
    /// A value or combination of options Baton refuses: 2, as for what the argument parser
    /// refuses itself.
    pub fn usage(message: impl Into<String>) -> anyhow::Error {
        Exit {
            code: 2,
            message: message.into(),
        }
        .into()
    }

    /// The program to run cannot be started: 127 when it is not found, 126 when it is found
    /// but cannot be executed (as `sh`, `env` and `timeout` report it), so that a caller can
    /// tell Baton's failure from the program's own exit status.
    pub fn cannot_run(program: &std::path::Path, err: &std::io::Error) -> anyhow::Error {
        let code = if err.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        Exit {
            code,
            message: format!("cannot run {}: {err}", program.display()),
        }
        .into()
    }

    /// The exit code `e` calls for.
    pub fn code_of(e: &anyhow::Error) -> u8 {
        e.downcast_ref::<Exit>().map_or(1, |x| x.code)
    }
}
