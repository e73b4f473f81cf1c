//! The second pass over an input: every record `fxt recover` would keep,
//! as rows of the tables. Slices are written when they end, in the order
//! the first pass saw them end, each with the depth and parent it found
//! ([`super::nesting`]). Memory: a stack of open begins per thread and the
//! open async spans (their arguments included), and the row groups.

use fxt_format::decode::{
    Arg, ArgValue, ContextSwitch, Event, EventKind, LegacyContextSwitch, Record, Text, Thread,
    ThreadState, ThreadWakeup,
};

use super::args;
use super::labels::{Labels, Seen};
use super::nesting::Nesting;
use super::samples::{Context, SampleRows};
use super::scan::{async_key, ns as ticks_to_ns, AsyncKey, Stacks, ThreadKey};
use super::schema::Tables;
use super::summary::Summary;
use super::table::Table;
use crate::error::Error;
use crate::input::Input;
use crate::keep::Fix;
use crate::samples::{sample_of, Names};

/// An open duration begin or async begin.
struct Open {
    ts: i64,
    pid: u64,
    tid: u64,
    category: Text,
    name: Text,
    args: Vec<Arg>,
}

/// The writer of one input's rows.
pub struct Rows<'a> {
    /// The input's name, the `trace` column.
    pub trace: &'a str,
    /// The `host` column.
    pub host: &'a str,
    /// Names from the first pass.
    pub labels: &'a Labels,
    /// Depths and parents from the first pass.
    pub nesting: Nesting,
    /// The tables.
    pub tables: &'a mut Tables,
    /// The counts of what is left out.
    pub summary: &'a mut Summary,
    /// Threads and processes the rows mention.
    pub seen: Seen,
    durations: Stacks<ThreadKey, Open>,
    asyncs: Stacks<AsyncKey, Open>,
    /// Arrival index of the next slice (its `id`).
    next_id: u64,
    /// The names of sampled addresses.
    pub names: Names,
    /// Samples waiting for the slice they were taken in.
    samples: SampleRows,
}

/// The koids of a thread field (0 for an undefined one, which the first
/// pass has already left out).
fn koids(t: Thread) -> (u64, u64) {
    match t {
        Thread::Known { process, thread } => (process, thread),
        Thread::Undefined(_) => (0, 0),
    }
}

/// A koid or id as a signed 64-bit column value (two's complement: values
/// of 2^63 and more read negative).
fn signed(v: u64) -> i64 {
    v as i64
}

