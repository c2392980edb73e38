//! Hints on the wire: what applications and operators tell the scheduler.
//!
//! A hint is about a *scope*: one queue, one process (all its queues, and the process as a
//! unit), one device, or everything. Each hint says which scopes it makes sense for, and
//! [`Hint::check_scope`] refuses the others. A new hint of a kind replaces the earlier one of
//! the same kind and scope; [`Hint::Clear`] removes it. Policies read the hints they document
//! and keep the rest, so switching policy loses none.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{
    MAX_DURATION_NS, MAX_HINT_HORIZON_NS, MAX_K, MAX_SMS, MAX_TIME_SLICE_NS, MIN_TIME_SLICE_NS,
    ProtocolError, WirePriority, check,
};

/// A hint about a scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Hint {
    /// Scheduling priority, higher runs first (`-100..=100`, default 0). Queue or process.
    Priority(WirePriority),
    /// The share of the device's time to reserve, in percent (`1..=100`). Queue or process.
    Utilization {
        /// Percent of device time.
        percent: u8,
    },
    /// The time slice to give when sharing the device by turns (the policy's quantum, or the
    /// hardware channel-group slice at Level 3), 1 µs to 10 s. Queue or process.
    TimeSlice {
        /// The slice, in nanoseconds.
        slice_ns: u64,
    },
    /// Each piece of work must finish within this long of the queue becoming ready (EDF,
    /// k-EDF, laxity), 1 ns to 1 hour. Queue or process.
    Deadline {
        /// The relative deadline, in nanoseconds.
        deadline_ns: u64,
    },
    /// k for k-EDF: at most `k` queues, those with the earliest deadlines, run at once on a
    /// device (`1..=1024`). Device or all devices; not from an agent, since it binds every
    /// process on the device.
    KEdf {
        /// Queues allowed to run at once.
        k: u32,
    },
    /// Laxity scheduling: the queue runs at `lax_priority` while its work can still wait, and
    /// at `critical_priority` once it has waited `laxity_ns` (1 ns to 1 hour).
    /// `critical_priority >= lax_priority`. Queue or process.
    Laxity {
        /// How long its work may wait before it becomes critical, in nanoseconds.
        laxity_ns: u64,
        /// The priority while lax.
        lax_priority: WirePriority,
        /// The priority once critical.
        critical_priority: WirePriority,
    },
    /// Whether the process owns the focused window (active-window-first). Process only.
    ActiveWindow {
        /// Focused or not.
        active: bool,
    },
    /// Pre-preemption: work is coming, so start evicting lower-priority work before it
    /// arrives. The work is expected `arrives_in_ns` after the hint is received, and the hint
    /// is void `expires_in_ns` after it is received if the work has not come
    /// (`arrives_in_ns <= expires_in_ns`, `0 < expires_in_ns <= 60 s`). Relative times, so no
    /// clock need be shared. Queue or process.
    Upcoming {
        /// When the work is expected, from receipt, in nanoseconds.
        arrives_in_ns: u64,
        /// When the hint lapses, from receipt, in nanoseconds.
        expires_in_ns: u64,
    },
    /// Removes the hint of this kind from the scope (the scope falls back to the wider scope's
    /// hint, or the default). Any scope.
    Clear(HintKind),
    /// The process is one rank of a multi-process job, the gang `id` (every rank of the job
    /// gives the same id; `BATON_GANG`, or the job's Slurm step or rendezvous, hashed). A
    /// daemon holding gangs together suspends and resumes a gang's queues on every device at
    /// once. Process only.
    Gang {
        /// The gang.
        id: u64,
    },
    /// The process's kernels run on SMs that other processes' work is kept off (`--sms`
    /// under MPS, where processes share the SMs at once): holding it back while another
    /// process runs would only leave SMs idle, so priority policies do not. Its own more
    /// urgent streams still hold it back. Process only.
    Isolated {
        /// SMs its kernels run on.
        sms: u32,
    },
    /// The process's context is time-sliced against other processes' (its own context, no
    /// MPS), and Baton shortens its channel group's time slice to `slice_ns` whenever a more
    /// urgent queue exists: another process's kernels then get the GPU within about that long,
    /// whatever it has launched. Priority policies hold it back for another process's queue
    /// only while that queue has work and its program keeps the device busy with it (its
    /// [`Hint::Readiness`] not bound by its own launching), so that its context does not take
    /// the GPU back between that program's requests; its own more urgent streams still hold
    /// it back. Process only.
    Yielding {
        /// Its time slice while outranked, in nanoseconds.
        slice_ns: u64,
    },
    /// How long one of the queue's commands takes on the device while the queue keeps the
    /// device busy, as its process measured it (`1..=` one hour): priority policies do not
    /// hold a queue of short commands back for other processes. Sent again when it changes.
    /// Queue only.
    CommandTime {
        /// The measured time per command, in nanoseconds.
        command_ns: u64,
    },
    /// The queue's process shares the GPU through MPS, and Baton keeps the queue's kernels to
    /// `sms` SMs whenever a more urgent queue exists (and lets them use the whole GPU
    /// otherwise): another process's kernels then find the other SMs free, so holding it back
    /// for them would only leave the GPU idle in their gaps, and priority policies do not. Its
    /// own process's more urgent streams still hold it back. Queue only: claimed by each
    /// queue so confined when it is registered.
    Confining {
        /// SMs its kernels keep to while outranked.
        sms: u32,
    },
    /// The queue's process shares the GPU through MPS, and Baton keeps the queue's kernels to
    /// `sms` SMs whenever a more urgent queue exists, while the queue is held back as any other
    /// (`BATON_YIELD_SMS` without `--yield`). Told so that `baton list` shows it; no policy
    /// reads it. Queue only: claimed by each queue so confined when it is registered.
    ConfinedHeld {
        /// SMs its kernels keep to while outranked.
        sms: u32,
    },
    /// The process's context is time-sliced against other processes' (its own context, no
    /// MPS) and it neither yields nor asks to be held. Informational: the built-in policies do
    /// not read it (a program that gives the GPU up by its slice claims [`Hint::Yielding`],
    /// as `baton run` does between time-sliced processes by default). Process only.
    TimeSliced,
    /// The process shares its GPU with other processes through MPS: one hardware context,
    /// its kernels on the SMs beside theirs, so that no switch between contexts hands the GPU
    /// over, and Baton holds it back rather than shortening its time slice. Informational:
    /// told so that `baton list` shows which path each program is on; no policy reads it.
    /// Process only.
    SharedContext,
    /// How the queue's program used it over the last measuring period (about half a second),
    /// as its process measured it: the share of the time the queue had work (`ready_permille`)
    /// and the share its program spent blocked in waits for the queue's work
    /// (`waiting_permille`), each in thousandths of the period. A queue that has work nearly
    /// all the time but whose program rarely waits for it is bound by its own launching, not
    /// by the device. Sent again when it changes. Queue only.
    Readiness {
        /// Thousandths of the period the queue had work (0..=1000).
        ready_permille: u16,
        /// Thousandths of the period its program waited for the queue's work (0..=1000).
        waiting_permille: u16,
    },
}

