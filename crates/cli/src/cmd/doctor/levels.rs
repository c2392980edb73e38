//! The levels and spatial sharing `baton doctor` claims per device, judged from what
//! `baton_cuda::probe`'s self-tests report, with the sentence that says why. The Level-3
//! self-test runs in a child of `baton` (`doctor --self-test-level3 ORDINAL`) under the
//! interposer.

use std::path::Path;

use baton_cuda::Driver;
use baton_cuda::probe::{self, Device, Level2Report, Level3Report, ProbeError, SpatialReport};

use super::report::{LevelFindings, SelfTest, SpatialFindings};

/// Runs the Level-3 self-test for device `ordinal` in a child of `baton` with `interposer`
/// preloaded.
fn level3_in_child(
    ordinal: i32,
    interposer: &Path,
    cuda_lib: Option<&Path>,
) -> Result<Level3Report, ProbeError> {
    let exe = std::env::current_exe().map_err(|cause| ProbeError::Io {
        what: "finding baton itself",
        cause,
    })?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["doctor", "--self-test-level3", &ordinal.to_string()]);
    if let Some(l) = cuda_lib {
        cmd.args([std::ffi::OsStr::new("--cuda-lib"), l.as_os_str()]);
    }
    probe::level3_in_child(cmd, interposer)
}

/// Level 2's findings from its self-test's outcome (`None`: not tested).
pub(super) fn level2_findings(outcome: Option<Result<Level2Report, ProbeError>>) -> LevelFindings {
    let (supported, how, report) = match outcome {
        None => (
            false,
            "deactivation (stream-memory gates): not tested (--no-self-test)".to_string(),
            None,
        ),
        Some(Ok(r)) if r.takes_effect => (
            true,
            format!(
                "deactivation (stream-memory gates): self-test: a kernel behind a closed gate \
                 was held 50 ms and finished {:.0} µs after it opened",
                r.done_after_open_us
            ),
            Some(r),
        ),
        Some(Ok(r)) => (
            false,
            "deactivation (stream-memory gates): no effect in the self-test (a kernel \
                  behind a closed gate ran)"
                .into(),
            Some(r),
        ),
        Some(Err(e)) => (
            false,
            format!("deactivation (stream-memory gates): self-test failed: {e}"),
            None,
        ),
    };
    LevelFindings {
        level: 2,
        supported,
        how,
        self_test: report.map(SelfTest::Level2),
    }
}

/// Level 3's findings from its self-test's outcome (`None`: not tested).
pub(super) fn level3_findings(outcome: Option<Result<Level3Report, ProbeError>>) -> LevelFindings {
    let (supported, how, report) = match outcome {
        None => (
            false,
            "channel-group time slices: not tested (the self-test needs the interposer; \
                  skipped with --no-self-test)"
                .to_string(),
            None,
        ),
        Some(Ok(r)) => {
            let how = match (&r.measured, r.group_found) {
                (Some(m), _) if m.takes_effect => format!(
                    "channel-group time slices: self-test: another context's kernel waited {:.0} µs \
                     at libcuda's {} µs slice, {:.0} µs at {} µs",
                    m.wait_at_normal_us, m.normal_us, m.wait_at_yield_us, m.yield_us
                ),
                (_, false) => format!(
                    "channel-group time slices: {}",
                    r.why
                        .as_deref()
                        .unwrap_or("the channel group was not found")
                ),
                (m, true) => {
                    let (normal, shortened) = m
                        .as_ref()
                        .map_or((0.0, 0.0), |m| (m.wait_at_normal_us, m.wait_at_yield_us));
                    format!(
                        "channel-group time slices: no effect in the self-test (wait {normal:.0} µs \
                         at the normal slice, {shortened:.0} µs shortened)"
                    )
                }
            };
            (r.takes_effect(), how, Some(r))
        }
        Some(Err(e)) => (
            false,
            format!("channel-group time slices: self-test failed: {e}"),
            None,
        ),
    };
    LevelFindings {
        level: 3,
        supported,
        how,
        self_test: report.map(SelfTest::Level3),
    }
}

/// The levels a CUDA device supports. Level 1 needs nothing from the hardware. Level 3
/// (channel-group time slices) is claimed only if the self-test saw it take effect: with
/// another context filling the GPU, a short kernel's wait must drop to under half when that
/// context's slice is shortened (`probe::level3`). Level 2 (stream-memory gates) is claimed
/// only if a kernel behind a closed gate is held, and runs once it opens (`probe::level2`).
pub(super) fn levels(
    d: &'static Driver,
    device: i32,
    tests: bool,
    interposer: Option<&Path>,
    cuda_lib: Option<&Path>,
) -> Vec<LevelFindings> {
    let l2 = level2_findings(tests.then(|| probe::level2(d, device)));
    let l3 = level3_findings(interposer.map(|i| level3_in_child(device, i, cuda_lib)));
    vec![
        LevelFindings {
            level: 1,
            supported: true,
            how: "progressive launching: works on every CUDA device".into(),
            self_test: None,
        },
        l2,
        l3,
    ]
}

