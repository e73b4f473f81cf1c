//! Collecting a spool's traces into one archive: every process's trace
//! appended with one provider per process, every timestamp mapped to the
//! time base, the kernel's scheduling (if captured) as one more provider,
//! written beside the output and renamed over it. `fxt record` collects
//! with [`collect`]; `fxt trace` with [`collect_with`], whose scheduling
//! comes from a file (its recorder is another process) and whose providers
//! that did not finish are named so in the archive. CPU samples end up
//! named, with their Perfetto packets ([`crate::samples::append_names`]).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::archive::{Archive, Retime};
use crate::error::Error;
use crate::input::Input;
use crate::samples;

use super::capture::Sched;
use super::spool;
use super::timebase::{self, TimeBase, NS};

/// What a scheduling capture counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedCounts {
    /// Context switches kept.
    pub switches: u64,
    /// Wakeups kept.
    pub wakeups: u64,
    /// Samples the kernel could not write.
    pub lost: u64,
}

/// What a process's trace without counts (`PID.stats`) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfinished {
    /// Its session did not finish: said in the summary.
    Report,
    /// Also named so in the archive (provider name + " (unfinished)").
    Mark,
    /// Nothing: snapshots never have counts.
    Ignore,
}

/// How [`collect_with`] collects.
pub struct Collection<'a> {
    /// The command the summary lines name (`fxt trace`).
    pub command: &'a str,
    /// Scheduling records already on the archive's clock (an FXT file),
    /// with their counts.
    pub sched_file: Option<(PathBuf, SchedCounts)>,
    /// What a trace without counts means.
    pub unfinished: Unfinished,
}

/// What a collection wrote.
pub struct Summary {
    command: String,
    /// The processes whose traces are in the archive.
    pids: Vec<u32>,
    records: u64,
    dropped: u64,
    /// Processes whose session did not finish (killed, or still running).
    unfinished: Vec<u32>,
    /// Processes still writing when the archive was written.
    pub still_writing: Vec<u32>,
    anchored: bool,
    /// Context switches, wakeups and lost samples, with --sched.
    sched: Option<SchedCounts>,
}

impl Summary {
    /// The processes whose traces are in the archive, in order.
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// Whether the archive holds nothing: no process's trace, and no
    /// scheduling (none asked for, or none recorded).
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.sched.is_none_or(|c| c.switches == 0 && c.wakeups == 0)
    }

    /// Prints the summary lines on stderr.
    pub fn print(&self, output: &Path) {
        let command = &self.command;
        let lost = match self.sched {
            Some(SchedCounts { lost, .. }) => format!(", {lost} scheduling samples lost"),
            None => String::new(),
        };
        eprintln!(
            "{command}: {} processes, {} records, {} dropped{lost} -> {}",
            self.pids.len(),
            self.records,
            self.dropped,
            output.display()
        );
        if let Some(SchedCounts {
            switches, wakeups, ..
        }) = self.sched
        {
            eprintln!("{command}: scheduling: {switches} context switches, {wakeups} wakeups");
        }
        let list = |pids: &[u32]| {
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.unfinished.is_empty() {
            eprintln!(
                "{command}: did not finish (killed or still running): pid {}; the archive holds what they published",
                list(&self.unfinished)
            );
        }
        if !self.still_writing.is_empty() {
            eprintln!(
                "{command}: still writing when the archive was written: pid {}",
                list(&self.still_writing)
            );
        }
        if !self.anchored && !self.pids.is_empty() {
            eprintln!(
                "{command}: no TSC anchors; TSC timestamps are scaled by each process's own rate"
            );
        }
    }
}

/// Collects a spool left by a recorder that did not finish (`fxt record
/// --from-spool`): on one time base through the anchor it saved at the
/// start and one taken now, if the machine has not rebooted since.
pub fn collect_left(dir: &Path, output: &Path, parent: &Path) -> Result<Summary, Error> {
    let info = spool::read_info(dir).map_err(|e| Error::msg(format!("{}: {e}", dir.display())))?;
    let same_boot = info.boot_id == spool::boot_id();
    let end = same_boot.then(timebase::anchor).flatten();
    if !info.boot_id.is_empty() && !same_boot {
        eprintln!(
            "fxt record: {} was recorded before a reboot; TSC timestamps are scaled by each process's own rate, not put on one time base",
            dir.display()
        );
    }
    collect(dir, output, parent, TimeBase::new(info.start, end), None)
}

