//! `perf_event_open` rings: one per CPU, into which every tracepoint of
//! that CPU writes its samples, read without stopping the writer (the
//! kernel) with the ring's head/tail protocol.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

use perf_event_open_sys as sys;
use sys::bindings::{perf_event_attr, perf_event_mmap_page};

/// Data pages per CPU ring: room for a busy CPU's context switches and
/// wakeups between two reads of the rings; samples the kernel cannot write
/// into a full ring are counted as lost.
const DATA_PAGES: usize = 256;

/// What one sample says (`PERF_SAMPLE_TID | TIME | CPU | RAW`).
pub struct Sample<'a> {
    /// Process (thread group) of the task running when it was taken.
    pub pid: u32,
    /// That task.
    pub tid: u32,
    /// `CLOCK_MONOTONIC_RAW` nanoseconds.
    pub time: u64,
    pub cpu: u32,
    /// The tracepoint's raw data (its first two bytes: the tracepoint id).
    pub raw: &'a [u8],
}

/// The ring of one CPU and the events that write into it.
pub struct CpuRing {
    /// The events; the first owns the ring.
    fds: Vec<OwnedFd>,
    base: *mut u8,
    len: usize,
    page: usize,
    /// Reassembles a record that wraps around the ring's end.
    scratch: Vec<u8>,
}

// SAFETY: the mapping is owned by this value and only read and written
// through `&mut self`; the kernel is the only other party.
unsafe impl Send for CpuRing {}

fn open(tracepoint: u64, cpu: i32) -> io::Result<OwnedFd> {
    // SAFETY: perf_event_attr is plain data; all-zero is its documented
    // "nothing requested" value.
    let mut attr: perf_event_attr = unsafe { std::mem::zeroed() };
    attr.type_ = sys::bindings::PERF_TYPE_TRACEPOINT;
    attr.size = std::mem::size_of::<perf_event_attr>() as u32;
    attr.config = tracepoint;
    attr.__bindgen_anon_1.sample_period = 1;
    attr.sample_type = (sys::bindings::PERF_SAMPLE_TID
        | sys::bindings::PERF_SAMPLE_TIME
        | sys::bindings::PERF_SAMPLE_CPU
        | sys::bindings::PERF_SAMPLE_RAW) as u64;
    attr.set_disabled(1);
    attr.set_use_clockid(1);
    attr.clockid = libc::CLOCK_MONOTONIC_RAW;
    // SAFETY: `attr` is initialized above and lives for the call; pid -1
    // with a cpu asks for every task on that cpu.
    let fd = unsafe {
        sys::perf_event_open(
            &mut attr,
            -1,
            cpu,
            -1,
            sys::bindings::PERF_FLAG_FD_CLOEXEC as _,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just gave us, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl CpuRing {
    /// Opens `tracepoints` on `cpu`, all writing into one new ring
    /// (disabled until [`CpuRing::enable`]).
    pub fn open(cpu: i32, tracepoints: &[u64]) -> io::Result<CpuRing> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mut fds = Vec::new();
        for &tp in tracepoints {
            fds.push(open(tp, cpu)?);
        }
        let len = page * (1 + DATA_PAGES);
        // SAFETY: a fresh shared mapping of the first event's ring, of the
        // size perf requires (1 + 2^n pages); checked for failure below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fds[0].as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ring = CpuRing {
            fds,
            base: base.cast(),
            len,
            page,
            scratch: Vec::new(),
        };
        for fd in &ring.fds[1..] {
            // SAFETY: both are perf event descriptors of the same cpu.
            if unsafe { sys::ioctls::SET_OUTPUT(fd.as_raw_fd(), ring.fds[0].as_raw_fd()) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(ring)
    }

    /// Starts (`true`) or stops the events.
    pub fn enable(&self, on: bool) {
        for fd in &self.fds {
            // SAFETY: ENABLE/DISABLE on our own perf descriptors.
            unsafe {
                if on {
                    sys::ioctls::ENABLE(fd.as_raw_fd(), 0);
                } else {
                    sys::ioctls::DISABLE(fd.as_raw_fd(), 0);
                }
            }
        }
    }

    fn meta(&self) -> *mut perf_event_mmap_page {
        self.base.cast()
    }

    /// Reads every record the kernel finished writing: samples go to
    /// `sample`; returns the samples the kernel reported lost.
    pub fn drain(&mut self, mut sample: impl FnMut(Sample<'_>)) -> u64 {
        let data_size = (self.len - self.page) as u64;
        // SAFETY: `meta` points at the ring's first page, mapped for our
        // lifetime. The kernel writes data_head; the volatile read and the
        // Acquire fence after it pair with the kernel's barrier before it
        // updates data_head, so the records below it are complete.
        let head = unsafe { std::ptr::read_volatile(&(*self.meta()).data_head) };
        fence(Ordering::Acquire);
        // SAFETY: as above; we are the only writer of data_tail.
        let mut tail = unsafe { std::ptr::read_volatile(&(*self.meta()).data_tail) };
        let mut lost = 0;
        // SAFETY: the data area follows the first page, `data_size` bytes.
        let data =
            unsafe { std::slice::from_raw_parts(self.base.add(self.page), data_size as usize) };
        while tail + 8 <= head {
            let at = (tail % data_size) as usize;
            // The header (struct perf_event_header: type u32, misc u16,
            // size u16) may itself wrap.
            let mut h = [0u8; 8];
            for (i, b) in h.iter_mut().enumerate() {
                *b = data[(at + i) % data.len()];
            }
            let kind = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
            let size = u64::from(u16::from_ne_bytes([h[6], h[7]]));
            if size < 8 || tail + size > head {
                break;
            }
            let record = read_wrapped(data, at, size as usize, &mut self.scratch);
            let body = &record[8..];
            match kind {
                sys::bindings::PERF_RECORD_SAMPLE => {
                    if let Some(s) = parse_sample(body) {
                        sample(s);
                    }
                }
                sys::bindings::PERF_RECORD_LOST => {
                    if let Some(n) = body.get(8..16) {
                        lost += u64::from_ne_bytes(n.try_into().unwrap());
                    }
                }
                _ => {}
            }
            tail += size;
        }
        // Release: our reads of the records happen-before the kernel
        // reuses their space (it reads data_tail after its own barrier).
        fence(Ordering::Release);
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(&mut (*self.meta()).data_tail, tail) };
        lost
    }
}

/// `len` bytes at `at` of the ring `data`, copied into `scratch` when they
/// wrap around its end.
fn read_wrapped<'a>(data: &'a [u8], at: usize, len: usize, scratch: &'a mut Vec<u8>) -> &'a [u8] {
    if at + len <= data.len() {
        return &data[at..at + len];
    }
    scratch.clear();
    scratch.extend_from_slice(&data[at..]);
    scratch.extend_from_slice(&data[..len - (data.len() - at)]);
    scratch
}

/// A sample's fields, in `sample_type` order: pid, tid; time; cpu, res;
/// raw size, raw data.
fn parse_sample(b: &[u8]) -> Option<Sample<'_>> {
    let u32_at = |i: usize| Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let raw_len = u32_at(24)? as usize;
    Some(Sample {
        pid: u32_at(0)?,
        tid: u32_at(4)?,
        time: u64::from_ne_bytes(b.get(8..16)?.try_into().ok()?),
        cpu: u32_at(16)?,
        raw: b.get(28..28 + raw_len)?,
    })
}

impl Drop for CpuRing {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once; the fds close
        // after it.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}
