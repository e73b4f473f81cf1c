//! The rows of the scheduler's records: context switches (the `sched`
//! table) and thread wakeups (`wakeups`).

use fxt_format::decode::{ContextSwitch, LegacyContextSwitch, ThreadState, ThreadWakeup};

use super::{row, signed, ticks_to_ns, Rows};
use crate::commands::export::keys::koids;
use crate::error::Error;

impl Rows<'_> {
    pub(super) fn switch(
        &mut self,
        provider: Option<u32>,
        c: &ContextSwitch,
        tps: u64,
    ) -> Result<(), Error> {
        let ts = ticks_to_ns(c.timestamp, tps);
        self.switch_row(
            provider,
            ts,
            c.cpu,
            c.outgoing_thread,
            c.outgoing_state,
            c.incoming_thread,
        )
    }

    pub(super) fn legacy_switch(
        &mut self,
        provider: Option<u32>,
        c: &LegacyContextSwitch,
        tps: u64,
    ) -> Result<(), Error> {
        let ts = ticks_to_ns(c.timestamp, tps);
        let (_, out) = koids(c.outgoing_thread);
        let (_, inc) = koids(c.incoming_thread);
        self.switch_row(provider, ts, u16::from(c.cpu), out, c.outgoing_state, inc)
    }

    fn switch_row(
        &mut self,
        provider: Option<u32>,
        ts: i64,
        cpu: u16,
        out: u64,
        state: ThreadState,
        inc: u64,
    ) -> Result<(), Error> {
        self.seen.bare_tids.extend([out, inc]);
        let labels = self.labels;
        let switch = row::Switch {
            source: self.source(provider),
            ts: Some(ts),
            cpu: Some(i32::from(cpu)),
            out_pid: labels.pid_of(out).map(signed),
            out_tid: Some(signed(out)),
            out_thread: labels.thread(out),
            out_state: Some(row::state_name(state)),
            in_pid: labels.pid_of(inc).map(signed),
            in_tid: Some(signed(inc)),
            in_thread: labels.thread(inc),
        };
        self.tables.sched.push(&switch, self.summary)
    }

    pub(super) fn wakeup(
        &mut self,
        provider: Option<u32>,
        w: &ThreadWakeup,
        tps: u64,
    ) -> Result<(), Error> {
        self.seen.bare_tids.insert(w.waking_thread);
        let labels = self.labels;
        let wakeup = row::Wakeup {
            source: self.source(provider),
            ts: Some(ticks_to_ns(w.timestamp, tps)),
            cpu: Some(i32::from(w.cpu)),
            pid: labels.pid_of(w.waking_thread).map(signed),
            tid: Some(signed(w.waking_thread)),
            thread: labels.thread(w.waking_thread),
        };
        self.tables.wakeups.push(&wakeup, self.summary)
    }
}
