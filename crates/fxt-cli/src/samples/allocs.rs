//! Sampled allocations (issue 45) for the commands that read them: the
//! `fxt.alloc` records of a trace, their frees paired with them by address
//! (what is live at the end), the bytes each stands for
//! (`fxt_format::samples::estimated_bytes`), and their stacks named and
//! folded as the CPU samples' are ([`super::Names`]).
//!
//! An allocation's stack is named through the same path as a CPU sample's:
//! each record becomes a sample-shaped record ([`Allocated::as_sample`])
//! that [`super::Gather`] names with the trace's symbols or modules. The
//! innermost frames of fxt's own hook (`fxt_runtime::`) are left out of
//! the stacks shown.

use std::collections::HashMap;

use fxt_format::decode::{Record, Text};
use fxt_format::samples::{AllocKind, AllocRecord, SampleRecord};

use super::{Names, Sampled};
use crate::folded::Folded;

/// One `fxt.alloc` record and where it was read.
#[derive(Debug, Clone)]
pub struct Allocated {
    /// The provider whose records it was among.
    pub provider: Option<u32>,
    /// Its timestamp in nanoseconds.
    pub ns: u64,
    /// The record.
    pub record: AllocRecord,
}

impl Allocated {
    /// The bytes this sample stands for.
    pub fn bytes(&self) -> f64 {
        self.record.estimated_bytes()
    }

    /// The record shaped as a CPU sample (its stack), to name and to place
    /// among the slices as samples are.
    pub fn as_sample(&self) -> Sampled {
        Sampled {
            provider: self.provider,
            ns: self.ns,
            sample: sample_shaped(&self.record),
        }
    }
}

/// An allocation record's stack shaped as a CPU sample, to name (and
/// unwind) as samples are.
pub fn sample_shaped(r: &AllocRecord) -> SampleRecord {
    SampleRecord {
        timestamp: r.timestamp,
        pid: r.pid,
        tid: r.tid,
        walk: r.walk,
        truncated: r.truncated,
        frames: r.frames.clone(),
        raw_stack: r.raw_stack.clone(),
    }
}

/// The `fxt.alloc` record a record holds, if it is one that decodes
/// (`Some(Err)` for one that does not).
pub fn alloc_of(record: &Record) -> Option<Result<AllocRecord, String>> {
    let Record::Blob(blob) = record else {
        return None;
    };
    AllocRecord::from_blob(blob).map(|r| r.map_err(|e| e.to_string()))
}

/// Collects a trace's allocation records during a walk.
#[derive(Default)]
pub struct AllocCollector {
    /// The allocations (kind alloc), in file order.
    pub allocs: Vec<Allocated>,
    /// The frees of sampled blocks, in file order.
    pub frees: Vec<Allocated>,
    /// `fxt.alloc` blobs whose payload did not decode.
    pub malformed: u64,
}

impl AllocCollector {
    /// Takes the record if it is an `fxt.alloc` record.
    pub fn see(&mut self, provider: Option<u32>, ticks_per_second: u64, record: &Record) {
        match alloc_of(record) {
            Some(Ok(record)) => {
                let a = Allocated {
                    provider,
                    ns: fxt_format::time::ticks_to_ns(record.timestamp, ticks_per_second),
                    record,
                };
                match a.record.kind {
                    AllocKind::Alloc => self.allocs.push(a),
                    AllocKind::Free => self.frees.push(a),
                }
            }
            Some(Err(_)) => self.malformed += 1,
            None => {}
        }
    }

    /// Folds in the records of the next range of a walk (ranges in file
    /// order).
    pub fn merge(&mut self, later: AllocCollector) {
        self.allocs.extend(later.allocs);
        self.frees.extend(later.frees);
        self.malformed += later.malformed;
    }

    /// Which allocations are still live at the end of the trace: `true` at
    /// the index of each allocation no later free (same process, same
    /// address) follows. Untracked allocations (their frees were not
    /// recorded) count as live: [`Self::untracked`] says how many.
    pub fn live(&self) -> Vec<bool> {
        // (pid, ns, order, index): allocations before frees at one instant.
        let mut events: Vec<(u64, u64, u8, usize)> = Vec::new();
        for (i, a) in self.allocs.iter().enumerate() {
            events.push((a.record.pid, a.ns, 0, i));
        }
        for (i, f) in self.frees.iter().enumerate() {
            events.push((f.record.pid, f.ns, 1, i));
        }
        events.sort_unstable();
        let mut live = vec![false; self.allocs.len()];
        let mut at: HashMap<(u64, u64), usize> = HashMap::new();
        for (pid, _, kind, i) in events {
            if kind == 0 {
                let a = &self.allocs[i];
                live[i] = true;
                if let Some(earlier) = at.insert((pid, a.record.address), i) {
                    // A block at this address again without a recorded
                    // free: the earlier one was freed unseen (untracked,
                    // or its free dropped), as two live blocks never share
                    // an address.
                    live[earlier] = false;
                }
            } else if let Some(i) = at.remove(&(pid, self.frees[i].record.address)) {
                live[i] = false;
            }
        }
        live
    }

    /// Allocations recorded untracked (their frees are not recorded).
    pub fn untracked(&self) -> usize {
        self.allocs.iter().filter(|a| a.record.untracked).count()
    }

    /// The allocations shaped as samples (for [`super::Gather::add`] and
    /// [`super::Timeline::enclosing`]).
    pub fn as_samples(&self) -> Vec<Sampled> {
        self.allocs.iter().map(Allocated::as_sample).collect()
    }
}

