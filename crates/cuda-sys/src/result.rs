//! [`CUresult`]: the status every driver call returns.

use std::ffi::CStr;
use std::fmt;

/// The status code of a CUDA driver call (`CUresult` in `cuda.h`).
///
/// A transparent `u32`, so any value a driver returns is representable; the associated constants
/// name the codes Baton handles. [`CUresult::name`] and [`CUresult::description`] know the
/// names and messages of those codes (the ones `cuGetErrorName`/`cuGetErrorString` return).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct CUresult(pub u32);

/// One known code: its value, C name and message.
struct Known {
    code: CUresult,
    name: &'static CStr,
    description: &'static CStr,
}

macro_rules! codes {
    ($($(#[doc = $doc:literal])* $konst:ident = $value:literal, $name:literal, $desc:literal;)*) => {
        impl CUresult {
            $(
                $(#[doc = $doc])*
                pub const $konst: CUresult = CUresult($value);
            )*
        }

        const KNOWN: &[Known] = &[
            $(Known { code: CUresult($value), name: $name, description: $desc },)*
        ];
    };
}

codes! {
    /// The call succeeded.
    SUCCESS = 0, c"CUDA_SUCCESS", c"no error";
    /// An argument was outside its accepted range.
    INVALID_VALUE = 1, c"CUDA_ERROR_INVALID_VALUE", c"invalid argument";
    /// The allocation could not be satisfied.
    OUT_OF_MEMORY = 2, c"CUDA_ERROR_OUT_OF_MEMORY", c"out of memory";
    /// `cuInit` has not been called (successfully) in this process.
    NOT_INITIALIZED = 3, c"CUDA_ERROR_NOT_INITIALIZED", c"initialization error";
    /// The driver is shutting down.
    DEINITIALIZED = 4, c"CUDA_ERROR_DEINITIALIZED", c"driver shutting down";
    /// No CUDA-capable device was found.
    NO_DEVICE = 100, c"CUDA_ERROR_NO_DEVICE", c"no CUDA-capable device is detected";
    /// The device ordinal does not name a device.
    INVALID_DEVICE = 101, c"CUDA_ERROR_INVALID_DEVICE", c"invalid device ordinal";
    /// The module image is not valid for this driver.
    INVALID_IMAGE = 200, c"CUDA_ERROR_INVALID_IMAGE", c"device kernel image is invalid";
    /// No valid context is current, or the context handle is invalid.
    INVALID_CONTEXT = 201, c"CUDA_ERROR_INVALID_CONTEXT", c"invalid device context";
    /// The PTX could not be compiled.
    INVALID_PTX = 218, c"CUDA_ERROR_INVALID_PTX", c"a PTX JIT compilation failed";
    /// A handle (stream, event, function, …) is not valid.
    INVALID_HANDLE = 400, c"CUDA_ERROR_INVALID_HANDLE", c"invalid resource handle";
    /// The operation is not allowed in the object's current state.
    ILLEGAL_STATE = 401, c"CUDA_ERROR_ILLEGAL_STATE", c"the operation cannot be performed in the present state";
    /// A named symbol was not found.
    NOT_FOUND = 500, c"CUDA_ERROR_NOT_FOUND", c"named symbol not found";
    /// Asynchronous work has not completed yet (not an error).
    NOT_READY = 600, c"CUDA_ERROR_NOT_READY", c"device not ready";
    /// A kernel or copy touched an invalid device address; the context is unusable.
    ILLEGAL_ADDRESS = 700, c"CUDA_ERROR_ILLEGAL_ADDRESS", c"an illegal memory access was encountered";
    /// A device access was not aligned to its size.
    MISALIGNED_ADDRESS = 716, c"CUDA_ERROR_MISALIGNED_ADDRESS", c"misaligned address";
    /// A kernel failed while executing.
    LAUNCH_FAILED = 719, c"CUDA_ERROR_LAUNCH_FAILED", c"unspecified launch failure";
    /// The operation is not permitted.
    NOT_PERMITTED = 800, c"CUDA_ERROR_NOT_PERMITTED", c"operation not permitted";
    /// The operation is not supported on this system or device.
    NOT_SUPPORTED = 801, c"CUDA_ERROR_NOT_SUPPORTED", c"operation not supported";
    /// The operation is not permitted while a stream is capturing.
    STREAM_CAPTURE_UNSUPPORTED = 900, c"CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", c"operation not permitted when stream is capturing";
    /// The capture sequence was invalidated by an earlier error.
    STREAM_CAPTURE_INVALIDATED = 901, c"CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", c"operation failed due to a previous error during capture";
    /// Two independent capture sequences would have been merged.
    STREAM_CAPTURE_MERGE = 902, c"CUDA_ERROR_STREAM_CAPTURE_MERGE", c"operation would have resulted in a merge of two independent capture sequences";
    /// The capture was not begun on this stream.
    STREAM_CAPTURE_UNMATCHED = 903, c"CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", c"capture was not initiated in this stream";
    /// A dependency crossed the boundary of a capture sequence.
    STREAM_CAPTURE_ISOLATION = 905, c"CUDA_ERROR_STREAM_CAPTURE_ISOLATION", c"operation would create a dependency on uncaptured work in another stream";
    /// The legacy stream would have depended on a capturing stream.
    STREAM_CAPTURE_IMPLICIT = 906, c"CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", c"operation would make the legacy stream depend on a capturing blocking stream";
    /// The event was last recorded in a capture: it stands for no work that runs.
    CAPTURED_EVENT = 907, c"CUDA_ERROR_CAPTURED_EVENT", c"operation not permitted on an event last recorded in a capturing stream";
    /// A capture was ended from a thread other than the one that began it.
    STREAM_CAPTURE_WRONG_THREAD = 908, c"CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", c"attempt to terminate a thread-local capture sequence from another thread";
    /// An unknown internal error.
    UNKNOWN = 999, c"CUDA_ERROR_UNKNOWN", c"unknown error";
}

impl CUresult {
    /// Whether this is [`CUresult::SUCCESS`].
    #[must_use]
    pub const fn is_success(self) -> bool {
        self.0 == 0
    }

    /// The C name of the code (`"CUDA_ERROR_INVALID_VALUE"`), if it is one of the codes above.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        self.name_c().and_then(|name| name.to_str().ok())
    }

    /// The C name as a NUL-terminated string, as `cuGetErrorName` returns it.
    #[must_use]
    pub fn name_c(self) -> Option<&'static CStr> {
        KNOWN
            .iter()
            .find(|known| known.code == self)
            .map(|known| known.name)
    }

    /// The message of the code (`"invalid argument"`), as `cuGetErrorString` returns it.
    #[must_use]
    pub fn description(self) -> Option<&'static CStr> {
        KNOWN
            .iter()
            .find(|known| known.code == self)
            .map(|known| known.description)
    }
}

