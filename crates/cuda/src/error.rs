//! The Result layer over driver status codes.

use std::fmt;

use baton_cuda_sys::CUresult;

/// A driver call failed (or its entry point is missing: `CUDA_ERROR_NOT_FOUND`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub struct DriverError {
    /// What the driver returned.
    pub code: CUresult,
    /// The driver function called.
    pub call: &'static str,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.code.name().unwrap_or("an unknown CUDA error");
        write!(f, "{} returned {name} ({})", self.call, self.code.0)
    }
}

impl From<DriverError> for baton_core::HwError {
    fn from(e: DriverError) -> Self {
        baton_core::HwError::Backend {
            backend: "cuda",
            code: i64::from(e.code.0),
            message: e.to_string(),
        }
    }
}

/// The CUDA driver library could not be opened.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LibraryError {
    /// The path given cannot be passed to the loader.
    #[error("the driver path {} contains a NUL byte", .0.display())]
    NulInPath(std::path::PathBuf),
    /// The dynamic loader refused it.
    #[error("cannot open the CUDA driver {name}: {why}")]
    Open {
        /// The name or path asked for.
        name: String,
        /// What the loader said.
        why: String,
    },
    /// It opened, but is not a CUDA driver: it exports no `cuInit`.
    #[error(
        "{name} is not a CUDA driver (it exports no cuInit): point BATON_CUDA_LIB at the \
         driver's libcuda.so.1, or unset it"
    )]
    NotADriver {
        /// The name or path asked for.
        name: String,
    },
}

/// `Ok` if `code` is `CUDA_SUCCESS`, otherwise the error naming `call`.
pub fn check(call: &'static str, code: CUresult) -> Result<(), DriverError> {
    if code.is_success() {
        Ok(())
    } else {
        Err(DriverError { code, call })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_call_and_the_code() {
        assert_eq!(check("cuInit", CUresult::SUCCESS), Ok(()));
        let e = check("cuLaunchKernel", CUresult::INVALID_VALUE).unwrap_err();
        assert_eq!(
            e.to_string(),
            "cuLaunchKernel returned CUDA_ERROR_INVALID_VALUE (1)"
        );
        let hw: baton_core::HwError = e.into();
        assert!(matches!(hw, baton_core::HwError::Backend { code: 1, .. }));
        let odd = DriverError {
            code: CUresult(12345),
            call: "cuX",
        };
        assert!(odd.to_string().contains("12345"));
    }
}
