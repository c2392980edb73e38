//! Active window first.

use crate::hpf::{Scope, rank_first};
use crate::{Decision, Policy, Snapshot};

/// **AWF** — active window first: the focused application's queues run first.
///
/// The agent (or a desktop focus watcher, or `LocalScheduler::set_global_hint`) says which
/// process owns the focused window. Per device, while any queue of that process is ready,
/// every queue of every other process is suspended; otherwise everything runs. With no active
/// window set, everything runs. For desktops and edge devices: the application the user looks
/// at keeps its standalone latency; background work uses the rest.
///
/// Reads: [`GlobalHint::ActiveWindow`](crate::GlobalHint::ActiveWindow) (a pid, or none).
/// Work-conserving per device.
#[derive(Clone, Copy, Debug, Default)]
pub struct Awf;

impl Policy for Awf {
    fn name(&self) -> &'static str {
        "awf"
    }

    fn decide(&mut self, snap: &Snapshot<'_>) -> Decision {
        let active = snap.global.active_window;
        rank_first(snap, Scope::PerDevice, |q| Some(q.pid) == active)
    }
}

#[cfg(test)]
mod tests {
    use baton_core::{Nanos, XQueueId};

    use super::*;
    use crate::{GlobalHints, QueueView};

    #[test]
    fn the_focused_process_runs_first_and_nothing_is_held_without_focus() {
        let qs = [
            QueueView::new(1, 100, 0, true),
            QueueView::new(2, 200, 0, true),
        ];
        let mut snap = Snapshot::new(Nanos::ZERO, &qs);
        assert!(Awf.decide(&snap).suspend.is_empty());
        snap.global = GlobalHints {
            active_window: Some(200),
            ..GlobalHints::default()
        };
        assert_eq!(Awf.decide(&snap).suspend, vec![XQueueId(1)]);
    }
}