/// The kinds of [`Hint`], to name one without a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HintKind {
    /// [`Hint::Priority`].
    Priority,
    /// [`Hint::Utilization`].
    Utilization,
    /// [`Hint::TimeSlice`].
    TimeSlice,
    /// [`Hint::Deadline`].
    Deadline,
    /// [`Hint::KEdf`].
    KEdf,
    /// [`Hint::Laxity`].
    Laxity,
    /// [`Hint::ActiveWindow`].
    ActiveWindow,
    /// [`Hint::Upcoming`].
    Upcoming,
    /// [`Hint::Gang`].
    Gang,
    /// [`Hint::Isolated`].
    Isolated,
    /// [`Hint::Yielding`].
    Yielding,
    /// [`Hint::CommandTime`].
    CommandTime,
    /// [`Hint::Confining`].
    Confining,
    /// [`Hint::ConfinedHeld`].
    ConfinedHeld,
    /// [`Hint::Readiness`].
    Readiness,
    /// [`Hint::TimeSliced`].
    TimeSliced,
    /// [`Hint::SharedContext`].
    SharedContext,
}

impl HintKind {
    /// Every kind.
    pub const ALL: [HintKind; 17] = [
        HintKind::Priority,
        HintKind::Utilization,
        HintKind::TimeSlice,
        HintKind::Deadline,
        HintKind::KEdf,
        HintKind::Laxity,
        HintKind::ActiveWindow,
        HintKind::Upcoming,
        HintKind::Gang,
        HintKind::Isolated,
        HintKind::Yielding,
        HintKind::CommandTime,
        HintKind::Confining,
        HintKind::ConfinedHeld,
        HintKind::Readiness,
        HintKind::TimeSliced,
        HintKind::SharedContext,
    ];

