//! The spool folder of `fxt record`: where every traced process writes its
//! own trace (`PID.fxt`, `PID-1.fxt` for a later session of the same pid)
//! and, when it finishes, its counts (`PID.stats`); see `fxt_runtime`'s
//! `output` module for the writers' side.
//!
//! The folder is created atomically and private (`mkdtemp`: a fresh name,
//! mode 0700), beside the archive so the final rename stays on one file
//! system. `spool.txt` in it holds what a later merge needs (the boot and
//! the start anchor), so a spool left by a recorder that was killed can be
//! merged with `fxt record --from-spool DIR`. Only regular files are read
//! from it: nothing is opened through a symlink.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::timebase::Anchor;

/// How often [`wait_for_writers`] looks at the spool.
const POLL: Duration = Duration::from_millis(10);

/// A spool folder.
pub struct Spool {
    /// Its absolute path: every process handed it (the traced command, a
    /// daemon that changes folder) reaches the same folder, whatever its
    /// working directory.
    pub dir: PathBuf,
    /// The folder itself, open: handed to providers (who write only
    /// through it) and read through ([`Spool::via_fd`]), so a folder swapped
    /// in under its name by whoever can write the parent is never used.
    pub folder: File,
}

impl Spool {
    /// Creates a private spool folder in `parent` (a relative `parent`
    /// is taken from the working directory now).
    pub fn create(parent: &Path) -> io::Result<Spool> {
        let template = std::path::absolute(parent)?.join(".fxt-record.XXXXXX");
        let mut bytes = CString::new(template.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in the path"))?
            .into_bytes_with_nul();
        // SAFETY: `bytes` is a writable, NUL-terminated template ending in
        // XXXXXX, which mkdtemp overwrites in place (same length).
        let r = unsafe { libc::mkdtemp(bytes.as_mut_ptr().cast()) };
        if r.is_null() {
            return Err(io::Error::last_os_error());
        }
        bytes.pop();
        let dir =
            PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes));
        Spool::open(&dir).inspect_err(|_| {
            let _ = std::fs::remove_dir(&dir);
        })
    }

    /// Opens the spool folder `dir` (absolute), refused unless it is a
    /// directory (not a symlink) of the caller's, closed to other users.
    pub fn open(dir: &Path) -> io::Result<Spool> {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let folder = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir)?;
        let meta = folder.metadata()?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me || meta.mode() & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "not a private folder of uid {me} (owner {}, mode {:o})",
                    meta.uid(),
                    meta.mode() & 0o777
                ),
            ));
        }
        Ok(Spool {
            dir: dir.to_path_buf(),
            folder,
        })
    }

    /// The folder as a path that leads through its open descriptor
    /// (`/proc/self/fd/N`, Linux): what this process reads and removes in
    /// it is in this very folder. Elsewhere its name.
    pub fn via_fd(&self) -> PathBuf {
        let through = PathBuf::from(format!("/proc/self/fd/{}", self.folder.as_raw_fd()));
        if cfg!(target_os = "linux") && through.is_dir() {
            through
        } else {
            self.dir.clone()
        }
    }

    /// Writes `spool.txt`: the boot id and the start anchor (a new file,
    /// never through a symlink).
    pub fn write_info(&self, start: Option<Anchor>) -> io::Result<()> {
        let mut text = format!("fxt-record 1\nboot_id {}\n", boot_id());
        if let Some(a) = start {
            text.push_str(&format!("start_tsc {}\nstart_ns {}\n", a.tsc, a.ns));
        }
        write_new(&self.via_fd().join("spool.txt"), text.as_bytes())
    }

    /// Removes every file of the spool (through its descriptor: no link
    /// is followed, nothing outside it is touched), then the folder's name
    /// if it still names this folder.
    pub fn remove(&self) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        for e in std::fs::read_dir(self.via_fd())? {
            let e = e?;
            // A spool holds files only; a directory someone made in it
            // (its owner: us) is left.
            if !e.file_type()?.is_dir() {
                std::fs::remove_file(e.path())?;
            }
        }
        let ours = self.folder.metadata()?;
        match self.dir.symlink_metadata() {
            Ok(m) if m.is_dir() && m.dev() == ours.dev() && m.ino() == ours.ino() => {
                std::fs::remove_dir(&self.dir)
            }
            _ => Ok(()),
        }
    }
}

