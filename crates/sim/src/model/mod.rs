//! The discrete-event model of the simulated device.
//!
//! # Time
//!
//! The model holds `now` and moves only through [`SimDevice::advance_to`]. Between two events
//! every rate is constant, so progress is exact integer arithmetic: a kernel's work is
//! `duration × SMs asked` in SM·ns, and it shrinks by `elapsed × SMs held`.
//!
//! # Who runs
//!
//! 1. Each stream offers its front command. Event records, satisfied event waits and
//!    zero-length work complete on the spot; copies queue for the copy engine; host functions
//!    start on the host; kernels are *dispatched* (they exist on the device, holding no SMs yet).
//! 2. One context is *active*. It keeps the device while it has dispatched kernels, up to its
//!    time slice if another context has some too; then the device switches (costing
//!    `switch_cost`, during which nothing computes, or `idle_switch_cost` when the context left
//!    has no kernel running) to the next context with work, round-robin.
//! 3. In the active context, SMs are sticky: a kernel keeps those it holds until it completes,
//!    its context is switched out, or its stream is interrupted. Free SMs go to kernels wanting
//!    more, by stream priority (higher first), then dispatch order.
//!
//! # Levels
//!
//! A *deactivated* stream starts nothing new; its running command continues (L2). An
//! *interrupted* stream also loses its SMs `interrupt_latency` after the request, keeping the
//! kernel's progress (L3).

mod contexts;

use std::collections::VecDeque;

use baton_core::{CommandKind, Nanos};

use crate::{Completion, ContextId, EventId, SimCommand, SimConfig, StreamId};

/// The simulated device: contexts, streams, events, and the clock they run on.
#[derive(Debug)]
pub struct SimDevice {
    cfg: SimConfig,
    now: Nanos,
    contexts: Vec<Ctx>,
    streams: Vec<Stream>,
    events: Vec<EventState>,
    /// The context owning the SMs (or being switched to).
    active: Option<ContextId>,
    /// A switch to `active` is under way until this time.
    switch_until: Option<Nanos>,
    /// When the active context's slice ends.
    slice_end: Nanos,
    dispatch_seq: u64,
    /// Streams whose front copy waits for the copy engine, in arrival order.
    copy_fifo: VecDeque<StreamId>,
    /// The copy running on the engine: its stream and end time.
    copy_busy: Option<(StreamId, Nanos)>,
    record: bool,
    completions: Vec<Completion>,
    switches: u64,
}

#[derive(Debug)]
struct Ctx {
    timeslice: Option<Nanos>,
    /// The slice it yields with ([`SimDevice::control_slice`]), and how many of its
    /// controlling streams run freely (any keeps the normal slice).
    yielding: Option<(Nanos, u32)>,
    /// The slice it keeps while a controlling stream runs freely and leads
    /// ([`SimDevice::lead_slice`]), and how many do.
    leading: Option<(Nanos, u32)>,
    /// Time during which at least one of its kernels held SMs.
    busy: Nanos,
    streams: Vec<StreamId>,
}

#[derive(Debug)]
struct Stream {
    ctx: ContextId,
    priority: i32,
    entries: VecDeque<Entry>,
    launched: u64,
    done: u64,
    deactivated: bool,
    interrupt: Interrupt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Interrupt {
    None,
    /// Requested; the running kernel leaves its SMs at this time.
    Pending(Nanos),
    Effective,
}

#[derive(Debug)]
struct Entry {
    cmd: SimCommand,
    index: u64,
    launched_at: Nanos,
    started_at: Option<Nanos>,
    run: Run,
    /// For event records, the record's generation; for waits, the generation waited for.
    generation: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Run {
    NotStarted,
    Kernel {
        remaining: u64,
        demand: u32,
        alloc: u32,
        order: u64,
    },
    CopyQueued,
    CopyRunning,
    Host {
        end: Nanos,
    },
}

#[derive(Debug, Default)]
struct EventState {
    /// Records enqueued so far.
    recorded: u64,
    /// The highest generation whose record completed.
    completed: u64,
}

impl SimDevice {
    /// An empty device at time zero.
    pub fn new(cfg: SimConfig) -> SimDevice {
        SimDevice {
            cfg,
            now: Nanos::ZERO,
            contexts: Vec::new(),
            streams: Vec::new(),
            events: Vec::new(),
            active: None,
            switch_until: None,
            slice_end: Nanos::ZERO,
            dispatch_seq: 0,
            copy_fifo: VecDeque::new(),
            copy_busy: None,
            record: false,
            completions: Vec::new(),
            switches: 0,
        }
    }

    /// The device's parameters.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// The device's current time.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Keeps a [`Completion`] for every command from now on (see [`SimDevice::take_completions`]).
    pub fn record_completions(&mut self, on: bool) {
        self.record = on;
    }

