//! `fxt stats` on CPU samples (issue 31): for each duration name, how many
//! samples were taken while a slice of that name was open on their thread,
//! and the functions they were in most (the innermost frame, by name where
//! the trace holds symbols); the functions sampled most overall. Where the
//! trace says its processes' sampling rates (`fxt.sampling`), each count
//! comes with the CPU time it stands for: one period per sample, or, where
//! a timer's signals stood for several periods (the kernel's tick is
//! slower than the rate), the periods the process's samples stood for on
//! average ([`Sampling::cpu_ns_per_sample`]).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};

use fxt_format::decode::{Context, Record, View};
use fxt_format::samples::Sampling;
use fxt_format::time::ticks_per_second_or_default;
use serde_json::{json, Value};

use crate::error::Error;
use crate::samples::{Collector, Gather, Timeline};

/// Functions listed per duration name.
const TOP: usize = 3;
/// Functions listed overall.
const TOP_FUNCTIONS: usize = 10;

/// Samples and slices, collected during a walk in file order (nothing when
/// the trace, read from a file, holds no sample: it was walked in ranges).
pub struct SampleTally {
    active: bool,
    collector: Collector,
    timeline: Timeline,
    gather: Gather,
    /// The sampling rate and sources of each process that says them.
    sampling: HashMap<u64, Sampling>,
}

impl SampleTally {
    /// A tally that collects (`active`), or one that stays empty.
    pub fn new(active: bool) -> Self {
        Self {
            active,
            collector: Collector::default(),
            timeline: Timeline::default(),
            gather: Gather::default(),
            sampling: HashMap::new(),
        }
    }

    /// Takes a record of a walk in file order, as its view: a sample, a
    /// slice's begin or end, a record that names samples, a process's
    /// sampling rate (no event decoded but those that name samples).
    pub fn see_view(&mut self, ctx: &Context<'_>, view: &View<'_>) -> Result<(), Error> {
        if !self.active {
            return Ok(());
        }
        let provider = ctx.provider_id();
        let tps = ticks_per_second_or_default(ctx.ticks_per_second());
        if let View::Record(record) = view {
            // Samples are blobs, never events.
            self.collector.see(provider, tps, record);
            if let Record::Blob(blob) = record {
                if let Some(Ok(s)) = Sampling::from_blob(blob) {
                    self.sampling.insert(s.pid, s);
                }
            }
        }
        self.timeline.see_view(ctx, view);
        self.gather.see_view(ctx, view)
    }
}

/// Samples, and the CPU time they stand for (nanoseconds; `None` when a
/// sample's process does not say its rate).
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    samples: u64,
    cpu_ns: Option<u64>,
}

impl Count {
    /// Adds one sample of a period of `period_ns`.
    fn add(&mut self, period_ns: Option<u64>) {
        self.merge(Count {
            samples: 1,
            cpu_ns: period_ns,
        });
    }

