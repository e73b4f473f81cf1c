//! The names of processes and threads, gathered by the first pass (kernel
//! object records may come after the events they name, e.g. the scheduler
//! provider of `fxt record --sched`), and the threads and processes the
//! second pass saw, for the `threads` and `processes` tables.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;

use fxt_format::decode::Record;

/// A process name, a thread name and its process, by koid.
#[derive(Default)]
pub struct Labels {
    processes: FxHashMap<u64, String>,
    threads: FxHashMap<u64, (u64, String)>,
    providers: FxHashMap<u32, String>,
}

/// Kernel object types.
const PROCESS: u8 = 1;
const THREAD: u8 = 2;

impl Labels {
    /// Learns the names a record gives.
    pub fn see(&mut self, record: &Record) {
        match record {
            Record::KernelObject(o) if o.object_type == PROCESS => {
                self.processes.insert(o.koid, o.name.to_string());
            }
            Record::KernelObject(o) if o.object_type == THREAD => {
                let process = o.process_koid().unwrap_or(0);
                self.threads.insert(o.koid, (process, o.name.to_string()));
            }
            Record::ProviderInfo { provider_id, name } => {
                self.providers.insert(*provider_id, name.clone());
            }
            _ => {}
        }
    }

    /// The name of process `pid`: its kernel object's, else the name of
    /// the provider that recorded it.
    pub fn process(&self, pid: u64, provider: Option<u32>) -> Option<&str> {
        self.processes
            .get(&pid)
            .or_else(|| provider.and_then(|p| self.providers.get(&p)))
            .map(String::as_str)
    }

    /// The name of provider `id` (its provider info record's).
    pub fn provider(&self, id: Option<u32>) -> Option<&str> {
        id.and_then(|p| self.providers.get(&p)).map(String::as_str)
    }

    /// The name of thread `tid`.
    pub fn thread(&self, tid: u64) -> Option<&str> {
        self.threads.get(&tid).map(|(_, n)| n.as_str())
    }

    /// The process of thread `tid`, as its kernel object says.
    pub fn pid_of(&self, tid: u64) -> Option<u64> {
        self.threads.get(&tid).map(|(p, _)| *p)
    }

    /// Every named thread (tid → pid), and every named process.
    pub fn named(&self) -> (Vec<(u64, u64)>, Vec<u64>) {
        let threads = self.threads.iter().map(|(t, (p, _))| (*t, *p)).collect();
        (threads, self.processes.keys().copied().collect())
    }
}

/// The threads (by pid and tid) and processes an input's rows mention,
/// with the provider that first mentioned each.
#[derive(Default)]
pub struct Seen {
    /// (pid, tid) → provider.
    pub threads: BTreeMap<(u64, u64), Option<u32>>,
    /// Processes.
    pub processes: BTreeMap<u64, Option<u32>>,
    /// Threads whose process is unknown (scheduling records name tids).
    pub bare_tids: BTreeSet<u64>,
    /// The thread noted last (rows of one thread come in runs).
    last: Option<(u64, u64)>,
}

impl Seen {
    /// Notes a thread of a known process.
    pub fn thread(&mut self, pid: u64, tid: u64, provider: Option<u32>) {
        if self.last == Some((pid, tid)) {
            return;
        }
        self.last = Some((pid, tid));
        self.threads.entry((pid, tid)).or_insert(provider);
        self.processes.entry(pid).or_insert(provider);
    }
}