    /// The completions recorded since the last call, in completion order.
    pub fn take_completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.completions)
    }

    /// A new context (simulated process) using the device's default time slice.
    pub fn create_context(&mut self) -> ContextId {
        let id = ContextId(u32::try_from(self.contexts.len()).unwrap_or(u32::MAX));
        self.contexts.push(Ctx {
            timeslice: None,
            yielding: None,
            leading: None,
            busy: Nanos::ZERO,
            streams: Vec::new(),
        });
        id
    }

    /// Sets `ctx`'s time slice (`None`: the device default). Takes effect from its next slice.
    pub fn set_timeslice(&mut self, ctx: ContextId, slice: Option<Nanos>) {
        if let Some(c) = self.contexts.get_mut(ctx.0 as usize) {
            c.timeslice = slice;
        }
    }

    /// Puts `ctx`'s slice under a scheduler's control, as Baton does on a GPU (Level 3, or
    /// yielding to other processes): the slice is `yield_slice` while none of the streams that
    /// joined with [`SimDevice::set_running_freely`] runs freely, its normal slice otherwise.
    /// Takes effect from the context's next slice.
    pub fn control_slice(&mut self, ctx: ContextId, yield_slice: Nanos) {
        if let Some(c) = self.contexts.get_mut(ctx.0 as usize) {
            let free = c.yielding.map_or(0, |(_, n)| n);
            c.yielding = Some((yield_slice, free));
        }
    }

    /// Gives `ctx` the slice `lead` while one of its controlling streams runs freely and
    /// outranks other work ([`SimDevice::set_leading_freely`]), as Baton does on a GPU for a
    /// service beside a job. Takes effect from the context's next slice.
    pub fn lead_slice(&mut self, ctx: ContextId, lead: Nanos) {
        if let Some(c) = self.contexts.get_mut(ctx.0 as usize) {
            let n = c.leading.map_or(0, |(_, n)| n);
            c.leading = Some((lead, n));
        }
    }

    /// One of `ctx`'s controlling streams started (`true`) or stopped (`false`) both running
    /// freely and outranking other work.
    pub fn set_leading_freely(&mut self, ctx: ContextId, on: bool) {
        if let Some((_, n)) = self
            .contexts
            .get_mut(ctx.0 as usize)
            .and_then(|c| c.leading.as_mut())
        {
            *n = if on { *n + 1 } else { n.saturating_sub(1) };
        }
    }

    /// One of `ctx`'s controlling streams started (`true`) or stopped (`false`) running freely
    /// (neither suspended nor suspendable).
    pub fn set_running_freely(&mut self, ctx: ContextId, free: bool) {
        if let Some((_, n)) = self
            .contexts
            .get_mut(ctx.0 as usize)
            .and_then(|c| c.yielding.as_mut())
        {
            *n = if free { *n + 1 } else { n.saturating_sub(1) };
        }
    }

    /// A new stream in `ctx`; kernels of higher `priority` get free SMs first.
    ///
    /// # Panics
    /// If `ctx` was not created by this device.
    pub fn create_stream(&mut self, ctx: ContextId, priority: i32) -> StreamId {
        let id = StreamId(u32::try_from(self.streams.len()).unwrap_or(u32::MAX));
        self.contexts[ctx.0 as usize].streams.push(id);
        self.streams.push(Stream {
            ctx,
            priority,
            entries: VecDeque::new(),
            launched: 0,
            done: 0,
            deactivated: false,
            interrupt: Interrupt::None,
        });
        id
    }

    /// A new event.
    pub fn create_event(&mut self) -> EventId {
        self.events.push(EventState::default());
        EventId(u32::try_from(self.events.len() - 1).unwrap_or(u32::MAX))
    }

    /// Commands launched on `s` so far.
    pub fn launched(&self, s: StreamId) -> u64 {
        self.streams[s.0 as usize].launched
    }

    /// Commands of `s` completed so far (always a prefix of those launched).
    pub fn done(&self, s: StreamId) -> u64 {
        self.streams[s.0 as usize].done
    }

    /// Time during which `ctx` had at least one kernel holding SMs.
    pub fn busy(&self, ctx: ContextId) -> Nanos {
        self.contexts[ctx.0 as usize].busy
    }

    /// Context switches so far.
    pub fn switches(&self) -> u64 {
        self.switches
    }

    /// The context `s` belongs to.
    pub fn context_of(&self, s: StreamId) -> ContextId {
        self.streams[s.0 as usize].ctx
    }