impl fmt::Debug for CUresult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}({})", self.0),
            None => write!(f, "CUresult({})", self.0),
        }
    }
}

impl fmt::Display for CUresult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "CUDA error {}", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_cuda_h() {
        assert_eq!(CUresult::SUCCESS.0, 0);
        assert_eq!(CUresult::NOT_READY.0, 600);
        assert_eq!(CUresult::LAUNCH_FAILED.0, 719);
        assert_eq!(CUresult::STREAM_CAPTURE_INVALIDATED.0, 901);
        assert_eq!(CUresult::UNKNOWN.0, 999);
    }

    #[test]
    fn names_are_known_and_unknown_codes_have_none() {
        assert_eq!(
            CUresult::INVALID_VALUE.name(),
            Some("CUDA_ERROR_INVALID_VALUE")
        );
        assert_eq!(CUresult::SUCCESS.name(), Some("CUDA_SUCCESS"));
        assert_eq!(CUresult(12345).name(), None);
        assert_eq!(format!("{}", CUresult(12345)), "CUDA error 12345");
        assert_eq!(
            format!("{:?}", CUresult::NOT_FOUND),
            "CUDA_ERROR_NOT_FOUND(500)"
        );
    }

    #[test]
    fn every_code_is_listed_once() {
        for (i, a) in KNOWN.iter().enumerate() {
            for b in &KNOWN[i + 1..] {
                assert_ne!(a.code, b.code, "{:?} listed twice", a.name);
            }
        }
    }
}
