//! The Level-3 self-test: does shortening a context's channel-group time slice actually hand
//! the GPU to another context sooner, on this GPU and driver?
//!
//! `baton doctor` runs it in a child of itself with the interposer preloaded and scheduling
//! off (`BATON_ENABLE=off`, [`level3_in_child`]), so the interposer watches the driver create
//! two contexts and can say which compute channel group is whose
//! (`baton_compute_channel_group`, exported by the interposer). The child ([`level3`]) fills
//! the GPU from context A with long spin kernels and times a short kernel in context B, first
//! with A at libcuda's slice and then with A's slice shortened; it prints its
//! [`Level3Answer`] as one JSON line. Level 3 takes effect if B's wait drops to under half.

use std::ffi::c_void;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::ProbeError;
use super::kernels::{Context, Kernels};
use super::library::open_driver;
use crate::rm::{self, ChannelGroup, ComputeGroupOf, ExportedGroup, Ioctl};

/// The slice, in µs, the self-test shortens a context's to (`BATON_YIELD_SLICE_US`'s
/// default).
pub const DEFAULT_YIELD_US: u64 = 100;

/// Why the test could not measure: the interposer did not see the channel group.
const GROUP_NOT_SEEN: &str =
    "the context's compute channel group was not seen among the driver's calls";

/// What the Level-3 self-test saw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level3Report {
    /// [`Level3Report::SCHEMA`].
    pub schema: String,
    /// Whether the interposer knew the context's compute channel group.
    pub group_found: bool,
    /// Why nothing was measured, when the group was not found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The measurements, when the group was found.
    #[serde(flatten)]
    pub measured: Option<SliceMeasurement>,
}

/// Another context's short-kernel wait at two time slices of a busy context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SliceMeasurement {
    /// The busy context's channel group (its RM handle).
    pub channel_group: u32,
    /// libcuda's slice, in µs.
    pub normal_us: u64,
    /// The shortened slice as read back, in µs.
    pub yield_us: u64,
    /// The other context's median wait at the normal slice, in µs.
    pub wait_at_normal_us: f64,
    /// Its median wait at the shortened slice, in µs.
    pub wait_at_yield_us: f64,
    /// Whether Level 3 works here: the wait was long at the normal slice (over 300 µs) and
    /// dropped to under half.
    pub takes_effect: bool,
}

impl SliceMeasurement {
    /// The measurement, with the verdict.
    pub fn new(
        channel_group: u32,
        normal_us: u64,
        yield_us: u64,
        wait_at_normal_us: f64,
        wait_at_yield_us: f64,
    ) -> SliceMeasurement {
        SliceMeasurement {
            channel_group,
            normal_us,
            yield_us,
            wait_at_normal_us,
            wait_at_yield_us,
            takes_effect: wait_at_normal_us > 300.0 && wait_at_yield_us < 0.5 * wait_at_normal_us,
        }
    }
}

impl Level3Report {
    /// The document's schema.
    pub const SCHEMA: &'static str = "baton.selftest.level3/1";

    /// Nothing measured: the context's compute channel group was not seen.
    pub fn group_not_seen() -> Level3Report {
        Level3Report {
            schema: Self::SCHEMA.into(),
            group_found: false,
            why: Some(GROUP_NOT_SEEN.into()),
            measured: None,
        }
    }

    /// Measured.
    pub fn measured(m: SliceMeasurement) -> Level3Report {
        Level3Report {
            schema: Self::SCHEMA.into(),
            group_found: true,
            why: None,
            measured: Some(m),
        }
    }

    /// Whether Level 3 works here.
    pub fn takes_effect(&self) -> bool {
        self.measured.as_ref().is_some_and(|m| m.takes_effect)
    }
}

/// What the Level-3 child prints: its report, or why it has none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Level3Answer {
    /// The test ran.
    Report(Level3Report),
    /// It failed.
    Failed(Level3Failure),
}

/// The Level-3 child's failure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level3Failure {
    /// [`Level3Report::SCHEMA`].
    pub schema: String,
    /// What went wrong.
    pub error: String,
}

impl From<Result<Level3Report, ProbeError>> for Level3Answer {
    fn from(r: Result<Level3Report, ProbeError>) -> Level3Answer {
        match r {
            Ok(report) => Level3Answer::Report(report),
            Err(e) => Level3Answer::Failed(Level3Failure {
                schema: Level3Report::SCHEMA.into(),
                error: e.to_string(),
            }),
        }
    }
}

