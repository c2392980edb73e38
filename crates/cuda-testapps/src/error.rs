//! The one error type of the test apps.

use baton_cuda_sys::CUresult;

/// Why a test app failed. Each message says what was expected.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The driver library could not be opened.
    #[error("cannot open {library}: {reason} (is a libcuda.so.1 on LD_LIBRARY_PATH?)")]
    Load {
        /// The name passed to `dlopen`.
        library: String,
        /// `dlerror()`.
        reason: String,
    },
    /// A driver symbol could not be resolved.
    #[error("cannot resolve {symbol}: {how}")]
    Symbol {
        /// The symbol asked for.
        symbol: String,
        /// How it was asked for, and the answer.
        how: String,
    },
    /// A driver call returned an unexpected code.
    #[error("{call} returned {code}, expected {expected}")]
    Cuda {
        /// The driver function.
        call: &'static str,
        /// What it returned.
        code: CUresult,
        /// What the scenario expected.
        expected: CUresult,
    },
    /// A result computed on the device differs from the host's model.
    #[error("wrong result: {0}")]
    Mismatch(String),
    /// `argv[1]` names no scenario.
    #[error("unknown scenario {name:?}; known: {known}")]
    UnknownScenario {
        /// The name given.
        name: String,
        /// The scenarios there are, comma-separated.
        known: String,
    },
    /// An operating-system call failed.
    #[error("{call} failed: {source}")]
    Os {
        /// The call.
        call: &'static str,
        /// The error.
        source: std::io::Error,
    },
}

/// Fails with [`AppError::Mismatch`] unless `ok`.
pub fn ensure(ok: bool, what: impl FnOnce() -> String) -> Result<(), AppError> {
    if ok {
        Ok(())
    } else {
        Err(AppError::Mismatch(what()))
    }
}

/// Fails with [`AppError::Cuda`] unless `code` is `expected`.
pub fn expect_code(call: &'static str, code: CUresult, expected: CUresult) -> Result<(), AppError> {
    if code == expected {
        Ok(())
    } else {
        Err(AppError::Cuda {
            call,
            code,
            expected,
        })
    }
}
