//! The parent: the four phases, each client a child process.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;

use super::error::GpuDemoError;
use super::plan::{GpuPlan, WorkerRole};
use super::report::summary;
use super::worker::{BeResult, HpResult};
use crate::{DemoSummary, Phase, Progress};

/// A client's result document.
trait WorkerResult: DeserializeOwned {
    const SCHEMA: &'static str;
    fn schema(&self) -> &str;
}

impl WorkerResult for HpResult {
    const SCHEMA: &'static str = HpResult::SCHEMA;
    fn schema(&self) -> &str {
        &self.schema
    }
}

impl WorkerResult for BeResult {
    const SCHEMA: &'static str = BeResult::SCHEMA;
    fn schema(&self) -> &str {
        &self.schema
    }
}

/// Reads `role`'s result from `text`.
fn parse<R: WorkerResult>(role: WorkerRole, text: &str) -> Result<R, GpuDemoError> {
    let r: R = serde_json::from_str(text).map_err(|cause| GpuDemoError::Result { role, cause })?;
    if r.schema() != R::SCHEMA {
        return Err(GpuDemoError::Schema {
            role,
            expected: R::SCHEMA,
            found: r.schema().to_string(),
        });
    }
    Ok(r)
}

/// Where the run keeps its socket, signal files and results.
struct Run<'a> {
    plan: &'a GpuPlan,
    /// The `baton` binary.
    exe: &'a Path,
    tmp: PathBuf,
    socket: PathBuf,
}

impl Run<'_> {
    /// Starts the `role` client writing to `out`; `extra` is its ready and stop files (BE
    /// beside HP), `baton` the `baton run` options to run it under (`None`: natively).
    fn worker(
        &self,
        role: WorkerRole,
        out: &Path,
        extra: &[&Path],
        baton: Option<&[&str]>,
    ) -> Result<Child, GpuDemoError> {
        let mut cmd = match baton {
            Some(run) => {
                let mut c = Command::new(self.exe);
                c.arg("run").args(run).arg("--").arg(self.exe);
                c
            }
            None => Command::new(self.exe),
        };
        cmd.args(["demo", "--gpu-worker", role.as_str(), "--worker-out"])
            .arg(out)
            .args(self.plan.args())
            .env("BATON_SOCKET", &self.socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let [ready, stop] = extra {
            cmd.arg("--ready-file")
                .arg(ready)
                .arg("--stop-file")
                .arg(stop);
        }
        cmd.spawn()
            .map_err(|cause| GpuDemoError::Start { role, cause })
    }

    /// Waits for `child` and reads the result it wrote to `out`.
    fn finish<R: WorkerResult>(
        &self,
        mut child: Child,
        role: WorkerRole,
        out: &Path,
    ) -> Result<R, GpuDemoError> {
        let status = child.wait()?;
        let text =
            std::fs::read_to_string(out).map_err(|_| GpuDemoError::NoResult { role, status })?;
        parse(role, &text)
    }

    /// Both clients together, HP under `hp_run` and BE under `be_run` (`baton run` options;
    /// `None`: natively): BE first, HP once BE is ready, BE stopped once HP is done.
    fn pair(
        &self,
        name: &str,
        hp_run: Option<&[&str]>,
        be_run: Option<&[&str]>,
    ) -> Result<(HpResult, BeResult), GpuDemoError> {
        let file = |suffix: &str| self.tmp.join(format!("{name}{suffix}"));
        let (ready, stop) = (file(".ready"), file(".stop"));
        let (hp_out, be_out) = (file("-hp.json"), file("-be.json"));
        let mut be = self.worker(WorkerRole::Be, &be_out, &[&ready, &stop], be_run)?;
        let t0 = Instant::now();
        while !ready.exists() {
            if let Ok(Some(st)) = be.try_wait() {
                return Err(GpuDemoError::NotReady(st));
            }
            if t0.elapsed() > Duration::from_secs(120) {
                let _ = be.kill();
                return Err(GpuDemoError::ReadyTimeout);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let hp = self.worker(WorkerRole::Hp, &hp_out, &[], hp_run)?;
        let hp_r = self.finish(hp, WorkerRole::Hp, &hp_out);
        std::fs::write(&stop, b"")?;
        let be_r = self.finish(be, WorkerRole::Be, &be_out)?;
        Ok((hp_r?, be_r))
    }

    /// One client alone.
    fn alone<R: WorkerResult>(&self, role: WorkerRole) -> Result<R, GpuDemoError> {
        let out = self.tmp.join(format!("alone-{role}.json"));
        self.finish(self.worker(role, &out, &[], None)?, role, &out)
    }
}

/// Runs the four phases with clients started from `exe`, the `baton` binary (it must accept
/// `demo --gpu-worker ROLE --worker-out FILE` with the plan's flags, `run OPTIONS -- CMD`
/// and `daemon --stop --socket PATH`); `progress` is called as each phase starts.
pub fn run(
    plan: &GpuPlan,
    exe: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<DemoSummary, GpuDemoError> {
    let tmp = std::env::temp_dir().join(format!("baton-gpu-demo-{}", std::process::id()));
    std::fs::create_dir_all(&tmp)?;
    let run = Run {
        plan,
        exe,
        socket: tmp.join("baton.sock"),
        tmp,
    };
    let mut start = |index: usize| {
        progress(Progress {
            phase: Phase::ALL[index],
            index,
            count: Phase::ALL.len(),
            fraction: 0.0,
        })
    };
    start(0);
    let hp_alone: HpResult = run.alone(WorkerRole::Hp)?;
    start(1);
    let be_alone: BeResult = run.alone(WorkerRole::Be)?;
    start(2);
    let native = run.pair("native", None, None)?;
    start(3);
    let baton = run.pair(
        "baton",
        Some(&["--priority", "10"]),
        Some(&["--priority", "0", "--level", "3"]),
    );
    let _ = Command::new(exe)
        .args(["daemon", "--stop", "--socket"])
        .arg(&run.socket)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let baton = baton?;
    let _ = std::fs::remove_dir_all(&run.tmp);
    Ok(summary(
        &hp_alone,
        &be_alone,
        (&native.0, &native.1),
        (&baton.0, &baton.1),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_checked_for_their_schema() {
        let hp = serde_json::to_string(&HpResult::new(Vec::new(), 0.0, 1.0)).unwrap();
        assert!(parse::<HpResult>(WorkerRole::Hp, &hp).is_ok());
        let e = parse::<BeResult>(WorkerRole::Be, &hp).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("the BE client's result: missing field"),
            "{e}"
        );
        let other = hp.replace("gpu-hp/1", "gpu-hp/2");
        assert_eq!(
            parse::<HpResult>(WorkerRole::Hp, &other)
                .unwrap_err()
                .to_string(),
            "the HP client's result has schema \"baton.demo.gpu-hp/2\", not \"baton.demo.gpu-hp/1\""
        );
    }
}