impl Level3Answer {
    /// Reads the child's JSON line.
    pub fn parse(line: &str) -> Result<Level3Answer, ProbeError> {
        serde_json::from_str(line).map_err(ProbeError::Answer)
    }

    /// The report, or the child's error; an answer of another schema is an error.
    pub fn into_result(self) -> Result<Level3Report, ProbeError> {
        let schema = match &self {
            Level3Answer::Report(r) => &r.schema,
            Level3Answer::Failed(f) => &f.schema,
        };
        if schema != Level3Report::SCHEMA {
            return Err(ProbeError::Schema {
                expected: Level3Report::SCHEMA,
                found: schema.clone(),
            });
        }
        match self {
            Level3Answer::Report(r) => Ok(r),
            Level3Answer::Failed(f) => Err(ProbeError::Child(f.error)),
        }
    }
}

/// B's short-kernel latency (µs, median of `n`) while A keeps the GPU full.
fn contended(a: &Kernels, b: &Kernels, n: usize) -> Result<f64, ProbeError> {
    // ~240 ms of A's work: more than the measurement takes.
    for _ in 0..12 {
        a.spin(20_000_000, 1024, 256)?;
    }
    std::thread::sleep(Duration::from_millis(20));
    let mut lat = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        b.spin(20_000, 1, 32)?;
        b.sync()?;
        lat.push(t0.elapsed().as_secs_f64() * 1e6);
        std::thread::sleep(Duration::from_millis(3));
    }
    a.sync()?;
    lat.sort_by(f64::total_cmp);
    Ok(lat[lat.len() / 2])
}

/// The self-test itself, on device `ordinal` of the driver at `cuda_lib` (or the one the
/// loader finds), shortening the slice to `yield_us`. Runs only usefully in a process under
/// the interposer (see the module documentation).
pub fn level3(
    ordinal: i32,
    cuda_lib: Option<&Path>,
    yield_us: u64,
) -> Result<Level3Report, ProbeError> {
    let d = open_driver(cuda_lib)?;
    let a = Context::primary(d, ordinal)?;
    let b = a.create_another()?;
    // SAFETY: looking up a symbol by name in the process.
    let sym = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"baton_compute_channel_group".as_ptr()) };
    if sym.is_null() {
        return Err(ProbeError::NoInterposer);
    }
    // SAFETY: the interposer exports this symbol with this signature.
    let group_of = unsafe { std::mem::transmute::<*mut c_void, ComputeGroupOf>(sym) };
    let mut g = ExportedGroup::default();
    // SAFETY: a live context and a valid out-pointer.
    if unsafe { group_of(a.raw(), &mut g) } != 0 {
        return Ok(Level3Report::group_not_seen());
    }
    let group = ChannelGroup::from(g);
    let slice = |what| move |cause| ProbeError::Slice { what, cause };
    let normal = rm::get_timeslice(&Ioctl, &group).map_err(slice("reading the slice"))?;
    let (a, b) = (Kernels::load(&a)?, Kernels::load(&b)?);
    // Warm both up (JIT, first launches).
    a.spin(1000, 1, 32)?;
    b.spin(1000, 1, 32)?;
    a.sync()?;
    b.sync()?;
    let at_normal = contended(&a, &b, 15)?;
    let shortened = rm::set_timeslice(&Ioctl, &group, yield_us)
        .and_then(|()| rm::get_timeslice(&Ioctl, &group))
        .map_err(slice("setting the slice"))?;
    let at_yield = contended(&a, &b, 15);
    let restored = rm::set_timeslice(&Ioctl, &group, normal);
    let at_yield = at_yield?;
    restored.map_err(slice("restoring the slice"))?;
    Ok(Level3Report::measured(SliceMeasurement::new(
        group.handle,
        normal,
        shortened,
        at_normal,
        at_yield,
    )))
}

