//! How a probe fails, and the two checks every probe makes of the driver's answers.

use std::process::ExitStatus;

use baton_cuda_sys::CUresult;

use crate::DriverError;
use crate::rm::RmError;

/// A probe could not run to its end. Each message says which step failed and what the driver
/// or the system said.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// A driver call returned an error.
    #[error("{call} failed ({code:?})")]
    Call {
        /// The driver function called.
        call: &'static str,
        /// What it returned.
        code: CUresult,
    },
    /// The driver does not export a function the probe needs.
    #[error("the driver lacks {0}")]
    Missing(&'static str),
    /// The driver library could not be opened.
    #[error(transparent)]
    Library(#[from] crate::LibraryError),
    /// Module text handed to the driver lacks its terminating NUL.
    #[error("the PTX text is not NUL-terminated")]
    PtxNotTerminated,
    /// The Level-3 self-test runs without the interposer, which alone can say which channel
    /// group is whose.
    #[error("the interposer is not loaded in the self-test")]
    NoInterposer,
    /// A Baton object over the driver (a gate, a partition, a confined stream) failed.
    #[error("{what}: {cause}")]
    Driver {
        /// What was being done.
        what: &'static str,
        /// The driver's error.
        cause: DriverError,
    },
    /// A kernel launched through a confined stream failed.
    #[error("{0}")]
    Confined(DriverError),
    /// A resource-manager control on the channel group failed.
    #[error("{what}: {cause}")]
    Slice {
        /// What was being done.
        what: &'static str,
        /// What the resource manager said.
        cause: RmError,
    },
    /// A system call around the probe failed (starting the child, finding a file).
    #[error("{what}: {cause}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The system's error.
        cause: std::io::Error,
    },
    /// The Level-3 child ended without printing its answer.
    #[error("the self-test printed nothing (status {0})")]
    NoAnswer(ExitStatus),
    /// The Level-3 child's answer is not a report.
    #[error("the self-test's answer: {0}")]
    Answer(serde_json::Error),
    /// The Level-3 child's answer is a report of another version.
    #[error("the self-test's answer has schema {found:?}, not {expected:?}")]
    Schema {
        /// The schema this build reads.
        expected: &'static str,
        /// The schema the answer carries.
        found: String,
    },
    /// The Level-3 child ran and failed; its message.
    #[error("{0}")]
    Child(String),
}

/// `Ok` if the call succeeded, otherwise the error naming it.
pub(super) fn ck(call: &'static str, code: CUresult) -> Result<(), ProbeError> {
    if code == CUresult::SUCCESS {
        Ok(())
    } else {
        Err(ProbeError::Call { call, code })
    }
}

/// The entry point, or the error saying the driver lacks it.
pub(super) fn need<T>(f: Option<T>, name: &'static str) -> Result<T, ProbeError> {
    f.ok_or(ProbeError::Missing(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_step_and_the_cause() {
        assert!(ck("cuInit", CUresult::SUCCESS).is_ok());
        assert_eq!(
            ck("cuInit", CUresult::NO_DEVICE).unwrap_err().to_string(),
            "cuInit failed (CUDA_ERROR_NO_DEVICE(100))"
        );
        assert_eq!(
            ck("cuX", CUresult(12345)).unwrap_err().to_string(),
            "cuX failed (CUresult(12345))"
        );
        assert_eq!(
            need::<fn()>(None, "cuStreamQuery").unwrap_err().to_string(),
            "the driver lacks cuStreamQuery"
        );
        let gate = ProbeError::Driver {
            what: "the gate",
            cause: DriverError {
                code: CUresult::INVALID_VALUE,
                call: "cuMemHostAlloc",
            },
        };
        assert_eq!(
            gate.to_string(),
            "the gate: cuMemHostAlloc returned CUDA_ERROR_INVALID_VALUE (1)"
        );
        let slice = ProbeError::Slice {
            what: "reading the slice",
            cause: RmError::Status(0x1f),
        };
        assert!(
            slice.to_string().starts_with("reading the slice: "),
            "{slice}"
        );
    }
}