    /// Launches `cmd` on stream `s` at the current time.
    ///
    /// # Panics
    /// If `s`, or the event `cmd` refers to, was not created by this device.
    pub fn launch(&mut self, s: StreamId, cmd: SimCommand) {
        let generation = match (cmd.kind, cmd.event) {
            (CommandKind::EventRecord, Some(e)) => {
                let ev = &mut self.events[e.0 as usize];
                ev.recorded += 1;
                ev.recorded
            }
            (CommandKind::EventWait, Some(e)) => self.events[e.0 as usize].recorded,
            _ => 0,
        };
        let st = &mut self.streams[s.0 as usize];
        st.entries.push_back(Entry {
            cmd,
            index: st.launched,
            launched_at: self.now,
            started_at: None,
            run: Run::NotStarted,
            generation,
        });
        st.launched += 1;
        self.dispatch();
    }

    /// Level 2: `s` starts nothing more until reactivated.
    pub fn deactivate(&mut self, s: StreamId) {
        self.streams[s.0 as usize].deactivated = true;
    }

    /// Level 2: undoes [`SimDevice::deactivate`].
    pub fn reactivate(&mut self, s: StreamId) {
        self.streams[s.0 as usize].deactivated = false;
        self.dispatch();
    }

    /// Level 3: `s` starts nothing more, and its running kernel leaves its SMs after the
    /// interrupt latency, keeping its progress.
    pub fn interrupt(&mut self, s: StreamId) {
        let at = self.now + self.cfg.interrupt_latency;
        let st = &mut self.streams[s.0 as usize];
        if st.interrupt == Interrupt::None {
            st.interrupt = if at <= self.now {
                Interrupt::Effective
            } else {
                Interrupt::Pending(at)
            };
        }
        self.dispatch();
    }

    /// Level 3: undoes [`SimDevice::interrupt`].
    pub fn restore(&mut self, s: StreamId) {
        self.streams[s.0 as usize].interrupt = Interrupt::None;
        self.dispatch();
    }

    /// The time of the next state change, or [`Nanos::MAX`] if nothing will happen.
    pub fn next_event_time(&self) -> Nanos {
        let mut t = Nanos::MAX;
        if let Some(s) = self.switch_until {
            t = t.min(s);
        } else if let Some(a) = self.active {
            for st in self.streams_of(a) {
                if let Some(Entry {
                    run:
                        Run::Kernel {
                            remaining, alloc, ..
                        },
                    ..
                }) = st.entries.front()
                {
                    if *alloc > 0 {
                        let left = remaining.div_ceil(u64::from(*alloc));
                        t = t.min(self.now + Nanos(left));
                    }
                }
            }
            if self.has_work(a) && self.other_has_work(a) {
                t = t.min(self.slice_end.max(self.now));
            }
        }
        if let Some((_, end)) = self.copy_busy {
            t = t.min(end);
        }
        for st in &self.streams {
            if let Some(Entry {
                run: Run::Host { end },
                ..
            }) = st.entries.front()
            {
                t = t.min(*end);
            }
            if let Interrupt::Pending(at) = st.interrupt {
                t = t.min(at);
            }
        }
        t
    }

    /// Runs the device until time `t` (no-op if `t` is not later than now).
    pub fn advance_to(&mut self, t: Nanos) {
        while self.now < t {
            let next = self.next_event_time();
            let step = next.min(t);
            self.progress(step);
            if next > t {
                break;
            }
            self.process_due();
            self.dispatch();
        }
        // Events due exactly now (e.g. zero-length work) are settled even without a step.
        if self.next_event_time() <= self.now {
            self.process_due();
            self.dispatch();
        }
    }

    fn streams_of(&self, ctx: ContextId) -> impl Iterator<Item = &Stream> {
        self.contexts[ctx.0 as usize]
            .streams
            .iter()
            .map(|s| &self.streams[s.0 as usize])
    }

    /// Moves time to `to`, crediting progress to kernels holding SMs.
    fn progress(&mut self, to: Nanos) {
        let dt = to.saturating_sub(self.now).0;
        if dt > 0 && self.switch_until.is_none() {
            if let Some(a) = self.active {
                let mut any = false;
                for sid in &self.contexts[a.0 as usize].streams {
                    let st = &mut self.streams[sid.0 as usize];
                    if let Some(Entry {
                        run:
                            Run::Kernel {
                                remaining, alloc, ..
                            },
                        ..
                    }) = st.entries.front_mut()
                    {
                        if *alloc > 0 {
                            *remaining =
                                remaining.saturating_sub(dt.saturating_mul(u64::from(*alloc)));
                            any = true;
                        }
                    }
                }
                if any {
                    self.contexts[a.0 as usize].busy += Nanos(dt);
                }
            }
        }
        self.now = to.max(self.now);
    }