impl<'a> Rows<'a> {
    /// A writer for one input.
    pub fn new(
        trace: &'a str,
        host: &'a str,
        labels: &'a Labels,
        nesting: Nesting,
        tables: &'a mut Tables,
        summary: &'a mut Summary,
    ) -> Rows<'a> {
        Rows {
            trace,
            host,
            labels,
            nesting,
            tables,
            summary,
            seen: Seen::default(),
            durations: Stacks::default(),
            asyncs: Stacks::default(),
            next_id: 0,
            names: Names::default(),
            samples: SampleRows::default(),
        }
    }

    /// Runs the second pass over `input`, leaving out what `fixes` drops.
    pub fn write(
        &mut self,
        input: &mut Input,
        fixes: &std::collections::HashMap<u64, Fix>,
    ) -> Result<(), Error> {
        input.walk("export (2/2)", |reader, record| {
            if matches!(fixes.get(&reader.record_offset()), Some(Fix::Drop(_))) {
                return Ok(());
            }
            let tps = reader.ticks_per_second();
            let provider = reader.provider_id();
            match record {
                Record::Event(e) => self.event(provider, tps, e),
                Record::ContextSwitch(c) => self.switch(&c, tps),
                Record::LegacyContextSwitch(c) => self.legacy_switch(&c, tps),
                Record::ThreadWakeup(w) => self.wakeup(&w, tps),
                Record::ProviderEvent { event: 0, .. } => {
                    self.summary.buffer_filled += 1;
                    Ok(())
                }
                Record::Blob(_) if sample_of(&record).is_some() => {
                    self.sample(provider, tps, &record)
                }
                Record::Log(_)
                | Record::Blob(_)
                | Record::UserspaceObject(_)
                | Record::LargeBlobWithMetadata(_)
                | Record::LargeBlobNoMetadata(_)
                | Record::Unknown(_) => {
                    let t = crate::names::record_type_name(&record);
                    *self.summary.not_exported.entry(t).or_default() += 1;
                    Ok(())
                }
                _ => Ok(()),
            }
        })?;
        self.summary.async_never_ended += self.asyncs.open();
        let cx = Context {
            trace: self.trace,
            host: self.host,
            labels: self.labels,
        };
        self.samples.finish(&mut self.tables.samples, &cx)
    }

    /// A sample waits for its slice ([`SampleRows`]); one that does not
    /// decode is counted as not exported.
    fn sample(&mut self, provider: Option<u32>, tps: u64, record: &Record) -> Result<(), Error> {
        match sample_of(record) {
            Some(Ok(s)) => {
                let ts = ticks_to_ns(s.timestamp, tps);
                self.samples.sample(provider, ts, &s, &self.names);
            }
            _ => {
                *self
                    .summary
                    .not_exported
                    .entry("malformed sample")
                    .or_default() += 1
            }
        }
        Ok(())
    }

    /// The columns every event table starts with.
    fn event_columns(
        &mut self,
        table: fn(&mut Tables) -> &mut Table,
        provider: Option<u32>,
        (pid, tid): (u64, u64),
        category: &Text,
        name: &Text,
        ts: i64,
    ) -> Result<(), Error> {
        self.seen.thread(pid, tid, provider);
        let t = table(self.tables);
        t.str(Some(self.trace))?;
        t.str(Some(self.host))?;
        t.i64(Some(signed(pid)))?;
        t.str(self.labels.process(pid, provider))?;
        t.i64(Some(signed(tid)))?;
        t.str(self.labels.thread(tid))?;
        t.str(category.as_str())?;
        t.str(name.as_str())?;
        t.i64(Some(ts))
    }

    fn event(&mut self, provider: Option<u32>, tps: u64, e: Event) -> Result<(), Error> {
        let ts = ticks_to_ns(e.timestamp, tps);
        let ids = koids(e.thread);
        match e.kind {
            EventKind::DurationBegin => {
                let key = (provider, e.thread);
                let open = self.open(ts, ids, e);
                self.durations.push(key, open);
                Ok(())
            }
            EventKind::DurationEnd => match self.durations.pop(&(provider, e.thread)) {
                Some(begin) => self.slice(provider, begin, ts, "duration", None, &e.args),
                // The first pass left out every end without a begin.
                None => Err(Error::msg("internal error: a kept end has no begin")),
            },
            EventKind::DurationComplete { end } => {
                let end = ticks_to_ns(end, tps);
                let open = self.open(ts, ids, e);
                self.slice(provider, open, end, "complete", None, &[])
            }
            EventKind::AsyncBegin { id } => {
                let key = async_key(provider, &e, id);
                let open = self.open(ts, ids, e);
                self.asyncs.push(key, open);
                Ok(())
            }
            EventKind::AsyncEnd { id } => match self.asyncs.pop(&async_key(provider, &e, id)) {
                Some(begin) => self.slice(provider, begin, ts, "async", Some(id), &e.args),
                None => {
                    self.summary.async_ends_without_begin += 1;
                    Ok(())
                }
            },
            EventKind::Instant => self.instant(provider, ids, &e, ts, "instant", None),
            EventKind::AsyncInstant { id } => {
                self.instant(provider, ids, &e, ts, "async", Some(id))
            }
            EventKind::Counter { id } => self.counter(provider, ids, &e, ts, id),
            EventKind::FlowBegin { id } => self.flow(provider, ids, &e, ts, id, "begin"),
            EventKind::FlowStep { id } => self.flow(provider, ids, &e, ts, id, "step"),
            EventKind::FlowEnd { id } => self.flow(provider, ids, &e, ts, id, "end"),
        }
    }

    fn open(&self, ts: i64, (pid, tid): (u64, u64), e: Event) -> Open {
        Open {
            ts,
            pid,
            tid,
            category: e.category,
            name: e.name,
            args: e.args,
        }
    }

    /// A slice row: `begin` ended at `end` (ns), with the end's arguments
    /// after the begin's.
    fn slice(
        &mut self,
        provider: Option<u32>,
        begin: Open,
        end: i64,
        kind: &str,
        async_id: Option<u64>,
        end_args: &[Arg],
    ) -> Result<(), Error> {
        let id = self.next_id;
        self.next_id += 1;
        let place = self
            .nesting
            .next_place()
            .map_err(|e| Error::msg(format!("temporary file: {e}")))?;
        let ids = (begin.pid, begin.tid);
        if async_id.is_none() {
            let cx = Context {
                trace: self.trace,
                host: self.host,
                labels: self.labels,
            };
            let span = (begin.ts, end);
            self.samples
                .slice(provider, ids, span, id, &mut self.tables.samples, &cx)?;
        }
        self.event_columns(
            |t| &mut t.slices,
            provider,
            ids,
            &begin.category,
            &begin.name,
            begin.ts,
        )?;
        let t = &mut self.tables.slices;
        t.i64(Some(end.saturating_sub(begin.ts)))?;
        t.i64(Some(signed(id)))?;
        t.i32(Some(i32::try_from(place.depth).unwrap_or(i32::MAX)))?;
        t.i64(place.parent.map(signed))?;
        t.str(Some(kind))?;
        t.i64(async_id.map(signed))?;
        args::push(t, &[&begin.args, end_args], self.summary)?;
        t.end_row()
    }

    fn instant(
        &mut self,
        provider: Option<u32>,
        ids: (u64, u64),
        e: &Event,
        ts: i64,
        kind: &str,
        async_id: Option<u64>,
    ) -> Result<(), Error> {
        self.event_columns(|t| &mut t.instants, provider, ids, &e.category, &e.name, ts)?;
        let t = &mut self.tables.instants;
        t.str(Some(kind))?;
        t.i64(async_id.map(signed))?;
        args::push(t, &[&e.args], self.summary)?;
        t.end_row()
    }

    fn flow(
        &mut self,
        provider: Option<u32>,
        ids: (u64, u64),
        e: &Event,
        ts: i64,
        id: u64,
        phase: &str,
    ) -> Result<(), Error> {
        self.event_columns(|t| &mut t.flows, provider, ids, &e.category, &e.name, ts)?;
        let t = &mut self.tables.flows;
        t.i64(Some(signed(id)))?;
        t.str(Some(phase))?;
        args::push(t, &[&e.args], self.summary)?;
        t.end_row()
    }

    /// One row per numeric argument (series) of a counter event.
    fn counter(
        &mut self,
        provider: Option<u32>,
        ids: (u64, u64),
        e: &Event,
        ts: i64,
        id: u64,
    ) -> Result<(), Error> {
        for arg in &e.args {
            let (value, int) = match arg.value {
                ArgValue::I32(v) => (f64::from(v), Some(i64::from(v))),
                ArgValue::U32(v) => (f64::from(v), Some(i64::from(v))),
                ArgValue::I64(v) => (v as f64, Some(v)),
                ArgValue::U64(v) => (v as f64, i64::try_from(v).ok()),
                ArgValue::F64(v) => (v, None),
                _ => {
                    self.summary.non_numeric_counter_values += 1;
                    continue;
                }
            };
            self.event_columns(|t| &mut t.counters, provider, ids, &e.category, &e.name, ts)?;
            let t = &mut self.tables.counters;
            t.i64(Some(signed(id)))?;
            t.str(arg.name.as_str())?;
            t.f64(Some(value))?;
            t.i64(int)?;
            t.end_row()?;
        }
        Ok(())
    }

    fn switch(&mut self, c: &ContextSwitch, tps: u64) -> Result<(), Error> {
        let ts = ticks_to_ns(c.timestamp, tps);
        self.switch_row(
            ts,
            c.cpu,
            c.outgoing_thread,
            c.outgoing_state,
            c.incoming_thread,
        )
    }

    fn legacy_switch(&mut self, c: &LegacyContextSwitch, tps: u64) -> Result<(), Error> {
        let ts = ticks_to_ns(c.timestamp, tps);
        let (_, out) = koids(c.outgoing_thread);
        let (_, inc) = koids(c.incoming_thread);
        self.switch_row(ts, u16::from(c.cpu), out, c.outgoing_state, inc)
    }

    fn switch_row(
        &mut self,
        ts: i64,
        cpu: u16,
        out: u64,
        state: ThreadState,
        inc: u64,
    ) -> Result<(), Error> {
        self.seen.bare_tids.extend([out, inc]);
        let labels = self.labels;
        let t = &mut self.tables.sched;
        t.str(Some(self.trace))?;
        t.str(Some(self.host))?;
        t.i64(Some(ts))?;
        t.i32(Some(i32::from(cpu)))?;
        t.i64(labels.pid_of(out).map(signed))?;
        t.i64(Some(signed(out)))?;
        t.str(labels.thread(out))?;
        t.str(Some(state_name(state)))?;
        t.i64(labels.pid_of(inc).map(signed))?;
        t.i64(Some(signed(inc)))?;
        t.str(labels.thread(inc))?;
        t.end_row()
    }

    fn wakeup(&mut self, w: &ThreadWakeup, tps: u64) -> Result<(), Error> {
        self.seen.bare_tids.insert(w.waking_thread);
        let labels = self.labels;
        let t = &mut self.tables.wakeups;
        t.str(Some(self.trace))?;
        t.str(Some(self.host))?;
        t.i64(Some(ticks_to_ns(w.timestamp, tps)))?;
        t.i32(Some(i32::from(w.cpu)))?;
        t.i64(labels.pid_of(w.waking_thread).map(signed))?;
        t.i64(Some(signed(w.waking_thread)))?;
        t.str(labels.thread(w.waking_thread))?;
        t.end_row()
    }
}

/// The `out_state` column: FXT's thread states, lowercase.
fn state_name(state: ThreadState) -> &'static str {
    match state {
        ThreadState::New => "new",
        ThreadState::Running => "running",
        ThreadState::Suspended => "suspended",
        ThreadState::Blocked => "blocked",
        ThreadState::Dying => "dying",
        ThreadState::Dead => "dead",
        ThreadState::Other(_) => "other",
    }
}
