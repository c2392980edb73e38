//! Which context owns the SMs, and how its kernels share them.

use baton_core::Nanos;

use super::{Interrupt, Run, SimDevice};
use crate::ContextId;

impl SimDevice {
    /// Whether `ctx` has a dispatched kernel that could use SMs.
    pub(super) fn has_work(&self, ctx: ContextId) -> bool {
        self.streams_of(ctx).any(|st| {
            st.interrupt != Interrupt::Effective
                && matches!(st.entries.front().map(|e| e.run), Some(Run::Kernel { .. }))
        })
    }

    pub(super) fn other_has_work(&self, ctx: ContextId) -> bool {
        (0..self.contexts.len())
            .map(|i| ContextId(u32::try_from(i).unwrap_or(u32::MAX)))
            .any(|c| c != ctx && self.has_work(c))
    }

    fn slice(&self, ctx: ContextId) -> Nanos {
        let c = &self.contexts[ctx.0 as usize];
        match (c.yielding, c.leading) {
            (Some((slice, 0)), _) => slice,
            (_, Some((lead, n))) if n > 0 => lead,
            _ => c.timeslice.unwrap_or(self.cfg.timeslice),
        }
        .max(Nanos::from_micros(1))
    }

    /// The next context after `after` (round-robin) with work, other than `exclude`.
    fn next_with_work(
        &self,
        after: Option<ContextId>,
        exclude: Option<ContextId>,
    ) -> Option<ContextId> {
        let n = self.contexts.len();
        let start = after.map_or(0, |c| c.0 as usize + 1);
        (0..n)
            .map(|k| ContextId(u32::try_from((start + k) % n).unwrap_or(u32::MAX)))
            .find(|c| Some(*c) != exclude && self.has_work(*c))
    }

    /// Keeps the active context, or switches to the next one with work.
    pub(super) fn schedule_contexts(&mut self) {
        if self.switch_until.is_some() {
            return;
        }
        let now = self.now;
        match self.active {
            Some(a) if self.has_work(a) => {
                if now >= self.slice_end {
                    match self.next_with_work(Some(a), Some(a)) {
                        Some(n) => self.begin_switch(n),
                        None => self.slice_end = now + self.slice(a),
                    }
                }
            }
            cur => {
                if let Some(n) = self.next_with_work(cur, None) {
                    self.begin_switch(n);
                }
            }
        }
    }

    fn begin_switch(&mut self, to: ContextId) {
        let now = self.now;
        let saving = self.active.is_some_and(|from| {
            self.streams_of(from).any(|st| {
                matches!(st.entries.front().map(|e| e.run), Some(Run::Kernel { alloc, .. }) if alloc > 0)
            })
        });
        if let Some(from) = self.active {
            for sid in self.contexts[from.0 as usize].streams.clone() {
                if let Some(e) = self.streams[sid.0 as usize].entries.front_mut() {
                    if let Run::Kernel { alloc, .. } = &mut e.run {
                        *alloc = 0;
                    }
                }
            }
        }
        if self.active != Some(to) {
            self.switches += 1;
        }
        self.active = Some(to);
        let cost = match self.cfg.idle_switch_cost {
            Some(idle) if !saving => idle,
            _ => self.cfg.switch_cost,
        };
        if cost > Nanos::ZERO {
            self.switch_until = Some(now + cost);
        }
        self.slice_end = now + cost + self.slice(to);
    }

    /// Hands free SMs of the active context to its kernels; sticky for those already holding some.
    pub(super) fn allocate_sms(&mut self) {
        let Some(a) = self.active else {
            return;
        };
        if self.switch_until.is_some() {
            return;
        }
        let now = self.now;
        let sm_count = self.cfg.sm_count.max(1);
        let streams = self.contexts[a.0 as usize].streams.clone();
        let mut used = 0u32;
        // (priority, order, stream) of kernels wanting more SMs.
        let mut wanting = Vec::new();
        for sid in &streams {
            let st = &mut self.streams[sid.0 as usize];
            let halted = st.interrupt == Interrupt::Effective;
            let priority = st.priority;
            if let Some(e) = st.entries.front_mut() {
                if let Run::Kernel {
                    demand,
                    alloc,
                    order,
                    ..
                } = &mut e.run
                {
                    if halted {
                        *alloc = 0;
                        continue;
                    }
                    used += *alloc;
                    if *alloc < *demand {
                        wanting.push((priority, *order, *sid));
                    }
                }
            }
        }
        wanting.sort_by(|x, y| y.0.cmp(&x.0).then(x.1.cmp(&y.1)));
        let mut free = sm_count.saturating_sub(used);
        for (_, _, sid) in wanting {
            if free == 0 {
                break;
            }
            if let Some(e) = self.streams[sid.0 as usize].entries.front_mut() {
                if let Run::Kernel { demand, alloc, .. } = &mut e.run {
                    let give = (*demand - *alloc).min(free);
                    *alloc += give;
                    free -= give;
                    if e.started_at.is_none() {
                        e.started_at = Some(now);
                    }
                }
            }
        }
    }
}