/// Merges the traces of `dir` into `output` for `fxt record` (see
/// [`collect_with`]), with the scheduling it captured.
pub fn collect(
    dir: &Path,
    output: &Path,
    parent: &Path,
    base: TimeBase,
    sched: Option<Sched>,
) -> Result<Summary, Error> {
    #[cfg(target_os = "linux")]
    let sched = match sched {
        Some(Sched(trace)) => {
            // Already on the archive's clock (CLOCK_MONOTONIC_RAW ns).
            let mut bytes = Vec::new();
            trace
                .write_fxt(&mut bytes, 0)
                .map_err(|e| Error::io("scheduling records", e))?;
            let counts = SchedCounts {
                switches: trace.switches(),
                wakeups: trace.wakeups(),
                lost: trace.lost(),
            };
            Some((Input::from_bytes("scheduling records", bytes), counts))
        }
        None => None,
    };
    #[cfg(not(target_os = "linux"))]
    let sched = sched.map(|Sched| {
        (
            Input::from_bytes("scheduling records", Vec::new()),
            SchedCounts::default(),
        )
    });
    merge_into(
        dir,
        output,
        parent,
        base,
        sched,
        ("fxt record", Unfinished::Report),
    )
}

/// Merges the traces of `dir` into `output` as `how` says.
pub fn collect_with(
    dir: &Path,
    output: &Path,
    parent: &Path,
    base: TimeBase,
    how: Collection<'_>,
) -> Result<Summary, Error> {
    let sched = match how.sched_file {
        Some((path, counts)) => Some((Input::open_bytes(&path.to_string_lossy())?, counts)),
        None => None,
    };
    merge_into(
        dir,
        output,
        parent,
        base,
        sched,
        (how.command, how.unfinished),
    )
}

/// Merges the traces of `dir` (and the scheduling records) into `output`:
/// written to a new file in `parent` (created exclusively, never through a
/// symlink), then renamed over `output`.
fn merge_into(
    dir: &Path,
    output: &Path,
    parent: &Path,
    base: TimeBase,
    sched: Option<(Input, SchedCounts)>,
    (command, unfinished): (&str, Unfinished),
) -> Result<Summary, Error> {
    let entries = spool::entries(dir).map_err(|e| Error::msg(format!("{}: {e}", dir.display())))?;
    let tmp = parent.join(format!(".fxt-record-{}.tmp", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .map_err(|e| Error::msg(format!("cannot create {}: {e}", tmp.display())))?;
    let result = write_archive(&entries, file, &tmp, base, sched, unfinished).and_then(|s| {
        samples::append_names(&tmp).map_err(|e| Error::io(&tmp.display().to_string(), e))?;
        Ok(s)
    });
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, output).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::msg(format!("cannot write {}: {e}", output.display()))
    })?;
    Ok(Summary {
        command: command.to_owned(),
        anchored: base.anchored(),
        ..summary
    })
}

fn write_archive(
    entries: &[spool::Entry],
    file: File,
    tmp: &Path,
    base: TimeBase,
    sched: Option<(Input, SchedCounts)>,
    unfinished_means: Unfinished,
) -> Result<Summary, Error> {
    let map = |tps: u64, ticks: u64| base.map(tps, ticks);
    let retime = Retime {
        map: &map,
        ticks_per_second: NS,
    };
    let mut archive = Archive::new(
        BufWriter::with_capacity(1 << 16, file),
        &tmp.display().to_string(),
    )?;
    let mut pids = Vec::new();
    let mut dropped = 0;
    let mut unfinished = Vec::new();
    for e in entries {
        let mut input = Input::open_bytes(&e.path.to_string_lossy())?;
        let unfinished_here = e.counts.is_none() && unfinished_means == Unfinished::Mark;
        archive.set_name_suffix(if unfinished_here { " (unfinished)" } else { "" });
        archive.append(&mut input, &format!("pid {}", e.pid), Some(&retime))?;
        if !pids.contains(&e.pid) {
            pids.push(e.pid);
        }
        match e.counts {
            Some(c) => dropped += c.records_dropped + c.late_records_dropped,
            None if unfinished_means == Unfinished::Ignore => {}
            None => {
                if !unfinished.contains(&e.pid) {
                    unfinished.push(e.pid);
                }
            }
        }
    }
    archive.set_name_suffix("");
    let sched = match sched {
        Some((mut input, counts)) => {
            // Already on the archive's clock: the mapping leaves it as is.
            archive.append(&mut input, "kernel scheduler", Some(&retime))?;
            Some(counts)
        }
        None => None,
    };
    let records = archive.records();
    let mut out = archive.finish()?;
    out.flush()
        .map_err(|e| Error::io(&tmp.display().to_string(), e))?;
    out.get_ref()
        .sync_all()
        .map_err(|e| Error::io(&tmp.display().to_string(), e))?;
    Ok(Summary {
        command: String::new(),
        pids,
        records,
        dropped,
        unfinished,
        still_writing: Vec::new(),
        anchored: false,
        sched,
    })
}