/// Spatial sharing's findings from its self-test's outcome.
pub(super) fn spatial_findings(outcome: Result<SpatialReport, ProbeError>) -> SpatialFindings {
    match outcome {
        Ok(r) if r.takes_effect => SpatialFindings {
            available: true,
            how: format!(
                "green contexts (`--sms N`): self-test: a kernel's {} blocks ran on {} SMs \
                 confined to a partition of {}, on {} unconfined",
                r.blocks, r.sms_used_confined, r.partition_sms, r.sms_used_whole
            ),
            self_test: Some(r),
        },
        Ok(r) => SpatialFindings {
            available: false,
            how: format!(
                "green contexts (`--sms N`): no effect in the self-test ({} SMs used confined to \
                 a partition of {}, {} unconfined; every block ran: {})",
                r.sms_used_confined, r.partition_sms, r.sms_used_whole, r.all_blocks_ran
            ),
            self_test: Some(r),
        },
        Err(e) => SpatialFindings {
            available: false,
            how: format!("green contexts (`--sms N`): {e}"),
            self_test: None,
        },
    }
}

/// Whether `--sms` confines kernels on `device`: claimed only if the self-test saw a confined
/// kernel's blocks stay on the partition's SMs (`probe::spatial`); without self-tests, only
/// whether a partition can be made.
pub(super) fn spatial(d: &'static Driver, device: &Device, tests: bool) -> SpatialFindings {
    if !tests {
        return SpatialFindings {
            available: false,
            how: match probe::partition_sms(d, device, 8) {
                Ok((sms, device_sms)) => format!(
                    "green contexts (`--sms N`): a partition of {sms} of {device_sms} SMs can be \
                     made; not tested (--no-self-test)"
                ),
                Err(e) => format!("green contexts (`--sms N`): {e}"),
            },
            self_test: None,
        };
    }
    spatial_findings(probe::spatial(d, device.handle()))
}

#[cfg(test)]
mod tests {
    use baton_cuda::probe::SliceMeasurement;

    use super::*;

    fn failed() -> ProbeError {
        ProbeError::Call {
            call: "cuInit",
            code: baton_cuda::sys::CUresult::NO_DEVICE,
        }
    }

    #[test]
    fn level_two_is_claimed_only_when_its_kernel_was_held() {
        let l = level2_findings(Some(Ok(Level2Report::new(true, 157.9))));
        assert!(l.supported);
        assert!(
            l.how
                .ends_with("was held 50 ms and finished 158 µs after it opened"),
            "{}",
            l.how
        );
        let l = level2_findings(Some(Ok(Level2Report::new(false, 3.0))));
        assert!(!l.supported && l.how.contains("no effect") && l.self_test.is_some());
        let l = level2_findings(Some(Err(failed())));
        assert_eq!(
            l.how,
            "deactivation (stream-memory gates): self-test failed: cuInit failed (CUDA_ERROR_NO_DEVICE(100))"
        );
        assert!(l.self_test.is_none());
        assert!(
            level2_findings(None)
                .how
                .ends_with("not tested (--no-self-test)")
        );
    }

    #[test]
    fn level_three_says_what_the_slice_changed() {
        let m = |normal, shortened| {
            Level3Report::measured(SliceMeasurement::new(7, 2000, 100, normal, shortened))
        };
        let l = level3_findings(Some(Ok(m(1800.2, 150.4))));
        assert!(l.supported);
        assert_eq!(
            l.how,
            "channel-group time slices: self-test: another context's kernel waited 1800 µs at \
             libcuda's 2000 µs slice, 150 µs at 100 µs"
        );
        let l = level3_findings(Some(Ok(m(1800.0, 1700.0))));
        assert!(!l.supported);
        assert_eq!(
            l.how,
            "channel-group time slices: no effect in the self-test (wait 1800 µs at the normal \
             slice, 1700 µs shortened)"
        );
        let l = level3_findings(Some(Ok(Level3Report::group_not_seen())));
        assert!(!l.supported);
        assert_eq!(
            l.how,
            "channel-group time slices: the context's compute channel group was not seen among \
             the driver's calls"
        );
        let l = level3_findings(Some(Err(ProbeError::NoInterposer)));
        assert!(
            l.how
                .ends_with("self-test failed: the interposer is not loaded in the self-test")
        );
        assert!(level3_findings(None).how.contains("needs the interposer"));
    }

    #[test]
    fn spatial_sharing_is_claimed_only_when_blocks_stayed_on_the_partition() {
        let whole: Vec<Option<u32>> = (0..528).map(|b| Some(b % 132)).collect();
        let inside: Vec<Option<u32>> = (0..528).map(|b| Some(b % 8)).collect();
        let s = spatial_findings(Ok(SpatialReport::new(8, 132, 528, &whole, &inside)));
        assert!(s.available);
        assert_eq!(
            s.how,
            "green contexts (`--sms N`): self-test: a kernel's 528 blocks ran on 8 SMs confined \
             to a partition of 8, on 132 unconfined"
        );
        let s = spatial_findings(Ok(SpatialReport::new(8, 132, 528, &whole, &whole)));
        assert!(!s.available);
        assert!(
            s.how.ends_with(
                "(132 SMs used confined to a partition of 8, 132 unconfined; every block ran: true)"
            ),
            "{}",
            s.how
        );
        let s = spatial_findings(Err(failed()));
        assert!(!s.available && s.self_test.is_none());
    }
}
