//! Collecting a spool's traces into one archive: every process's trace
//! appended with one provider per process, every timestamp mapped to the
//! time base, the kernel's scheduling (if captured) as one more provider,
//! written beside the output and renamed over it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::archive::{Archive, Retime};
use crate::error::Error;
use crate::input::Input;

use super::capture::Sched;
use super::spool;
use super::timebase::{self, TimeBase, NS};

/// What a collection wrote.
pub struct Summary {
    processes: usize,
    records: u64,
    dropped: u64,
    /// Processes whose session did not finish (killed, or still running).
    unfinished: Vec<u32>,
    /// Processes still writing when the archive was written.
    pub still_writing: Vec<u32>,
    anchored: bool,
    /// Context switches, wakeups and lost samples, with --sched.
    sched: Option<(u64, u64, u64)>,
}

impl Summary {
    /// Prints the summary lines on stderr.
    pub fn print(&self, output: &Path) {
        let lost = match self.sched {
            Some((_, _, lost)) => format!(", {lost} scheduling samples lost"),
            None => String::new(),
        };
        eprintln!(
            "fxt record: {} processes, {} records, {} dropped{lost} -> {}",
            self.processes,
            self.records,
            self.dropped,
            output.display()
        );
        if let Some((switches, wakeups, _)) = self.sched {
            eprintln!("fxt record: scheduling: {switches} context switches, {wakeups} wakeups");
        }
        let list = |pids: &[u32]| {
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.unfinished.is_empty() {
            eprintln!(
                "fxt record: did not finish (killed or still running): pid {}; the archive holds what they published",
                list(&self.unfinished)
            );
        }
        if !self.still_writing.is_empty() {
            eprintln!(
                "fxt record: still writing when the archive was written: pid {}",
                list(&self.still_writing)
            );
        }
        if !self.anchored && self.processes > 0 {
            eprintln!(
                "fxt record: no TSC anchors; TSC timestamps are scaled by each process's own rate"
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

/// Merges the traces of `dir` into `output`: written to a new file in
/// `parent` (created exclusively, never through a symlink), then renamed
/// over `output`.
pub fn collect(
    dir: &Path,
    output: &Path,
    parent: &Path,
    base: TimeBase,
    sched: Option<Sched>,
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
    let result = write_archive(&entries, file, &tmp, base, sched);
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
        anchored: base.anchored(),
        ..summary
    })
}

fn write_archive(
    entries: &[spool::Entry],
    file: File,
    tmp: &Path,
    base: TimeBase,
    sched: Option<Sched>,
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
        archive.append(&mut input, &format!("pid {}", e.pid), Some(&retime))?;
        if !pids.contains(&e.pid) {
            pids.push(e.pid);
        }
        match e.counts {
            Some(c) => dropped += c.records_dropped + c.late_records_dropped,
            None => {
                if !unfinished.contains(&e.pid) {
                    unfinished.push(e.pid);
                }
            }
        }
    }
    #[cfg(target_os = "linux")]
    let sched = match sched {
        Some(Sched(trace)) => {
            // Already on the archive's clock (CLOCK_MONOTONIC_RAW ns).
            let mut bytes = Vec::new();
            trace
                .write_fxt(&mut bytes, 0)
                .map_err(|e| Error::io("scheduling records", e))?;
            let mut input = Input::from_bytes("scheduling records", bytes);
            archive.append(&mut input, "kernel scheduler", Some(&retime))?;
            Some((trace.switches(), trace.wakeups(), trace.lost()))
        }
        None => None,
    };
    #[cfg(not(target_os = "linux"))]
    let sched = sched.map(|Sched| (0, 0, 0));
    let records = archive.records();
    let mut out = archive.finish()?;
    out.flush()
        .map_err(|e| Error::io(&tmp.display().to_string(), e))?;
    out.get_ref()
        .sync_all()
        .map_err(|e| Error::io(&tmp.display().to_string(), e))?;
    Ok(Summary {
        processes: pids.len(),
        records,
        dropped,
        unfinished,
        still_writing: Vec::new(),
        anchored: false,
        sched,
    })
}