/// Writes `bytes` to the new file `path`, never through a symlink
/// (`O_EXCL | O_NOFOLLOW`).
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?
        .write_all(bytes)
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`): TSC values and
/// `CLOCK_MONOTONIC_RAW` times compare only within one boot.
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// What `spool.txt` says.
pub struct Info {
    /// The boot the spool was recorded in.
    pub boot_id: String,
    /// The anchor taken when recording started.
    pub start: Option<Anchor>,
}

/// Reads `spool.txt` of `dir`.
pub fn read_info(dir: &Path) -> io::Result<Info> {
    let text = std::fs::read_to_string(dir.join("spool.txt"))?;
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
            .map(str::to_owned)
    };
    if !text.starts_with("fxt-record ") {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a spool of fxt record (spool.txt)",
        ));
    }
    let num = |key: &str| field(key).and_then(|v| v.parse::<u64>().ok());
    Ok(Info {
        boot_id: field("boot_id").unwrap_or_default(),
        start: match (num("start_tsc"), num("start_ns")) {
            (Some(tsc), Some(ns)) => Some(Anchor { tsc, ns }),
            _ => None,
        },
    })
}

/// What a finished session said of itself (`PID.stats`).
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Records the program emitted that are not in its trace.
    pub records_dropped: u64,
    /// Records emitted after the session ended.
    pub late_records_dropped: u64,
}

/// One process's trace in the spool.
pub struct Entry {
    /// The trace.
    pub path: PathBuf,
    /// The process.
    pub pid: u32,
    /// Its counts, when its session finished.
    pub counts: Option<Counts>,
}

/// The traces of `dir`, by pid, then by session.
pub fn entries(dir: &Path) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        // `file_type` does not follow symlinks: only regular files count.
        if !e.file_type()?.is_file() {
            continue;
        }
        let name = e.file_name();
        let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".fxt")) else {
            continue;
        };
        let (pid, n) = match stem.split_once('-') {
            Some((p, n)) => (p.parse::<u32>(), n.parse::<u32>()),
            None => (stem.parse::<u32>(), Ok(0)),
        };
        let (Ok(pid), Ok(n)) = (pid, n) else { continue };
        let path = e.path();
        let counts = read_counts(&path.with_extension("stats"));
        out.push((pid, n, Entry { path, pid, counts }));
    }
    out.sort_by_key(|(pid, n, _)| (*pid, *n));
    Ok(out.into_iter().map(|(_, _, e)| e).collect())
}

fn read_counts(path: &Path) -> Option<Counts> {
    let meta = path.symlink_metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')?.parse::<u64>().ok())
    };
    Some(Counts {
        records_dropped: get("records_dropped")?,
        late_records_dropped: get("late_records_dropped").unwrap_or(0),
    })
}

/// Whether a live process still writes `trace` (holds its claim: the lock
/// file beside it is locked).
pub fn being_written(trace: &Path) -> bool {
    let name = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let lock = trace.with_file_name(format!(".{name}.lock"));
    match lock.symlink_metadata() {
        Ok(m) if m.is_file() => {}
        _ => return false,
    }
    let Ok(file) = File::open(&lock) else {
        return false;
    };
    // SAFETY: `file` owns an open descriptor for this call; flock does not
    // touch memory. A shared lock conflicts only with the writer's
    // exclusive one, and is dropped with `file`.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) };
    r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
}

/// Waits, up to `linger`, until no live process writes a trace in `dir`
/// (a daemon, a child the command did not wait for) and none that may
/// still start one there is alive (a descendant of the command that has
/// written nothing in it yet: it carries `dir` in its environment, see
/// [`heirs`]); returns the pids still writing then.
pub fn wait_for_writers(dir: &Path, linger: Duration) -> Vec<u32> {
    let deadline = Instant::now() + linger;
    loop {
        let entries = entries(dir).unwrap_or_default();
        let writing: Vec<u32> = entries
            .iter()
            .filter(|e| being_written(&e.path))
            .map(|e| e.pid)
            .collect();
        let done = Instant::now() >= deadline;
        if done
            || (writing.is_empty()
                && !heirs(dir)
                    .iter()
                    .any(|p| entries.iter().all(|e| e.pid != *p)))
        {
            return writing;
        }
        std::thread::sleep(POLL);
    }
}

/// The live processes other than this one whose environment names `dir`
/// as their spool (`FXT_RECORD`, which the command was started with and
/// its descendants inherit, whoever their parent is now): they may start
/// a trace there after the command has exited. A process whose
/// environment this user may not read is not one.
fn heirs(dir: &Path) -> Vec<u32> {
    let mut want = fxt_control::recording::env::RECORD.as_bytes().to_vec();
    want.push(b'=');
    want.extend_from_slice(dir.as_os_str().as_bytes());
    let me = std::process::id();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == want))
        })
        .collect()
}
