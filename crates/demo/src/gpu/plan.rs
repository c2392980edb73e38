//! What the GPU demo's clients do, and who they are.

use std::fmt;
use std::str::FromStr;

/// What the clients do; the parent passes it on their command line ([`GpuPlan::args`]). The
/// GPU counterpart of the parts of a [`Scenario`](crate::Scenario) a GPU has: no SM counts,
/// launch window or device model, which the GPU and `baton run` decide.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuPlan {
    /// Length of each phase, in seconds.
    pub seconds: f64,
    /// Kernels per HP request.
    pub hp_kernels: u32,
    /// HP kernel durations, lowest and highest, µs.
    pub hp_kernel_us: (u64, u64),
    /// One HP request every this many milliseconds.
    pub hp_period_ms: f64,
    /// BE kernel durations (of work alone), lowest and highest, µs.
    pub be_kernel_us: (u64, u64),
    /// BE kernels kept outstanding.
    pub be_depth: u32,
    /// Seed of every random draw.
    pub seed: u64,
}

impl GpuPlan {
    /// The `baton demo` flags that give a client this plan.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--duration-s".into(),
            self.seconds.to_string(),
            "--hp-kernels".into(),
            self.hp_kernels.to_string(),
            "--hp-kernel-us".into(),
            format!("{}-{}", self.hp_kernel_us.0, self.hp_kernel_us.1),
            "--hp-period-ms".into(),
            self.hp_period_ms.to_string(),
            "--be-kernel-ms".into(),
            format!(
                "{}-{}",
                self.be_kernel_us.0 as f64 / 1000.0,
                self.be_kernel_us.1 as f64 / 1000.0
            ),
            "--be-depth".into(),
            self.be_depth.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ]
    }
}

/// One of the two clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerRole {
    /// The latency-critical client.
    Hp,
    /// The best-effort client.
    Be,
}

impl WorkerRole {
    /// Its name on the command line: `hp` or `be`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerRole::Hp => "hp",
            WorkerRole::Be => "be",
        }
    }

    /// Its name in messages: `HP` or `BE`.
    pub fn label(self) -> &'static str {
        match self {
            WorkerRole::Hp => "HP",
            WorkerRole::Be => "BE",
        }
    }
}

impl fmt::Display for WorkerRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A client role other than `hp` and `be`.
#[derive(Debug, thiserror::Error)]
#[error("unknown GPU demo client {0:?}")]
pub struct UnknownRole(pub String);

impl FromStr for WorkerRole {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<WorkerRole, UnknownRole> {
        match s {
            "hp" => Ok(WorkerRole::Hp),
            "be" => Ok(WorkerRole::Be),
            other => Err(UnknownRole(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_becomes_the_flags_the_demo_reads() {
        let p = GpuPlan {
            seconds: 0.5,
            hp_kernels: 40,
            hp_kernel_us: (20, 80),
            hp_period_ms: 5.0,
            be_kernel_us: (1000, 5500),
            be_depth: 32,
            seed: 7,
        };
        assert_eq!(
            p.args().join(" "),
            "--duration-s 0.5 --hp-kernels 40 --hp-kernel-us 20-80 --hp-period-ms 5 \
             --be-kernel-ms 1-5.5 --be-depth 32 --seed 7"
        );
    }

    #[test]
    fn roles_parse_and_unknown_ones_are_refused() {
        for r in [WorkerRole::Hp, WorkerRole::Be] {
            assert_eq!(r.as_str().parse::<WorkerRole>().unwrap(), r);
        }
        assert_eq!(WorkerRole::Be.label(), "BE");
        assert_eq!(
            "xx".parse::<WorkerRole>().unwrap_err().to_string(),
            "unknown GPU demo client \"xx\""
        );
    }
}