    /// Adds `other`'s samples (the CPU time is known if it is for both).
    fn merge(&mut self, other: Count) {
        self.cpu_ns = match (self.samples, self.cpu_ns, other.cpu_ns) {
            (0, _, t) => t,
            (_, Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
        self.samples += other.samples;
    }
}

/// Samples of one duration name.
pub struct Inside {
    name: String,
    count: Count,
    /// Function and samples, most first.
    top: Vec<(String, Count)>,
}

/// Spans of threads, by `(provider, pid, tid)`: `(begin, end, name)` in
/// ns, whose samples are counted by the span's name (a task's long polls).
pub type Spans = HashMap<(Option<u32>, u64, u64), Vec<(u64, u64, String)>>;

/// What the samples say.
pub struct SampleReport {
    /// The samples inside the spans given to [`report`], per span name,
    /// most first.
    in_spans: Vec<Inside>,
    total: u64,
    threads: usize,
    symbolized: bool,
    /// Each sampled process's rate and sources, by pid.
    sampling: Vec<Sampling>,
    /// Most samples first.
    inside: Vec<Inside>,
    /// The functions sampled most (innermost frame), most first.
    functions: Vec<(String, Count)>,
}

/// Sorts counts most samples first, then by name.
fn most_first(counts: HashMap<String, Count>) -> Vec<(String, Count)> {
    let mut v: Vec<(String, Count)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.samples.cmp(&a.1.samples).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The samples in `spans` counted by span name: the total and the
/// functions sampled most, most first.
pub struct SpanSamples<'a> {
    pub samples: u64,
    pub top: Vec<(&'a str, u64)>,
}

impl SampleReport {
    /// The samples taken inside the spans named `name` (see [`Spans`]).
    pub fn in_spans(&self, name: &str) -> Option<SpanSamples<'_>> {
        let d = self.in_spans.iter().find(|d| d.name == name)?;
        Some(SpanSamples {
            samples: d.count.samples,
            top: d.top.iter().map(|(f, c)| (f.as_str(), c.samples)).collect(),
        })
    }
}

/// Groups per-name function counts as [`Inside`], most samples first.
fn inside_of(by_name: BTreeMap<String, HashMap<String, Count>>) -> Vec<Inside> {
    let mut inside: Vec<Inside> = by_name
        .into_iter()
        .map(|(name, functions)| {
            let mut count = Count::default();
            for c in functions.values() {
                count.merge(*c);
            }
            let mut top = most_first(functions);
            top.truncate(TOP);
            Inside { name, count, top }
        })
        .collect();
    inside.sort_by(|a, b| {
        b.count
            .samples
            .cmp(&a.count.samples)
            .then_with(|| a.name.cmp(&b.name))
    });
    inside
}

/// The report of `tally`, with the names the trace holds; the samples
/// inside `spans` counted apart.
pub fn report(tally: SampleTally, spans: &Spans) -> SampleReport {
    let names = tally.gather.finish();
    let samples = tally.collector.samples;
    let threads: HashSet<_> = samples
        .iter()
        .map(|s| (s.sample.pid, s.sample.tid))
        .collect();
    let period = |pid: u64| {
        tally
            .sampling
            .get(&pid)
            .and_then(Sampling::cpu_ns_per_sample)
    };
    let enclosing = tally.timeline.enclosing(&samples);
    let mut by_name: BTreeMap<String, HashMap<String, Count>> = BTreeMap::new();
    let mut functions: HashMap<String, Count> = HashMap::new();
    let mut in_spans: BTreeMap<String, HashMap<String, Count>> = BTreeMap::new();
    for (s, open) in samples.iter().zip(&enclosing) {
        let leaf = names.leaf(&s.sample);
        let p = period(s.sample.pid);
        functions.entry(leaf.clone()).or_default().add(p);
        let thread = (s.provider, s.sample.pid, s.sample.tid);
        for (_, _, name) in spans
            .get(&thread)
            .into_iter()
            .flatten()
            .filter(|(b, e, _)| *b <= s.ns && s.ns <= *e)
        {
            let per = in_spans.entry(name.clone()).or_default();
            per.entry(leaf.clone()).or_default().add(p);
        }
        let distinct: HashSet<String> = open.iter().map(ToString::to_string).collect();
        for name in distinct {
            by_name
                .entry(name)
                .or_default()
                .entry(leaf.clone())
                .or_default()
                .add(p);
        }
    }
    let inside = inside_of(by_name);
    let mut functions = most_first(functions);
    functions.truncate(TOP_FUNCTIONS);
    let mut sampling: Vec<Sampling> = tally.sampling.into_values().collect();
    sampling.sort_by_key(|s| s.pid);
    SampleReport {
        in_spans: inside_of(in_spans),
        total: samples.len() as u64,
        threads: threads.len(),
        symbolized: !names.is_empty(),
        sampling,
        inside,
        functions,
    }
}

/// `12.3 ms` of CPU time, or nothing when the rate is unknown.
fn cpu(count: &Count) -> String {
    count
        .cpu_ns
        .map_or_else(String::new, |ns| format!("{:.1} ms", ns as f64 / 1e6))
}

/// The rates line: `1000 Hz (perf_event)` per distinct rate and source,
/// with the rate the samples came at where it was less (`1000 Hz asked,
/// 250 Hz taken (timer)`).
fn rates(sampling: &[Sampling]) -> String {
    let mut said: Vec<String> = sampling
        .iter()
        .map(|s| match s.effective_hz() {
            hz if hz < s.hz => format!("{} Hz asked, {hz} Hz taken ({})", s.hz, s.source()),
            _ => format!("{} Hz ({})", s.hz, s.source()),
        })
        .collect();
    said.dedup();
    said.join(", ")
}

/// The table section (nothing for a trace without samples).
pub fn write_table(w: &mut impl Write, r: &SampleReport) -> io::Result<()> {
    if r.total == 0 {
        return Ok(());
    }
    writeln!(w)?;
    writeln!(
        w,
        "CPU samples   {} on {} thread{}{}{}",
        r.total,
        r.threads,
        if r.threads == 1 { "" } else { "s" },
        if r.sampling.is_empty() {
            " (rate not recorded: no CPU time)".to_owned()
        } else {
            format!(", {}", rates(&r.sampling))
        },
        if r.symbolized {
            ""
        } else {
            " (no symbols: `fxt symbolize` names them)"
        }
    )?;
    if !r.inside.is_empty() {
        writeln!(
            w,
            "{:<32} {:>8} {:>10}  functions sampled most",
            "inside duration", "samples", "CPU"
        )?;
        for d in &r.inside {
            let top: Vec<String> = d
                .top
                .iter()
                .map(|(f, n)| {
                    let share = 100.0 * n.samples as f64 / d.count.samples as f64;
                    format!("{f} {share:.1}%")
                })
                .collect();
            let (n, time) = (d.count.samples, cpu(&d.count));
            writeln!(w, "{:<32} {n:>8} {time:>10}  {}", d.name, top.join(", "))?;
        }
    }
    writeln!(w, "{:<32} {:>8} {:>10}", "function", "samples", "CPU")?;
    for (f, n) in &r.functions {
        writeln!(w, "{f:<32} {:>8} {:>10}", n.samples, cpu(n))?;
    }
    Ok(())
}

/// A count as JSON: samples, and `cpu_ns` (`null` when the rate is unknown).
fn count_json(c: &Count) -> (u64, Value) {
    (c.samples, c.cpu_ns.map_or(Value::Null, Value::from))
}

/// The JSON member (`null` for a trace without samples).
pub fn document(r: &SampleReport) -> Value {
    if r.total == 0 {
        return Value::Null;
    }
    let function = |(f, n): &(String, Count)| {
        let (samples, cpu_ns) = count_json(n);
        json!({"function": f, "samples": samples, "cpu_ns": cpu_ns})
    };
    json!({
        "total": r.total,
        "threads": r.threads,
        "symbolized": r.symbolized,
        "sampling": r.sampling.iter().map(|s| json!({
            "pid": s.pid,
            "hz": s.hz,
            "effective_hz": s.effective_hz(),
            "cpu_ns_per_sample": s.cpu_ns_per_sample(),
            "source": s.source(),
            "perf_event_threads": s.perf_threads,
            "timer_threads": s.timer_threads,
        })).collect::<Vec<_>>(),
        "inside": r.inside.iter().map(|d| {
            let (samples, cpu_ns) = count_json(&d.count);
            json!({
                "name": d.name,
                "samples": samples,
                "cpu_ns": cpu_ns,
                "top": d.top.iter().map(function).collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
        "functions": r.functions.iter().map(function).collect::<Vec<_>>(),
    })
}
