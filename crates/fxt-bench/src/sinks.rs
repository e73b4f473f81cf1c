//! Where the bytes of a trace can go, and what each way costs the CPU: the
//! physical limits behind the default's design (`Config::drain`).
//!
//! * fresh anonymous memory, faulted in with `MADV_POPULATE_WRITE` (what a
//!   buffer kept in memory costs the first time through);
//! * a file written through the page cache (`write` from a reused,
//!   already-faulted buffer: the kernel copies and allocates page-cache
//!   pages);
//! * a file written with `O_DIRECT` from a reused, aligned buffer (the
//!   device reads the memory), in 64 KiB and 4 MiB writes.
//!
//! Each row moves [`BYTES`] in one thread and reports GB/s of wall time and
//! ns of CPU time (user + system, this process) per byte.

use std::fmt::Write as _;
use std::time::Instant;

use crate::floor::map_fresh;

/// Bytes each row moves.
pub const BYTES: usize = 512 << 20;

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut r) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(r.ru_utime) + t(r.ru_stime)
}

/// Runs `f` and returns (GB/s, CPU ns per byte) for `bytes` moved.
fn measure(bytes: usize, f: impl FnOnce()) -> (f64, f64) {
    let (t0, c0) = (Instant::now(), cpu_seconds());
    f();
    let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
    (bytes as f64 / wall / 1e9, cpu / bytes as f64 * 1e9)
}

/// Writes [`BYTES`] to a new file in `dir` in writes of `block` bytes from
/// one reused buffer; `direct`: `O_DIRECT`.
fn file_row(dir: &std::path::Path, block: usize, direct: bool) -> std::io::Result<(f64, f64)> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let path = dir.join(format!("fxt-sinks-{}.bin", std::process::id()));
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    let file = o.open(&path)?;
    let buf = map_fresh(block);
    // SAFETY: `buf` is `block` writable bytes, mapped above.
    let slice = unsafe { std::slice::from_raw_parts_mut(buf, block) };
    slice.fill(0x5a); // faulted in before timing: a reused buffer
    let mut result = Ok(());
    let r = measure(BYTES, || {
        for off in (0..BYTES).step_by(block) {
            if let Err(e) = file.write_all_at(slice, off as u64) {
                result = Err(e);
                return;
            }
        }
    });
    // SAFETY: unmapping what `map_fresh` mapped.
    unsafe { libc::munmap(buf as *mut libc::c_void, block) };
    let _ = std::fs::remove_file(&path);
    result.map(|_| r)
}

/// The table (Markdown); `dir` is where the files are written (the
/// directory a trace would go to).
pub fn table(dir: &std::path::Path) -> String {
    let mut out = format!(
        "Where a trace's bytes can go, one thread moving {} MiB ({}): GB/s of wall time, and CPU time (user + system) per byte:\n\n| sink | GB/s | CPU ns per byte |\n|---|---:|---:|\n",
        BYTES >> 20,
        dir.display()
    );
    let mut row = |name: &str, r: std::io::Result<(f64, f64)>| {
        let _ = match r {
            Ok((gbs, ns)) => writeln!(out, "| {name} | {gbs:.2} | {ns:.3} |"),
            Err(e) => writeln!(out, "| {name} | failed: {e} | |"),
        };
    };
    let fresh = {
        let p = map_fresh(BYTES);
        let r = measure(BYTES, || {
            // SAFETY: the whole mapping made above; POPULATE_WRITE (23)
            // faults it in without changing it.
            unsafe { libc::madvise(p as *mut libc::c_void, BYTES, 23) };
        });
        // SAFETY: unmapping what `map_fresh` mapped.
        unsafe { libc::munmap(p as *mut libc::c_void, BYTES) };
        r
    };
    row("fresh memory, MADV_POPULATE_WRITE", Ok(fresh));
    row(
        "file, write() through the page cache, 4 MiB writes",
        file_row(dir, 4 << 20, false),
    );
    row(
        "file, O_DIRECT, 64 KiB writes",
        file_row(dir, 64 << 10, true),
    );
    row("file, O_DIRECT, 4 MiB writes", file_row(dir, 4 << 20, true));
    out
}
