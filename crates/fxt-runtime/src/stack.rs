//! Stack capture: a thread's registers and a bounded copy of its stack,
//! for a reader to unwind later with the binaries' unwind tables (the
//! design of `perf record --call-graph dwarf`). The program compiles no
//! unwinder; `fxt-symbols` unwinds what this captures, from the files the
//! trace's `fxt.modules` names.
//!
//! Three captures, one form ([`Capture`], encoded as a
//! [`fxt_format::samples::RawStack`]):
//! - [`capture_current`]: the calling thread, from a normal context: its
//!   registers read with inline assembly inside this function, which is
//!   the capture's innermost frame.
//! - the allocation hook's (`crate::alloc`): the registers read in the
//!   allocator wrapper's frame that called the inner allocator
//!   (`current_registers`), the copy planned from there (`plan`) and
//!   stored straight into the record, none of the hook's frames in it.
//! - the CPU sampler's, in its signal handler: the interrupted context's
//!   registers, the copy starting below the red zone.
//!
//! Both copy from the stack pointer (less the red zone for an interrupted
//! context) up to the top of the thread's stack (its outermost frame: for
//! the main thread where the C runtime's entry found the stack, for a
//! thread the C library started the return address of its start routine,
//! below the library's thread-local blocks and their reserve), at most
//! [`MAX_STACK_BYTES`], into the caller's buffer: no allocation, no lock,
//! no system call once the thread's stack bounds are known (the first
//! capture on a thread asks `pthread_getattr_np`, which may allocate on
//! the main thread; [`current_stack`] can be called first, outside a
//! context that must not allocate). A stack pointer outside the thread's
//! stack (an alternate signal stack, a coroutine's stack) copies nothing:
//! the registers alone are kept. Words of the copy that lie in the
//! caller's buffer (a buffer on the stack being copied) are written as 0,
//! never read.
//!
//! The copy holds whatever the thread's frames held (return addresses,
//! saved registers, and the values of locals): a trace with raw stacks
//! carries that data, as a `perf.data` file recorded with
//! `--call-graph dwarf` does.

use core::cell::Cell;
use core::ops::Range;

pub use fxt_format::samples::{Arch, RawStack, MAX_REGISTERS};

/// Most bytes of stack one capture copies: 8 KiB, perf's default for
/// `--call-graph dwarf`. It holds the frames from a thread's entry point
/// to code a few dozen calls deep; deeper stacks keep their innermost 8
/// KiB (the sample is marked truncated). The bound sets a sample's size
/// (at 1 kHz, at most 8 MB of trace per second per busy thread; a sample
/// copies only the stack in use, usually less), and 8 samples fill a
/// default 64 KiB chunk.
pub const MAX_STACK_BYTES: usize = 8 << 10;

/// [`MAX_STACK_BYTES`] in words: the size of a buffer that never cuts a
/// copy short of the bound.
pub const MAX_STACK_WORDS: usize = MAX_STACK_BYTES / 8;

/// This machine's [`Arch`].
pub const ARCH: Arch = Arch::X86_64;

/// The x86-64 System V red zone: a leaf function may keep data this far
/// below its stack pointer, where an interrupted context's copy starts.
const RED_ZONE: u64 = 128;

/// The registers a capture records (x86-64: pc, sp, bp; the order of
/// [`Arch::X86_64`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Registers {
    pub(crate) pc: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
}

impl Registers {
    fn words(self) -> [u64; MAX_REGISTERS] {
        [self.pc, self.sp, self.bp, 0]
    }
}

/// One capture: the registers, and where the copy in the caller's buffer
/// came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capture {
    /// The machine (which registers `registers` holds).
    pub arch: Arch,
    /// The registers, in the arch's order (the first
    /// [`Arch::register_count`] are meaningful).
    pub registers: [u64; MAX_REGISTERS],
    /// The address the buffer's first word was copied from (0 when
    /// nothing was copied).
    pub stack_address: u64,
    /// Words copied into the buffer.
    pub stack_words: usize,
    /// The copy stops below the stack's top: cut at [`MAX_STACK_BYTES`]
    /// or the buffer's size, or empty because the stack pointer was not
    /// in the thread's stack.
    pub truncated: bool,
}