    /// The scopes a hint of this kind may be given for.
    pub const fn scopes(self) -> &'static [Scope] {
        match self {
            HintKind::KEdf => &[Scope::Device, Scope::All],
            HintKind::ActiveWindow
            | HintKind::Gang
            | HintKind::Isolated
            | HintKind::Yielding
            | HintKind::TimeSliced
            | HintKind::SharedContext => &[Scope::Process],
            HintKind::CommandTime
            | HintKind::Confining
            | HintKind::ConfinedHeld
            | HintKind::Readiness => &[Scope::Queue],
            _ => &[Scope::Queue, Scope::Process],
        }
    }
}

impl fmt::Display for HintKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HintKind::Priority => "priority",
            HintKind::Utilization => "utilization",
            HintKind::TimeSlice => "time slice",
            HintKind::Deadline => "deadline",
            HintKind::KEdf => "k-EDF k",
            HintKind::Laxity => "laxity",
            HintKind::ActiveWindow => "active window",
            HintKind::Upcoming => "upcoming work",
            HintKind::Gang => "gang",
            HintKind::Isolated => "isolated",
            HintKind::Yielding => "yielding",
            HintKind::CommandTime => "command time",
            HintKind::Confining => "confining",
            HintKind::ConfinedHeld => "confined and held",
            HintKind::Readiness => "readiness",
            HintKind::TimeSliced => "time-sliced",
            HintKind::SharedContext => "shared context",
        })
    }
}

/// What a hint is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// One queue.
    Queue,
    /// One process: all its queues, and the process as a unit.
    Process,
    /// One device.
    Device,
    /// Every device.
    All,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::Queue => "a queue",
            Scope::Process => "a process",
            Scope::Device => "a device",
            Scope::All => "all devices",
        })
    }
}

impl Hint {
    /// The kind of hint this is; for [`Hint::Clear`], the kind it clears.
    pub fn kind(&self) -> HintKind {
        match self {
            Hint::Priority(_) => HintKind::Priority,
            Hint::Utilization { .. } => HintKind::Utilization,
            Hint::TimeSlice { .. } => HintKind::TimeSlice,
            Hint::Deadline { .. } => HintKind::Deadline,
            Hint::KEdf { .. } => HintKind::KEdf,
            Hint::Laxity { .. } => HintKind::Laxity,
            Hint::ActiveWindow { .. } => HintKind::ActiveWindow,
            Hint::Upcoming { .. } => HintKind::Upcoming,
            Hint::Gang { .. } => HintKind::Gang,
            Hint::Isolated { .. } => HintKind::Isolated,
            Hint::Yielding { .. } => HintKind::Yielding,
            Hint::CommandTime { .. } => HintKind::CommandTime,
            Hint::Confining { .. } => HintKind::Confining,
            Hint::ConfinedHeld { .. } => HintKind::ConfinedHeld,
            Hint::Readiness { .. } => HintKind::Readiness,
            Hint::TimeSliced => HintKind::TimeSliced,
            Hint::SharedContext => HintKind::SharedContext,
            Hint::Clear(kind) => *kind,
        }
    }

