//! Where a session writes: placeholders in output paths, an exclusive
//! claim on the output for the session's lifetime, the room its file
//! system has ([`free_space`]), and the settings that `fxt record` gives
//! every process it traces.
//!
//! **Claims.** Two processes given the same output would overwrite each
//! other's trace (or, crash-safe, share one mapping). A session therefore
//! claims its output at [`crate::start`]: an exclusive `flock` on a lock
//! file beside it (`.NAME.lock`, removed when the session finishes). The
//! kernel drops the lock when its process dies, so a stale claim never
//! blocks anyone. A session that finds the output claimed by a live
//! process writes `STEM.PID.EXT` instead and says so on stderr; `Stats`
//! names the file written.
//!
//! **Recording.** When `FXT_RECORD` names a spool folder (`fxt record`
//! sets it for the command it runs, and every descendant inherits it), the
//! recorder decides where and how a session records and the program
//! decides what: the output becomes `SPOOL/PID.fxt` (`PID-1.fxt`, … for a
//! later session of the same pid), crash-safe unless the mode is streaming,
//! and `FXT_BUFFER`, `FXT_MODE` and `FXT_CATEGORIES`, when set, override
//! the program's own [`Config`]. At finish the session writes
//! `SPOOL/PID.stats` (its counts, for the recorder's summary).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::config::{category_list, Config, Mode};
use crate::stats::Stats;

/// The environment variable that puts a process under `fxt record`: the
/// spool folder its sessions write into.
pub const RECORD_ENV: &str = fxt_control::recording::env::RECORD;

/// Bytes an unprivileged process may still write on the file system that
/// holds `path` (an existing file or folder), or `None` where the system
/// cannot tell (`statvfs`: available blocks times the fragment size).
pub(crate) fn free_space(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: a zeroed `statvfs` is a valid value for the call to fill.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path; `st` is valid for writing.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // the fields' types differ by target
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// `path` with `{pid}` replaced by `pid` and `{name}` by `name` (the
/// process name).
pub(crate) fn expand(path: &Path, pid: u32, name: &str) -> PathBuf {
    let Some(s) = path.to_str() else {
        return path.to_path_buf();
    };
    if !s.contains('{') {
        return path.to_path_buf();
    }
    // A name is one path component: no separator in it.
    let name = name.replace('/', "_");
    PathBuf::from(
        s.replace("{pid}", &pid.to_string())
            .replace("{name}", &name),
    )
}

/// What a recorder asks of a session (see the module docs): the spool it
/// writes into and the settings that override the program's own.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recording {
    pub(crate) spool: PathBuf,
    /// `None`: `fxt record`'s, from the environment (`FXT_BUFFER`,
    /// `FXT_MODE`, `FXT_CATEGORIES`); `Some`: a trace manager's, given
    /// through the control channel (`crate::provider`).
    pub(crate) given: Option<Settings>,
}

/// A trace manager's settings for a session (each `None`: the program's).
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    pub(crate) buffer: Option<usize>,
    pub(crate) mode: Option<Mode>,
    /// Comma-separated; empty or `*` = every category.
    pub(crate) categories: Option<String>,
    /// CPU samples per second (`Config::sample_hz`).
    pub(crate) sample_hz: Option<u32>,
    /// Mean bytes between sampled allocations
    /// (`Config::alloc_sample_bytes`).
    pub(crate) alloc_sample: Option<u64>,
}

/// The recording of `fxt record`, when this process runs under it.
pub(crate) fn recording() -> Option<Recording> {
    std::env::var_os(RECORD_ENV)
        .filter(|v| !v.is_empty())
        .map(|spool| Recording {
            spool: PathBuf::from(spool),
            given: None,
        })
}

/// Applies the recorder's settings to `config` (see the module docs): the
/// output is a file of the spool, chosen by [`claim`].
pub(crate) fn for_recording(config: Config, recording: &Recording) -> Config {
    let mut config = match &recording.given {
        None => config.with_recording_env(),
        Some(given) => {
            let mut config = config;
            if let Some(n) = given.buffer {
                config.buffer_size = n;
            }
            if let Some(m) = given.mode {
                config.mode = m;
            }
            if let Some(hz) = given.sample_hz {
                config = config.sample_hz(hz);
            }
            if let Some(bytes) = given.alloc_sample {
                config.alloc_sample_bytes = bytes;
            }
            match &given.categories {
                Some(list) => config.categories(&category_list(list)),
                None => config,
            }
        }
    };
    // A child killed with SIGKILL keeps what it published; a streamed file
    // keeps what was streamed.
    config.crash_safe = config.mode != Mode::Streaming;
    config
}

/// The files a session may write, in order of preference: the output
/// itself, then `STEM.PID.EXT`, `STEM.PID-1.EXT`, …; in a spool,
/// `PID.fxt`, `PID-1.fxt`, … (never one that exists: an earlier session of
/// the same pid, before an `exec`, wrote it).
fn candidates(output: &Path, spool: Option<&Path>, pid: u32) -> impl Iterator<Item = PathBuf> {
    let (dir, stem, ext) = match spool {
        Some(s) => (s.to_path_buf(), pid.to_string(), "fxt".to_string()),
        None => {
            let dir = output.parent().map(Path::to_path_buf).unwrap_or_default();
            let stem = output
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let ext = output
                .extension()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (dir, format!("{stem}.{pid}"), ext)
        }
    };
    let first = spool.is_none().then(|| output.to_path_buf());
    let named = (0..).map(move |n| {
        let base = if n == 0 {
            stem.clone()
        } else {
            format!("{stem}-{n}")
        };
        if ext.is_empty() {
            dir.join(base)
        } else {
            dir.join(format!("{base}.{ext}"))
        }
    });
    first.into_iter().chain(named)
}