/// Runs the self-test in a child: `command` (a program that runs [`level3`] and prints its
/// [`Level3Answer`] as the last line starting with `{`), with `interposer` preloaded and
/// scheduling off; the report, or why there is none.
pub fn level3_in_child(
    mut command: Command,
    interposer: &Path,
) -> Result<Level3Report, ProbeError> {
    command
        .env("LD_PRELOAD", interposer)
        .env("BATON_ENABLE", "off")
        .env_remove("BATON_LOG")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    let out = command.output().map_err(|cause| ProbeError::Io {
        what: "running the self-test",
        cause,
    })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or(ProbeError::NoAnswer(out.status))?;
    Level3Answer::parse(line)?.into_result()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured() -> Level3Report {
        Level3Report::measured(SliceMeasurement::new(7, 2000, 100, 1800.0, 150.0))
    }

    #[test]
    fn the_verdict_needs_a_long_wait_that_halves() {
        assert!(measured().takes_effect());
        assert!(!SliceMeasurement::new(7, 2000, 100, 250.0, 10.0).takes_effect);
        assert!(!SliceMeasurement::new(7, 2000, 100, 1800.0, 900.0).takes_effect);
        assert!(!Level3Report::group_not_seen().takes_effect());
    }

    #[test]
    fn reports_keep_their_json_shape() {
        assert_eq!(
            serde_json::to_string(&Level3Report::group_not_seen()).unwrap(),
            format!(
                r#"{{"schema":"baton.selftest.level3/1","group_found":false,"why":"{GROUP_NOT_SEEN}"}}"#
            )
        );
        let v = serde_json::to_value(measured()).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "channel_group",
                "group_found",
                "normal_us",
                "schema",
                "takes_effect",
                "wait_at_normal_us",
                "wait_at_yield_us",
                "yield_us"
            ]
        );
    }

    #[test]
    fn answers_round_trip_and_failures_become_errors() {
        for report in [measured(), Level3Report::group_not_seen()] {
            let line = serde_json::to_string(&Level3Answer::from(Ok(report.clone()))).unwrap();
            assert_eq!(
                Level3Answer::parse(&line).unwrap().into_result().unwrap(),
                report
            );
        }
        let failed = Level3Answer::from(Err(ProbeError::NoInterposer));
        let line = serde_json::to_string(&failed).unwrap();
        assert_eq!(
            line,
            r#"{"schema":"baton.selftest.level3/1","error":"the interposer is not loaded in the self-test"}"#
        );
        let e = Level3Answer::parse(&line)
            .unwrap()
            .into_result()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "the interposer is not loaded in the self-test"
        );
        let e = Level3Answer::parse(r#"{"schema":"baton.selftest.level3/9","error":"x"}"#)
            .unwrap()
            .into_result()
            .unwrap_err();
        assert!(matches!(e, ProbeError::Schema { .. }), "{e}");
        assert!(matches!(
            Level3Answer::parse(r#"{"error": "no schema"}"#),
            Err(ProbeError::Answer(_))
        ));
    }

    fn shell(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn the_child_is_read_from_its_last_json_line() {
        let line = serde_json::to_string(&Level3Answer::from(Ok(measured()))).unwrap();
        let script =
            format!("echo 'JIT noise'; echo '{{\"not\": \"this\"}}'; echo '{line}'; echo done");
        assert_eq!(
            level3_in_child(shell(&script), Path::new("")).unwrap(),
            measured()
        );
        let e = level3_in_child(
            shell("echo '{\"schema\":\"baton.selftest.level3/1\",\"error\":\"cuInit failed\"}'"),
            Path::new(""),
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "cuInit failed");
        let e = level3_in_child(shell("echo nothing; exit 3"), Path::new("")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the self-test printed nothing (status exit status: 3"),
            "{e}"
        );
        let e = level3_in_child(Command::new("/nonexistent/baton"), Path::new("")).unwrap_err();
        assert!(e.to_string().starts_with("running the self-test: "), "{e}");
    }

    #[test]
    fn the_child_runs_under_the_interposer_with_scheduling_off() {
        let line = serde_json::to_string(&Level3Answer::from(Ok(measured()))).unwrap();
        // The child sees the environment the self-test needs (LD_PRELOAD is an empty list
        // here: nothing to preload) and no BATON_LOG.
        let script = format!(
            "test \"$BATON_ENABLE\" = off && test -z \"${{BATON_LOG+set}}\" && \
             test \"${{LD_PRELOAD+set}}\" = set && echo '{line}'"
        );
        let mut c = shell(&script);
        c.env("BATON_LOG", "debug");
        assert_eq!(level3_in_child(c, Path::new("")).unwrap(), measured());
    }
}