    /// Checks every value against its range.
    pub fn validate(&self) -> Result<(), ProtocolError> {
        match *self {
            Hint::Priority(p) => p.validate(),
            Hint::Utilization { percent } => check::range("percent", percent, 1, 100),
            Hint::TimeSlice { slice_ns } => {
                check::range("slice_ns", slice_ns, MIN_TIME_SLICE_NS, MAX_TIME_SLICE_NS)
            }
            Hint::Deadline { deadline_ns } => {
                check::range("deadline_ns", deadline_ns, 1, MAX_DURATION_NS)
            }
            Hint::KEdf { k } => check::range("k", k, 1, MAX_K),
            Hint::Laxity {
                laxity_ns,
                lax_priority,
                critical_priority,
            } => {
                check::range("laxity_ns", laxity_ns, 1, MAX_DURATION_NS)?;
                lax_priority
                    .validate()
                    .map_err(|e| rename(e, "lax_priority"))?;
                critical_priority
                    .validate()
                    .map_err(|e| rename(e, "critical_priority"))?;
                if critical_priority < lax_priority {
                    return Err(ProtocolError::invalid(
                        "critical_priority",
                        format!(
                            "{} is below lax_priority {}: a queue must not lose priority as \
                             its laxity runs out",
                            critical_priority.0, lax_priority.0
                        ),
                    ));
                }
                Ok(())
            }
            Hint::ActiveWindow { .. }
            | Hint::Gang { .. }
            | Hint::TimeSliced
            | Hint::SharedContext
            | Hint::Clear(_) => Ok(()),
            Hint::Isolated { sms } | Hint::Confining { sms } | Hint::ConfinedHeld { sms } => {
                check::range("sms", sms, 1, MAX_SMS)
            }
            Hint::Yielding { slice_ns } => {
                check::range("slice_ns", slice_ns, MIN_TIME_SLICE_NS, MAX_TIME_SLICE_NS)
            }
            Hint::CommandTime { command_ns } => {
                check::range("command_ns", command_ns, 1, MAX_DURATION_NS)
            }
            Hint::Readiness {
                ready_permille,
                waiting_permille,
            } => {
                check::range("ready_permille", ready_permille, 0, 1000)?;
                check::range("waiting_permille", waiting_permille, 0, 1000)
            }
            Hint::Upcoming {
                arrives_in_ns,
                expires_in_ns,
            } => {
                check::range("expires_in_ns", expires_in_ns, 1, MAX_HINT_HORIZON_NS)?;
                check::range("arrives_in_ns", arrives_in_ns, 0, expires_in_ns)
            }
        }
    }

    /// Checks that this hint may be given for `scope`.
    pub fn check_scope(&self, scope: Scope) -> Result<(), ProtocolError> {
        if matches!(self, Hint::Clear(_)) || self.kind().scopes().contains(&scope) {
            return Ok(());
        }
        let allowed: Vec<String> = self.kind().scopes().iter().map(|s| s.to_string()).collect();
        Err(ProtocolError::invalid(
            "target",
            format!(
                "a {} hint cannot be given for {scope}: give it for {}",
                self.kind(),
                allowed.join(" or ")
            ),
        ))
    }
}

/// `e` with its field renamed (for values validated by a shared check).
fn rename(e: ProtocolError, field: &str) -> ProtocolError {
    match e {
        ProtocolError::Invalid { reason, .. } => ProtocolError::invalid(field, reason),
        other => other,
    }
}

/// Checks a list of hints in force for one scope: valid values, allowed for `scope`, no
/// [`Hint::Clear`], and at most one of each kind.
pub(crate) fn check_hint_set(
    field: &str,
    hints: &[Hint],
    scope: Scope,
) -> Result<(), ProtocolError> {
    check::list_len(field, hints.len(), HintKind::ALL.len())?;
    for (i, h) in hints.iter().enumerate() {
        let at = check::at(field, i);
        if let Hint::Clear(_) = h {
            return Err(ProtocolError::invalid(
                at,
                "a clear is an action, not a hint in force; leave the kind out instead",
            ));
        }
        h.validate().map_err(|e| e.within(&at))?;
        h.check_scope(scope).map_err(|e| e.within(&at))?;
    }
    check::unique(field, hints.iter().map(Hint::kind))
}

#[cfg(test)]
mod tests;
