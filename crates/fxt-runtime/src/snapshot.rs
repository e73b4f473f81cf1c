//! Snapshots of a live session and what triggers them: a call
//! ([`snapshot`], `Session::snapshot*`) or a signal
//! ([`snapshot_on_signal`], `FXT_SNAPSHOT_SIGNAL`). The collection itself
//! is `collect::Collector::snapshot`.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

use crate::collect::{self, CollectError};
use crate::config::HelperScheduling;
use crate::helpers::Sched;
use crate::state::Shared;
use crate::stats::Stats;

/// Writes a snapshot of the live session next to its configured output
/// (see [`crate::Session::snapshot`]); for code that does not hold the
/// [`crate::Session`], and for the triggers ([`snapshot_on_signal`]).
pub fn snapshot() -> Result<(PathBuf, Stats), CollectError> {
    match crate::state::current() {
        Some(s) => snapshot_shared(&s),
        None => Err(CollectError::NoSession),
    }
}

pub(crate) fn snapshot_shared(s: &Shared) -> Result<(PathBuf, Stats), CollectError> {
    let n = s.snapshots.fetch_add(1, Ordering::Relaxed) + 1;
    let path = snapshot_path(&s.settings.output, n);
    let stats = write_renamed(&path, |mut f| {
        Ok(collect::Collector::snapshot(s, Box::new(&mut f), n)?)
    })?;
    Ok((path, stats))
}

/// A snapshot of `s` to `path` (written under a temporary name, then
/// renamed).
pub(crate) fn snapshot_shared_to(s: &Shared, path: &Path) -> Result<Stats, CollectError> {
    let n = s.snapshots.fetch_add(1, Ordering::Relaxed) + 1;
    write_renamed(path, |mut f| {
        Ok(collect::Collector::snapshot(s, Box::new(&mut f), n)?)
    })
}

/// A snapshot of the live session, whoever started it, to `path`.
pub(crate) fn snapshot_current_to(path: &Path) -> Result<Stats, CollectError> {
    match crate::state::current() {
        Some(s) => snapshot_shared_to(&s, path),
        None => Err(CollectError::NoSession),
    }
}

/// `dir/name.ext` → `dir/name.snapshot-N.ext`.
fn snapshot_path(output: &Path, n: u64) -> PathBuf {
    let stem = output.file_stem().unwrap_or_default().to_string_lossy();
    let name = match output.extension() {
        Some(ext) => format!("{stem}.snapshot-{n}.{}", ext.to_string_lossy()),
        None => format!("{stem}.snapshot-{n}"),
    };
    output.with_file_name(name)
}

/// Writes `path` through a temporary file beside it, renamed over it when
/// complete (with feature `symbolize`, its derived records appended,
/// [`collect::derived`]): `path` holds a valid trace at every moment (and
/// a crash-safe session's mapping of it is never truncated under the
/// collector).
pub(crate) fn write_renamed(
    path: &Path,
    write: impl FnOnce(File) -> Result<Stats, CollectError>,
) -> Result<Stats, CollectError> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".fxt-tmp-{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let result = crate::output::create_fresh(&tmp)
        .map_err(CollectError::from)
        .and_then(write)
        // Complete before the rename, like the rest.
        .map(|stats| collect::derived::append_to_file(&tmp).count_in(stats))
        .and_then(|stats| {
            std::fs::rename(&tmp, path)
                .map(|_| stats)
                .map_err(Into::into)
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The write end of the trigger pipe (-1 until the first
/// [`snapshot_on_signal`]).
static TRIGGER_FD: AtomicI32 = AtomicI32::new(-1);

/// Makes `signal` (e.g. `libc::SIGUSR1`) write a snapshot of the live
/// session next to its configured output, without stopping it.
///
/// The signal handler only writes one byte to a pipe (`write` is
/// async-signal-safe; no allocation, lock or other I/O happens in the
/// handler); a thread, `fxt-snapshot`, started on the first call, reads
/// it and writes the snapshot, printing its path on stderr. Signals that
/// arrive while a snapshot is written are coalesced into one more.
/// `FXT_SNAPSHOT_SIGNAL=USR1` (or `USR2`, or a number) in
/// `Config::from_env` does this at `start`. The thread is scheduled as
/// [`crate::HelperScheduling::Normal`] says (from `start`: as the
/// session's config says).
pub fn snapshot_on_signal(signal: i32) -> io::Result<()> {
    install_trigger(signal, Sched::Helper(HelperScheduling::Normal))
}

/// [`snapshot_on_signal`], with the snapshot thread (if this call starts
/// it) scheduled as `sched`.
pub(crate) fn install_trigger(signal: i32, sched: Sched) -> io::Result<()> {
    static SETUP: Mutex<bool> = Mutex::new(false);
    let mut ready = SETUP.lock().unwrap_or_else(|e| e.into_inner());
    if !*ready {
        let mut fds = [0; 2];
        // SAFETY: `fds` is a valid array of two ints for `pipe2` to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let read_fd = fds[0];
        crate::helpers::spawn("fxt-snapshot", sched, move || snapshot_thread(read_fd))?;
        TRIGGER_FD.store(fds[1], Ordering::Release);
        *ready = true;
    }
    // SAFETY: a zeroed `sigaction` is a valid value to fill in;
    // `on_signal` is an `extern "C" fn(c_int)` that lives for the whole
    // program and only does async-signal-safe work (an atomic load and
    // `write`, errno preserved); `signal` is checked by `sigaction`, which
    // fails with EINVAL for a bad number or SIGKILL/SIGSTOP.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

extern "C" fn on_signal(_: libc::c_int) {
    let fd = TRIGGER_FD.load(Ordering::Acquire);
    if fd >= 0 {
        // SAFETY: `__errno_location` returns this thread's errno; `write`
        // of one byte from a valid buffer to our pipe is async-signal-safe.
        // A full pipe (EAGAIN never: blocking, but 64 KiB of pending
        // triggers) only delays; errno is restored for the interrupted code.
        unsafe {
            let errno = *libc::__errno_location();
            let byte = 1u8;
            libc::write(fd, (&byte as *const u8).cast(), 1);
            *libc::__errno_location() = errno;
        }
    }
}

fn snapshot_thread(fd: i32) {
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: `buf` is valid for 64 bytes; `fd` is our pipe's read end,
        // owned by this thread for the life of the process.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if n <= 0 {
            return;
        }
        match snapshot() {
            Ok((path, stats)) => eprintln!(
                "fxt: snapshot written to {} ({} records, {} dropped)",
                path.display(),
                stats.records_written,
                stats.records_dropped
            ),
            Err(CollectError::NoSession) => {}
            Err(e) => eprintln!("fxt: snapshot failed: {e}"),
        }
    }
}