impl Capture {
    /// The capture as the format's raw stack, with `buffer` the buffer it
    /// was captured into.
    pub fn raw_stack<'a>(&'a self, buffer: &'a [u64]) -> RawStack<'a> {
        RawStack {
            arch: self.arch,
            registers: &self.registers[..self.arch.register_count()],
            stack_address: self.stack_address,
            stack: &buffer[..self.stack_words.min(buffer.len())],
        }
    }

    /// The instruction pointer (the innermost frame).
    pub fn pc(&self) -> u64 {
        self.registers[0]
    }
}

/// Captures the calling thread's registers and stack into `buffer`
/// (at most [`MAX_STACK_WORDS`] words of it are used). The innermost frame
/// is this function's own; a reader unwinds from it to the thread's entry.
/// Allocation-free once the thread's stack is known ([`current_stack`]).
/// Keep `buffer` off the stack (a `static`, a thread-local or the heap):
/// the part of it the copy covers is copied as zeros, and a large buffer
/// on the stack pushes the caller's frames past the bound.
#[inline(never)]
pub fn capture_current(buffer: &mut [u64]) -> Capture {
    let registers = current_registers();
    let stack = current_stack().unwrap_or(0..0);
    copy(registers, registers.sp, &stack, buffer)
}

/// The CPU sampler's capture of an interrupted context `registers` on a
/// thread whose stack is `stack`: the copy starts below the red zone (the
/// interrupted code may have kept data there).
pub(crate) fn capture_interrupted(
    registers: Registers,
    stack: &Range<u64>,
    buffer: &mut [u64],
) -> Capture {
    let from = registers.sp.saturating_sub(RED_ZONE);
    copy(registers, from, stack, buffer)
}

/// The registers at this point of the function this is inlined into (the
/// pc lies in it, the sp and bp are its frame's, consistent with each
/// other for the unwinder whatever the prologue has done so far).
#[inline(always)]
pub(crate) fn current_registers() -> Registers {
    let (pc, sp, bp): (u64, u64, u64);
    // SAFETY: reads three registers into outputs; touches no memory, no
    // stack, no flags.
    unsafe {
        core::arch::asm!(
            "lea {pc}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            pc = out(reg) pc,
            sp = out(reg) sp,
            bp = out(reg) bp,
            options(nomem, nostack, preserves_flags),
        );
    }
    Registers { pc, sp, bp }
}

/// What a copy of the stack from `from` (a stack pointer, or below it) to
/// the top of `stack` takes, at most `limit` words: a [`Capture`] without
/// its words (the registers, the first word's address, the word count,
/// whether it stops below the top). Nothing to copy if the thread's stack
/// pointer is not in `stack`.
pub(crate) fn plan(registers: Registers, from: u64, stack: &Range<u64>, limit: usize) -> Capture {
    let mut capture = Capture {
        arch: ARCH,
        registers: registers.words(),
        stack_address: 0,
        stack_words: 0,
        truncated: true,
    };
    if !stack.contains(&registers.sp) {
        return capture;
    }
    // 8-aligned, within the stack (whose bounds are page-aligned).
    let start = (from.max(stack.start)) & !7;
    let end = stack.end & !7;
    let available = ((end.saturating_sub(start)) / 8) as usize;
    let words = available.min(MAX_STACK_WORDS).min(limit);
    capture.stack_address = start;
    capture.stack_words = words;
    capture.truncated = words < available;
    capture
}

/// Copies the stack from `from` (a stack pointer, or below it) to the top
/// of `stack` into `buffer`, bounded; nothing if the thread's stack pointer
/// is not in `stack`.
fn copy(registers: Registers, from: u64, stack: &Range<u64>, buffer: &mut [u64]) -> Capture {
    let capture = plan(registers, from, stack, buffer.len());
    let (start, words) = (capture.stack_address, capture.stack_words);
    let own = buffer.as_ptr() as u64..buffer.as_ptr() as u64 + (buffer.len() as u64) * 8;
    for (i, slot) in buffer[..words].iter_mut().enumerate() {
        let addr = start + i as u64 * 8;
        *slot = if own.contains(&addr) {
            0
        } else {
            // SAFETY: `addr` is an 8-aligned word of this thread's own
            // stack between (below) the stack pointer and the stack's top,
            // all mapped; the frames there are suspended while this runs
            // (this thread runs the capture), and the buffer being written
            // is excluded above, so the read races with no write.
            unsafe { core::ptr::read_volatile(addr as *const u64) }
        };
    }
    capture
}

