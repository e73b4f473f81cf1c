//! Many inputs on many cores: the inputs are dealt to `FXT_THREADS`
//! threads (the cores this process may use, by default; never more than
//! the inputs), largest first to the thread with the fewest bytes so far,
//! and each thread exports its inputs, in command-line order, into a part
//! of its own. The rows are those of one export per input, memory is
//! bounded per thread as it is for one input, and the same command on the
//! same files writes the same parts. A part's footer names the traces it
//! holds ([`super::existing`]), so `--replace` finds them wherever they
//! went. On one thread this is the export of every input, in order, into
//! one part.
//!
//! An input that fails stops every thread before its next input; the
//! error of the first such input (in command-line order) is the export's,
//! and every part is then dropped, its files removed.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::schema::Tables;
use super::summary::Summary;
use crate::error::Error;

/// The tables one thread wrote and the traces they hold.
pub struct Part {
    /// The tables, not yet closed.
    pub tables: Tables,
    /// The inputs exported into them, as named on the command line.
    pub traces: Vec<String>,
}

/// What one thread did.
struct Worker {
    part: Part,
    summary: Summary,
    /// The first input that failed, by its place on the command line.
    error: Option<(usize, Error)>,
}

impl Worker {
    /// A thread that writes into `tables`.
    fn new(tables: Tables) -> Worker {
        Worker {
            part: Part {
                tables,
                traces: Vec::new(),
            },
            summary: Summary::default(),
            error: None,
        }
    }
}

/// How one input is exported into a thread's tables (the command's
/// `export_one`, handed down rather than called up).
pub type ExportOne = fn(&str, &str, &Path, &mut Tables, &mut Summary) -> Result<(), Error>;

/// Exports `files` into parts in `dir` for `host`, each with `export`:
/// the parts (not yet closed) and the summed counts.
pub fn export_all(
    files: &[String],
    host: &str,
    dir: &Path,
    export: ExportOne,
) -> Result<(Vec<Part>, Summary), Error> {
    let cores = crate::walk::reading_threads();
    let threads = cores.clamp(1, files.len().max(1));
    let failed = AtomicBool::new(false);
    let lists = deal(files, threads);
    // Claimed here, in order: the n-th thread's part is the n-th number.
    let mut workers: Vec<Worker> = Vec::with_capacity(lists.len());
    for _ in &lists {
        let mut tables = Tables::create(dir, host)?;
        if cores > lists.len() {
            // Fewer inputs than cores: the spare ones encode.
            tables.encode_on_threads();
        }
        workers.push(Worker::new(tables));
    }
    match &mut workers[..] {
        [one] => work(files, &lists[0], &failed, (host, dir, export), one),
        _ => std::thread::scope(|scope| {
            for (list, worker) in lists.iter().zip(workers.iter_mut()) {
                let failed = &failed;
                scope.spawn(move || work(files, list, failed, (host, dir, export), worker));
            }
        }),
    }
    let mut parts = Vec::with_capacity(workers.len());
    let mut summary = Summary::default();
    let mut first_error: Option<(usize, Error)> = None;
    for w in workers {
        if let Some((i, e)) = w.error {
            if first_error.as_ref().is_none_or(|(j, _)| i < *j) {
                first_error = Some((i, e));
            }
        }
        parts.push(w.part);
        summary.add(w.summary);
    }
    match first_error {
        // Dropping the parts removes their files.
        Some((_, e)) => Err(e),
        None => Ok((parts, summary)),
    }
}

/// The inputs of each of `threads` threads (by their place on the
/// command line, in order): largest first to the thread with the fewest
/// bytes so far (standard input counts as empty).
fn deal(files: &[String], threads: usize) -> Vec<Vec<usize>> {
    let mut by_size: Vec<(u64, usize)> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (std::fs::metadata(f).map_or(0, |m| m.len()), i))
        .collect();
    by_size.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut lists: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); threads];
    for (bytes, i) in by_size {
        if let Some(list) = lists.iter_mut().min_by_key(|(load, l)| (*load, l.len())) {
            list.0 += bytes;
            list.1.push(i);
        }
    }
    lists
        .into_iter()
        .map(|(_, mut l)| {
            l.sort_unstable();
            l
        })
        .filter(|l| !l.is_empty())
        .collect()
}

/// One thread: exports the inputs `list` names until one fails, here or
/// on another thread.
fn work(
    files: &[String],
    list: &[usize],
    failed: &AtomicBool,
    (host, dir, export): (&str, &Path, ExportOne),
    worker: &mut Worker,
) {
    for &i in list {
        // Relaxed: the flag only stops threads early; the error itself
        // comes back in the worker, read after the join.
        if failed.load(Ordering::Relaxed) {
            break;
        }
        let part = &mut worker.part;
        match export(&files[i], host, dir, &mut part.tables, &mut worker.summary) {
            Ok(()) => part.traces.push(files[i].clone()),
            Err(e) => {
                failed.store(true, Ordering::Relaxed);
                worker.error = Some((i, e));
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_dealt_largest_first_to_the_least_loaded_thread() {
        let dir = tempfile::tempdir().unwrap();
        let files: Vec<String> = [100, 10, 60, 50]
            .iter()
            .enumerate()
            .map(|(i, len)| {
                let path = dir.path().join(format!("{i}.fxt"));
                std::fs::write(&path, vec![0u8; *len]).unwrap();
                path.to_string_lossy().into_owned()
            })
            .collect();
        // 100 → first; 60, 50 → second (110); 10 → first (110).
        assert_eq!(deal(&files, 2), [vec![0, 1], vec![2, 3]]);
        assert_eq!(deal(&files, 1), [vec![0, 1, 2, 3]]);
        // More threads than inputs: one input each, none idle.
        assert_eq!(deal(&files[..2], 4), [vec![0], vec![1]]);
        // Standard input (no size) still goes somewhere.
        let with_stdin = ["-".to_owned(), files[0].clone()];
        assert_eq!(deal(&with_stdin, 2), [vec![1], vec![0]]);
    }
}