    /// Settles everything due at `now`: finished work, switch ends, interrupts taking effect.
    fn process_due(&mut self) {
        let now = self.now;
        if self.switch_until.is_some_and(|t| t <= now) {
            self.switch_until = None;
        }
        if let Some((s, end)) = self.copy_busy {
            if end <= now {
                self.copy_busy = None;
                self.complete_front(s);
            }
        }
        for i in 0..self.streams.len() {
            let sid = StreamId(u32::try_from(i).unwrap_or(u32::MAX));
            let st = &mut self.streams[i];
            if let Interrupt::Pending(at) = st.interrupt {
                if at <= now {
                    st.interrupt = Interrupt::Effective;
                }
            }
            let finished = match st.entries.front() {
                Some(Entry {
                    run:
                        Run::Kernel {
                            remaining, alloc, ..
                        },
                    ..
                }) => *remaining == 0 && *alloc > 0,
                Some(Entry {
                    run: Run::Host { end },
                    ..
                }) => *end <= now,
                _ => false,
            };
            if finished {
                self.complete_front(sid);
            }
        }
    }

    fn complete_front(&mut self, s: StreamId) {
        let now = self.now;
        let st = &mut self.streams[s.0 as usize];
        let Some(e) = st.entries.pop_front() else {
            return;
        };
        st.done += 1;
        if e.cmd.kind == CommandKind::EventRecord {
            if let Some(ev) = e.cmd.event {
                let ev = &mut self.events[ev.0 as usize];
                ev.completed = ev.completed.max(e.generation);
            }
        }
        if self.record {
            self.completions.push(Completion {
                stream: s,
                index: e.index,
                kind: e.cmd.kind,
                tag: e.cmd.tag,
                launched_at: e.launched_at,
                started_at: e.started_at.unwrap_or(now),
                ended_at: now,
            });
        }
    }

    /// Starts whatever can start now, then decides who owns the SMs and hands them out.
    fn dispatch(&mut self) {
        loop {
            let mut changed = false;
            for i in 0..self.streams.len() {
                changed |= self.start_front(StreamId(u32::try_from(i).unwrap_or(u32::MAX)));
            }
            if !changed {
                break;
            }
        }
        self.start_copy();
        self.schedule_contexts();
        self.allocate_sms();
    }

    /// Offers stream `s`'s front command to the device. Returns whether anything changed.
    fn start_front(&mut self, s: StreamId) -> bool {
        let now = self.now;
        let sm_count = self.cfg.sm_count.max(1);
        let st = &self.streams[s.0 as usize];
        if st.deactivated || st.interrupt != Interrupt::None {
            return false;
        }
        let Some(front) = st.entries.front() else {
            return false;
        };
        if front.run != Run::NotStarted {
            return false;
        }
        let cmd = front.cmd;
        let generation = front.generation;
        match cmd.kind {
            CommandKind::EventRecord => {
                self.complete_front(s);
                true
            }
            CommandKind::EventWait => {
                let satisfied = cmd
                    .event
                    .is_none_or(|e| self.events[e.0 as usize].completed >= generation);
                if satisfied {
                    self.complete_front(s);
                }
                satisfied
            }
            _ => {
                let order = self.dispatch_seq;
                self.dispatch_seq += 1;
                let Some(front) = self.streams[s.0 as usize].entries.front_mut() else {
                    return false;
                };
                if cmd.is_compute() {
                    let demand = cmd.sms.clamp(1, sm_count);
                    front.run = Run::Kernel {
                        remaining: cmd.duration.0.saturating_mul(u64::from(demand)),
                        demand,
                        alloc: 0,
                        order,
                    };
                } else if cmd.is_copy() {
                    front.run = Run::CopyQueued;
                    self.copy_fifo.push_back(s);
                } else {
                    front.run = Run::Host {
                        end: now + cmd.duration,
                    };
                    front.started_at = Some(now);
                }
                true
            }
        }
    }

    /// Starts the oldest queued copy of a stream that is not halted, if the engine is free.
    fn start_copy(&mut self) {
        if self.copy_busy.is_some() {
            return;
        }
        let pos = self.copy_fifo.iter().position(|s| {
            let st = &self.streams[s.0 as usize];
            !st.deactivated && st.interrupt == Interrupt::None
        });
        let Some(pos) = pos else {
            return;
        };
        let Some(s) = self.copy_fifo.remove(pos) else {
            return;
        };
        let now = self.now;
        if let Some(front) = self.streams[s.0 as usize].entries.front_mut() {
            front.run = Run::CopyRunning;
            front.started_at = Some(now);
            self.copy_busy = Some((s, now + front.cmd.duration));
        }
    }
}

#[cfg(test)]
mod tests;