/// A stack's function names, innermost first, without fxt's own hook
/// frames at its inner end.
pub fn stack(names: &Names, sample: &SampleRecord) -> Vec<String> {
    let mut stack = names.stack(sample);
    let hook = stack
        .iter()
        .take_while(|f| f.contains("fxt_runtime::"))
        .count();
    stack.drain(..hook);
    stack
}

/// The folded stacks (`outer;…;inner BYTES`) of the allocations whose
/// entry in `keep` is true, weighted by the bytes they stand for; with
/// `inside`, only those whose entry in `enclosing` names it.
pub fn fold(
    samples: &[Sampled],
    bytes: &[f64],
    keep: &[bool],
    names: &Names,
    inside: Option<(&str, &[Vec<Text>])>,
) -> Folded {
    super::fold::weighted(samples, inside, |i, s| {
        if !keep.get(i).copied().unwrap_or(false) {
            return None;
        }
        let mut frames = stack(names, &s.sample);
        if frames.is_empty() {
            frames.push("[unknown]".into());
        }
        Some((frames, bytes.get(i).copied().unwrap_or(0.0)))
    })
}

/// Whether a function is the allocator's machinery (Rust's allocation
/// API and collections' growth), not a site of the program. Inlined
/// frames are often named without their path (`from_elem<alloc::…>`):
/// those that mention `alloc::` in their parameters count too. A path
/// in Rust's `alloc` crate is told by its module, so that a program's
/// own crate named `alloc` (as fxt's example is) keeps its sites.
fn is_machinery(function: &str) -> bool {
    const PREFIXES: [&str; 8] = [
        "__rust",
        "__rdl",
        "core::",
        "<core::",
        "std::alloc::",
        "<std::alloc::",
        "hashbrown::",
        "<hashbrown::",
    ];
    let base = function.split('<').next().unwrap_or(function);
    PREFIXES.iter().any(|p| function.starts_with(p))
        || in_alloc_crate(function)
        || (!base.contains("::") && function.contains("alloc::"))
}

/// Whether `function`'s path (or, `<alloc::…>::f`, its type's) lies in a
/// module of Rust's `alloc` crate.
fn in_alloc_crate(function: &str) -> bool {
    const MODULES: [&str; 14] = [
        "alloc",
        "borrow",
        "boxed",
        "collections",
        "ffi",
        "fmt",
        "raw_vec",
        "rc",
        "slice",
        "str",
        "string",
        "sync",
        "task",
        "vec",
    ];
    let path = function.strip_prefix('<').unwrap_or(function);
    let Some(rest) = path.strip_prefix("alloc::") else {
        return false;
    };
    let module = rest.split([':', '<', '>']).next().unwrap_or("");
    MODULES.contains(&module)
}

/// An allocation's site: the innermost function of its stack outside the
/// allocator's machinery, with its caller (`helper < caller`), so that a
/// helper shared by several callers shows once per caller.
pub fn site(stack: &[String]) -> String {
    let mut program = stack.iter().filter(|f| !is_machinery(f));
    match (program.next(), program.next()) {
        (Some(f), Some(caller)) => format!("{f} < {caller}"),
        (Some(f), None) => f.clone(),
        (None, _) => stack.first().cloned().unwrap_or_else(|| "[unknown]".into()),
    }
}

/// The sites that allocated the most ([`site`]), with their estimated
/// bytes, most first.
pub fn top_sites(
    samples: &[Sampled],
    bytes: &[f64],
    keep: &[bool],
    names: &Names,
    top: usize,
) -> Vec<(String, f64)> {
    let mut sums: HashMap<String, f64> = HashMap::new();
    for (i, s) in samples.iter().enumerate() {
        if !keep.get(i).copied().unwrap_or(false) {
            continue;
        }
        let frames = stack(names, &s.sample);
        *sums.entry(site(&frames)).or_default() += bytes.get(i).copied().unwrap_or(0.0);
    }
    let mut list: Vec<(String, f64)> = sums.into_iter().collect();
    list.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    list.truncate(top);
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_is_the_first_program_function_with_its_caller() {
        let stack: Vec<String> = [
            "__rustc::__rust_alloc_zeroed",
            "<alloc::raw_vec::RawVecInner>::try_allocate_in",
            "with_capacity_zeroed_in<u8, alloc::alloc::Global>",
            "from_elem<alloc::alloc::Global>",
            "alloc::vec::from_elem",
            "app::make_block",
            "app::site_a",
            "app::main",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(site(&stack), "app::make_block < app::site_a");
        assert_eq!(site(&stack[..6]), "app::make_block");
        assert_eq!(site(&stack[..1]), "__rustc::__rust_alloc_zeroed");
    }

    /// A program whose own crate is named `alloc` (fxt's example): its
    /// functions are sites, Rust's `alloc` crate's are not.
    #[test]
    fn a_crate_named_alloc_keeps_its_sites() {
        let stack: Vec<String> = [
            "<alloc::raw_vec::RawVecInner>::try_allocate_in",
            "alloc::alloc::exchange_malloc",
            "alloc::vec::from_elem",
            "<alloc::vec::Vec<u8>>::push",
            "alloc::make_block",
            "alloc::site_b",
            "alloc::main",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(site(&stack), "alloc::make_block < alloc::site_b");
        assert!(is_machinery("alloc::raw_vec::finish_grow"));
        assert!(!is_machinery("alloc::site_a"));
    }
}