/// Claims a file to write: `output` (or, recording, a file of the spool)
/// unless a live process holds it. Returns the path claimed and its claim
/// (`None` where claims cannot be taken: a folder that does not exist yet
/// or cannot be written, a platform without `flock`; the session then
/// writes `output` as before and reports any error when it writes).
pub(crate) fn claim(output: &Path, spool: Option<&Path>) -> (PathBuf, Option<Claim>) {
    let pid = std::process::id();
    // Bounded: past this many taken names something else is wrong; write
    // the output unclaimed rather than loop.
    for path in candidates(output, spool, pid).take(64) {
        if spool.is_some() && path.symlink_metadata().is_ok() {
            continue;
        }
        match Claim::try_take(&path) {
            Ok(Some(c)) => return (path, Some(c)),
            Ok(None) => continue,
            Err(_) => return (path, None),
        }
    }
    (output.to_path_buf(), None)
}

/// An exclusive claim on an output path, held until dropped.
#[derive(Debug)]
pub(crate) struct Claim {
    lock_path: PathBuf,
    /// The locked lock file, held and never read: closing it releases the
    /// lock.
    _file: File,
    /// The process that took the claim: a forked child inherits the file
    /// but must not remove the parent's lock file.
    pid: u32,
}

/// `.NAME.lock` beside `path`.
fn lock_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.lock"))
}

impl Claim {
    /// Takes the claim on `path`, or `Ok(None)` when a live process holds
    /// it.
    #[cfg(unix)]
    fn try_take(path: &Path) -> io::Result<Option<Claim>> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let lock_path = lock_path(path);
        loop {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                // A lock file planted as a symlink is refused, not followed.
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&lock_path)?;
            // SAFETY: `file` owns an open descriptor for this call's
            // duration; flock does not touch memory.
            let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if r != 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::EWOULDBLOCK) => Ok(None),
                    _ => Err(e),
                };
            }
            // The holder before us removes the lock file when it releases:
            // if it did so between our open and our lock, we locked a file
            // no one else will see. Take the claim only if the path still
            // names the file we locked.
            let ours = file.metadata()?;
            match lock_path.symlink_metadata() {
                Ok(now) if now.ino() == ours.ino() && now.dev() == ours.dev() => {
                    return Ok(Some(Claim {
                        lock_path,
                        _file: file,
                        pid: std::process::id(),
                    }))
                }
                _ => continue,
            }
        }
    }

    #[cfg(not(unix))]
    fn try_take(_path: &Path) -> io::Result<Option<Claim>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "output claims need flock",
        ))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Removed while still locked (the file closes after this), so a
        // process that opens the path next creates a new lock file; one
        // that opened the old one sees it unlinked and retries.
        if self.pid == std::process::id() {
            let _ = std::fs::remove_file(&self.lock_path);
        }
    }
}

/// Creates the temporary file `path` (written, then renamed over its final
/// name) as a new file, never through a symlink (`O_EXCL | O_NOFOLLOW`):
/// what is planted at a predictable temporary name is never written
/// through nor truncated. A leftover at the name (a dead process of the
/// same pid, a planted link) is unlinked — the link itself, not what it
/// names — and the creation tried once more.
pub(crate) fn create_fresh(path: &Path) -> io::Result<File> {
    let open = || {
        let mut o = std::fs::OpenOptions::new();
        o.read(true).write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        }
        o.open(path)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(path)?;
            open()
        }
        r => r,
    }
}

/// Writes `STEM.stats` beside a recorded session's trace `STEM.fxt`: the
/// counts `fxt record` sums up (one `key value` per line).
pub(crate) fn write_record_stats(output: &Path, stats: &Stats) -> io::Result<()> {
    let text = format!(
        "records_written {}\nemitted_records_written {}\nrecords_dropped {}\nlate_records_dropped {}\nbytes_written {}\n",
        stats.records_written,
        stats.emitted_records_written,
        stats.records_dropped,
        stats.late_records_dropped,
        stats.bytes_written,
    );
    let path = output.with_extension("stats");
    let tmp = output.with_extension("stats.tmp");
    let written = create_fresh(&tmp).and_then(|mut f| {
        use std::io::Write;
        f.write_all(text.as_bytes())
    });
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        assert_eq!(
            expand(Path::new("out/{name}-{pid}.fxt"), 42, "my/app"),
            PathBuf::from("out/my_app-42.fxt")
        );
        assert_eq!(
            expand(Path::new("trace.fxt"), 42, "x"),
            PathBuf::from("trace.fxt")
        );
    }

    #[test]
    fn candidate_names() {
        let c: Vec<_> = candidates(Path::new("d/trace.fxt"), None, 7)
            .take(3)
            .collect();
        assert_eq!(
            c,
            ["d/trace.fxt", "d/trace.7.fxt", "d/trace.7-1.fxt"].map(PathBuf::from)
        );
        let c: Vec<_> = candidates(Path::new("ignored"), Some(Path::new("s")), 7)
            .take(2)
            .collect();
        assert_eq!(c, ["s/7.fxt", "s/7-1.fxt"].map(PathBuf::from));
    }

    #[cfg(unix)]
    #[test]
    fn a_claim_is_exclusive_and_released() {
        let dir = std::env::temp_dir().join(format!("fxt-claim-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("t.fxt");
        let first = Claim::try_take(&out).unwrap().expect("free");
        // Another open file description of the same lock file conflicts,
        // as another process's would.
        assert!(Claim::try_take(&out).unwrap().is_none());
        let (path, second) = claim(&out, None);
        assert_eq!(path, dir.join(format!("t.{}.fxt", std::process::id())));
        assert!(second.is_some());
        drop(first);
        assert!(!lock_path(&out).exists());
        assert!(Claim::try_take(&out).unwrap().is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