/// The step of [`probe_above`]: the smallest page size.
const PAGE: u64 = 4096;

/// For a thread whose stack's bounds are not known yet (an allocation
/// hook may not ask: `pthread_getattr_np` takes a lock of the thread's
/// that the thread may hold while it allocates): how far memory can be
/// read from `sp` up, at most [`MAX_STACK_BYTES`], asking the kernel page
/// by page ([`read_own`]; no lock, no allocation). The end, and whether
/// it is the bound (more may lie above).
pub(crate) fn probe_above(sp: u64) -> (u64, bool) {
    let sp = sp & !7;
    let limit = sp.saturating_add(MAX_STACK_BYTES as u64);
    let mut at = sp;
    while at < limit {
        let mut byte = 0u8;
        if read_own(at, core::ptr::addr_of_mut!(byte), 1) != 1 {
            return (at, false);
        }
        at = (at & !(PAGE - 1)) + PAGE;
    }
    (limit, true)
}

/// Copies `len` bytes of this process's memory at `from` to `to` through
/// the kernel (`process_vm_readv`), which stops at the first page that
/// cannot be read instead of faulting, and whose copy races with no
/// store of this program's; the bytes copied (0 where the call is
/// refused, by a seccomp filter say).
pub(crate) fn read_own(from: u64, to: *mut u8, len: usize) -> usize {
    let local = libc::iovec {
        iov_base: to.cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: from as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: the kernel writes at most `len` bytes at `to`, which the
    // caller provides writable; `remote` is only read, by the kernel,
    // which checks it.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    usize::try_from(n).unwrap_or(0)
}

/// The calling thread's stack if [`current_stack`] found it already
/// (never asks: no allocation, no system call; for an allocation hook).
pub(crate) fn cached_stack() -> Option<Range<u64>> {
    let (lo, hi) = STACK.try_with(Cell::get).ok()?;
    (hi != 0).then_some(lo..hi)
}

thread_local! {
    /// The calling thread's stack, once asked (`(0, 0)`: not yet).
    static STACK: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// The calling thread's stack, `[low, high)`: asked of `pthread_getattr_np`
/// on the thread's first call, then remembered. On the main thread the top
/// is where the C runtime's entry found the stack, below the program's
/// arguments and environment (a copy never holds them).
pub fn current_stack() -> Option<Range<u64>> {
    let cached = STACK.try_with(Cell::get).unwrap_or((0, 0));
    if cached.1 != 0 {
        return Some(cached.0..cached.1);
    }
    let (lo, mut hi) = ask_stack()?;
    if let Some(entry) = main_stack_entry() {
        if (lo..hi).contains(&entry) {
            // A few words above it: `_start`'s own call pushed its return
            // address around there.
            hi = hi.min((entry + 64) & !15);
        }
    }
    let tp = thread_pointer();
    if (lo..hi).contains(&tp) {
        // A thread the C library started: its control block (at the
        // thread pointer) and static thread-locals (below it) sit at the
        // top of the block it reports; no frame lies above them, nor
        // above the outermost frame's return address (`frames_top`).
        let floor = &tp as *const u64 as u64;
        hi = frames_top(floor, lowest_static_tls(lo..tp) & !15);
    }
    let _ = STACK.try_with(|s| s.set((lo, hi)));
    Some(lo..hi)
}

/// The thread pointer (x86-64: the `fs` base, which the C library points
/// at the thread's control block; its first word holds the pointer
/// itself).
fn thread_pointer() -> u64 {
    let tp: u64;
    // SAFETY: reads the word at `fs:0`, which the x86-64 TLS ABI keeps
    // holding the thread pointer for every thread; no other effect.
    unsafe {
        core::arch::asm!(
            "mov {tp}, fs:0",
            tp = out(reg) tp,
            options(nostack, readonly, preserves_flags),
        );
    }
    tp
}

/// Where the frames of a thread the C library started end, below `top`
/// (its lowest static thread-local block, 16-aligned) and above `floor`
/// (a word of the caller's frame): past the highest non-zero word, at
/// most `top`. The thread's outermost frame starts with the return
/// address its start routine was called with, never zero; above it, up
/// to the thread-local blocks, lies only the C library's reserve for the
/// thread-locals of libraries loaded later (zeros while unused; a library
/// that uses it has its block there, and `top` is below it). A copy that
/// stops here holds every frame and reads none of that reserve (cold
/// memory that every sample would read).
fn frames_top(floor: u64, top: u64) -> u64 {
    let mut at = top;
    while at > floor.saturating_add(8) {
        // SAFETY: `at - 8` is an 8-aligned word between a word of this
        // thread's own frame and its thread-local blocks, all mapped (its
        // stack block); the frames above this one are suspended while it
        // runs, so the read races with no write of this thread's.
        if unsafe { ((at - 8) as *const u64).read_volatile() } != 0 {
            break;
        }
        at -= 8;
    }
    // 16-aligned like the stack, at most `top` (itself 16-aligned).
    (at + 15) & !15
}

/// The lowest of the calling thread's thread-local blocks that lie in
/// `within` (its static ones, below its thread pointer), or its end: a
/// thread's frames lie below them all.
fn lowest_static_tls(within: Range<u64>) -> u64 {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: `dl_iterate_phdr` passes a valid entry, and `data` is
        // the `Range` and lowest address below, alive for the call.
        let (within, lowest) = unsafe { &mut *(data as *mut (Range<u64>, u64)) };
        // SAFETY: as above.
        let block = unsafe { (*info).dlpi_tls_data } as u64;
        if within.contains(&block) && block < *lowest {
            *lowest = block;
        }
        0
    }
    let mut state = (within.clone(), within.end);
    // SAFETY: `visit` only reads the entries it is given and writes
    // `state`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&raw mut state).cast()) };
    state.1
}

/// `__libc_stack_end`: the stack pointer glibc's entry point found, above
/// which lie only the program's arguments, environment and auxiliary
/// vector.
#[cfg(target_env = "gnu")]
fn main_stack_entry() -> Option<u64> {
    extern "C" {
        static __libc_stack_end: *const core::ffi::c_void;
    }
    // SAFETY: glibc sets the variable before any Rust code runs and never
    // changes it after; reading a pointer-sized value.
    let entry = unsafe { __libc_stack_end } as u64;
    (entry != 0).then_some(entry)
}

#[cfg(not(target_env = "gnu"))]
fn main_stack_entry() -> Option<u64> {
    None
}

/// The calling thread's stack from its attributes.
fn ask_stack() -> Option<(u64, u64)> {
    // SAFETY: `attr` is initialized by `pthread_getattr_np` before it is
    // read and destroyed after; the out-pointers are valid.
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = core::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let r = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        (r == 0).then(|| (addr as u64, addr as u64 + size as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn capture_in(buffer: &mut [u64]) -> Capture {
        let c = capture_current(core::hint::black_box(buffer));
        core::hint::black_box(c)
    }

    /// A capture from a normal context: its pc lies in `capture_current`,
    /// its sp in this thread's stack, the copy starts at the sp and holds
    /// the return address into `capture_in` (the caller's frame).
    #[test]
    fn the_current_stack_is_captured() {
        let mut buffer = vec![0u64; MAX_STACK_WORDS];
        let c = capture_in(&mut buffer);
        let stack = current_stack().unwrap();
        assert_eq!(c.arch, Arch::X86_64);
        let f = capture_current as *const () as u64;
        assert!(
            (f..f + 4096).contains(&c.pc()),
            "pc {:#x} fn {f:#x}",
            c.pc()
        );
        assert!(stack.contains(&c.registers[1]));
        assert_eq!(c.stack_address, c.registers[1] & !7);
        assert!(c.stack_words > 0);
        assert_eq!(
            c.truncated,
            c.stack_address + c.stack_words as u64 * 8 < stack.end
        );
        let caller = capture_in as *const () as u64;
        let copied = &buffer[..c.stack_words];
        assert!(
            copied.iter().any(|&w| (caller..caller + 256).contains(&w)),
            "no return address into the caller in the copy"
        );
        let raw = c.raw_stack(&buffer);
        assert_eq!(raw.registers.len(), 3);
        assert_eq!(raw.stack.len(), c.stack_words);
    }

    /// The copy is bounded by the buffer and by `MAX_STACK_BYTES`, and a
    /// buffer lying in the copied range is never read (its words are 0).
    #[test]
    fn the_copy_is_bounded_and_skips_the_buffer() {
        let mut fake = vec![0x5a5a_5a5a_u64; 4 * MAX_STACK_WORDS];
        let lo = fake.as_ptr() as u64;
        let hi = lo + fake.len() as u64 * 8;
        let regs = Registers {
            pc: 1,
            sp: lo + 64,
            bp: 0,
        };
        let mut small = [7u64; 16];
        let c = capture_interrupted(regs, &(lo..hi), &mut small);
        assert_eq!(
            (c.stack_address, c.stack_words),
            (lo, 16),
            "red zone clamped"
        );
        assert!(c.truncated);
        assert_eq!(small, [0x5a5a_5a5a; 16]);
        let mut big = vec![0u64; 2 * MAX_STACK_WORDS];
        let c = capture_interrupted(regs, &(lo..hi), &mut big);
        assert_eq!(c.stack_words, MAX_STACK_WORDS);
        assert!(c.truncated);
        // The buffer is the stack: nothing read from it.
        let regs = Registers {
            sp: lo + 1024,
            ..regs
        };
        let (head, _) = fake.split_at_mut(MAX_STACK_WORDS);
        let range = lo..lo + MAX_STACK_WORDS as u64 * 8;
        let c = capture_interrupted(regs, &range, head);
        assert_eq!(c.stack_address, lo + 1024 - RED_ZONE);
        assert!(!c.truncated, "the copy reaches the top");
        assert!(head[..c.stack_words].iter().all(|&w| w == 0));
    }

    /// A stack pointer outside the thread's stack copies nothing and
    /// keeps the registers.
    #[test]
    fn a_foreign_stack_pointer_copies_nothing() {
        let regs = Registers {
            pc: 0x1234,
            sp: 10,
            bp: 20,
        };
        let mut buffer = [9u64; 8];
        let c = capture_interrupted(regs, &(4096..8192), &mut buffer);
        assert_eq!(c.stack_words, 0);
        assert_eq!(c.stack_address, 0);
        assert!(c.truncated);
        assert_eq!(&c.registers[..3], &[0x1234, 10, 20]);
        assert_eq!(buffer, [9; 8]);
        assert!(c.raw_stack(&buffer).stack.is_empty());
    }

    /// The calling thread's stack holds its locals, and is remembered.
    #[test]
    fn a_stack_is_known_and_holds_the_caller() {
        let marker = 0u8;
        let here = &marker as *const u8 as u64;
        let stack = current_stack().unwrap();
        assert!(stack.contains(&here), "{here:#x} not in {stack:x?}");
        assert_eq!(current_stack(), Some(stack), "remembered");
    }

    /// A spawned thread's stack ends at its outermost frame: it holds the
    /// caller, its top lies below the thread pointer (the C library's
    /// control block), and one of its two highest words is the outermost
    /// frame's return address (not zero), not the zeros of the reserve
    /// for thread-locals above it.
    #[test]
    fn a_spawned_threads_stack_ends_at_its_outermost_frame() {
        std::thread::spawn(|| {
            let marker = 0u8;
            let here = &marker as *const u8 as u64;
            let stack = current_stack().unwrap();
            assert!(stack.contains(&here), "{here:#x} not in {stack:x?}");
            assert!(stack.end <= thread_pointer(), "{stack:x?}");
            // SAFETY: two words of this thread's stack, above this frame.
            let top = unsafe { *((stack.end - 16) as *const [u64; 2]) };
            assert_ne!(top, [0, 0], "{stack:x?}");
        })
        .join()
        .unwrap();
    }
}
