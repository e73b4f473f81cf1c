//! Walking the interrupted thread's stack inside the signal handler.
//!
//! Everything that allocates or reads files happens before sampling
//! starts: [`Modules::discover`] lists the loaded objects
//! (`dl_iterate_phdr`) and gives samply's unwinder `framehop` copies of
//! each one's `.eh_frame_hdr` and `.eh_frame` (never the objects' own
//! memory, which `dlclose` may unmap); each sampled thread gets its own
//! [`Cache`] (boxed when it is armed). The walk itself ([`walk`]) allocates nothing (framehop's
//! `MustNotAllocateDuringUnwind` policy) and reads only words of the
//! thread's own stack between the interrupted stack pointer (less the
//! x86-64 red zone) and the top of the stack, so no stack content, however
//! garbled, can make it fault: a return address or frame pointer that
//! leads elsewhere ends the walk (the sample is marked truncated).

use core::ops::Range;
use core::sync::atomic::{AtomicUsize, Ordering};

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, Module, MustNotAllocateDuringUnwind, Unwinder};

/// Most frames a sample keeps (the record layout's limit).
pub(crate) const MAX_FRAMES: usize = fxt_format::samples::MAX_FRAMES;

/// How a stack was walked (the `fxt.sample` record's field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// `.eh_frame` unwind tables (framehop).
    Tables,
    /// The frame-pointer chain.
    FramePointers,
    /// The interrupted instruction pointer alone.
    PcOnly,
}

/// Section data: a copy of the loaded object's section, owned by the
/// module list, so that a handler never reads the memory of an object
/// that `dlclose` may have unmapped (see [`Modules::discover`]).
type Data = Vec<u8>;

/// The per-thread unwind cache (boxed when the thread is armed; only its
/// thread uses it, from its handler).
pub(crate) type Cache = CacheX86_64<MustNotAllocateDuringUnwind>;

/// The interrupted context's registers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Regs {
    pub(crate) pc: u64,
    pub(crate) sp: u64,
    pub(crate) bp: u64,
}

/// The loaded objects' unwind information, built outside any handler.
pub(crate) struct Modules {
    unwinder: UnwinderX86_64<Data, MustNotAllocateDuringUnwind>,
    #[cfg_attr(not(test), allow(dead_code))]
    count: usize,
    /// The loader's counts of objects added and removed when this list
    /// was made ([`loader_state`]): equal counts later, same objects.
    loader: (u64, u64),
}

/// Module lists alive (each owns an unwinder): bounded however many
/// sessions sample, which tests check.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// How many module lists are alive.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

impl Drop for Modules {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The loader's counts of objects loaded and unloaded so far
/// (`dlpi_adds`, `dlpi_subs`): they change with every `dlopen` or
/// `dlclose` that maps or unmaps an object. Takes the loader's lock: not
/// for a signal handler.
pub(crate) fn loader_state() -> (u64, u64) {
    let mut state = (u64::MAX, u64::MAX);
    // SAFETY: `dl_iterate_phdr` calls `first` with valid pointers while
    // holding the loader's lock; `state` outlives the call; the callback
    // only reads two fields (after checking the structure has them).
    unsafe {
        libc::dl_iterate_phdr(Some(first), (&mut state as *mut (u64, u64)).cast());
    }
    state
}

/// `dl_iterate_phdr`'s callback for [`loader_state`]: the counts, from the
/// first object, then stop.
unsafe extern "C" fn first(
    info: *mut libc::dl_phdr_info,
    size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    let has_counts = size >= core::mem::offset_of!(libc::dl_phdr_info, dlpi_subs) + 8;
    // SAFETY: called by `dl_iterate_phdr` with a valid `info` of `size`
    // bytes and the `data` pointer `loader_state` gave it.
    unsafe {
        if has_counts {
            *data.cast::<(u64, u64)>() = ((*info).dlpi_adds, (*info).dlpi_subs);
        }
    }
    1
}

impl Modules {
    /// Every object loaded now (executable, shared libraries, vDSO) with
    /// an `.eh_frame_hdr`, its unwind sections copied (under the loader's
    /// lock, so no `dlclose` unmaps them meanwhile). An object unloaded
    /// later stays in the list, harmlessly: its copies are the list's own
    /// memory, and a walk reads nothing else but the sampled stack; code
    /// loaded in its place is walked with its rules (wrong frames, never a
    /// fault) until the list is made again ([`Modules::is_stale`]).
    pub(crate) fn discover() -> Modules {
        // Read before listing: a change during the listing shows as a
        // change at the next comparison.
        let loader = loader_state();
        let mut found: Vec<Module<Data>> = Vec::new();
        // SAFETY: `dl_iterate_phdr` calls `each` with valid `dl_phdr_info`
        // pointers while holding the loader's lock; `found` outlives the
        // call, and the callback does not unwind (it only reads the
        // program headers and pushes to the vector).
        unsafe {
            libc::dl_iterate_phdr(Some(each), (&mut found as *mut Vec<Module<Data>>).cast());
        }
        let mut unwinder = UnwinderX86_64::new();
        let count = found.len();
        for m in found {
            unwinder.add_module(m);
        }
        LIVE.fetch_add(1, Ordering::Relaxed);
        Modules {
            unwinder,
            count,
            loader,
        }
    }

    /// Whether the loader's objects may have changed since this list was
    /// made (an object loaded or unloaded).
    pub(crate) fn is_stale(&self) -> bool {
        let now = loader_state();
        now != self.loader || now == (u64::MAX, u64::MAX)
    }

    /// How many objects the unwinder knows.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn len(&self) -> usize {
        self.count
    }
}

/// `dl_iterate_phdr`'s callback: one loaded object.
unsafe extern "C" fn each(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: called by `dl_iterate_phdr` with a valid `info` and the
    // `data` pointer `Modules::discover` gave it (its vector).
    let (info, found) = unsafe { (&*info, &mut *data.cast::<Vec<Module<Data>>>()) };
    if let Some(m) = module_of(info) {
        found.push(m);
    }
    0
}

/// A framehop module for one loaded object: its executable segment and
/// unwind sections, read in place.
fn module_of(info: &libc::dl_phdr_info) -> Option<Module<Data>> {
    if info.dlpi_phdr.is_null() || info.dlpi_phnum == 0 {
        return None;
    }
    // SAFETY: the loader gives `dlpi_phnum` program headers at `dlpi_phdr`.
    let phdrs = unsafe { core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let base = info.dlpi_addr;
    let text = phdrs
        .iter()
        .find(|p| p.p_type == libc::PT_LOAD && p.p_flags & libc::PF_X != 0)?;
    let hdr = phdrs.iter().find(|p| p.p_type == libc::PT_GNU_EH_FRAME)?;
    let text_svma = text.p_vaddr..text.p_vaddr + text.p_memsz;
    let hdr_svma = hdr.p_vaddr..hdr.p_vaddr + hdr.p_memsz;
    let hdr_data = mapped(base, &hdr_svma);
    let eh_frame_svma = eh_frame_of(hdr_data, &hdr_svma)?;
    // `.eh_frame` runs to at most the end of the segment that holds it
    // (the header's table locates each entry; nothing past it is read).
    let seg = phdrs.iter().find(|p| {
        p.p_type == libc::PT_LOAD
            && p.p_vaddr <= eh_frame_svma
            && eh_frame_svma < p.p_vaddr + p.p_memsz
    })?;
    let seg_end = seg.p_vaddr + seg.p_filesz.min(seg.p_memsz);
    let eh_frame_data = eh_frame_entries(mapped(base, &(eh_frame_svma..seg_end)));
    let eh_frame = eh_frame_svma..eh_frame_svma + eh_frame_data.len() as u64;
    let name = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: a non-null `dlpi_name` is a NUL-terminated string.
        unsafe { core::ffi::CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    let sections = ExplicitModuleSectionInfo {
        base_svma: 0,
        // No code bytes: framehop reads them only for Mach-O's compact
        // unwind info, and a copy of the code would cost its size.
        text_svma: Some(text_svma.clone()),
        text: None,
        eh_frame_svma: Some(eh_frame),
        eh_frame: Some(eh_frame_data.to_vec()),
        eh_frame_hdr_svma: Some(hdr_svma),
        eh_frame_hdr: Some(hdr_data.to_vec()),
        ..Default::default()
    };
    let avma = base + text_svma.start..base + text_svma.end;
    Some(Module::new(name, avma, base, sections))
}

/// The mapped bytes of `svma` in an object loaded at `base`, for the
/// duration of a `dl_iterate_phdr` callback.
fn mapped<'a>(base: u64, svma: &Range<u64>) -> &'a [u8] {
    // SAFETY: the range is (part of) a loaded segment of the object, as its
    // program headers state, mapped readable for as long as the object is
    // loaded, which it stays while the loader's lock is held: the callers
    // run inside `dl_iterate_phdr`'s callback and copy what they keep.
    unsafe {
        core::slice::from_raw_parts(
            (base + svma.start) as *const u8,
            (svma.end - svma.start) as usize,
        )
    }
}

/// The entries of `.eh_frame` at the start of `data` (which runs to the
/// end of its segment): up to and with the zero terminator the linker
/// puts after the last entry, else all of `data`.
fn eh_frame_entries(data: &[u8]) -> &[u8] {
    let word = |at: usize, n: usize| -> Option<u64> {
        let bytes = data.get(at..at.checked_add(n)?)?;
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(bytes);
        Some(u64::from_le_bytes(b))
    };
    let mut at = 0usize;
    while let Some(len) = word(at, 4) {
        let next = match len {
            0 => return &data[..at + 4],
            0xffff_ffff => word(at + 4, 8)
                .and_then(|l| usize::try_from(l).ok())
                .and_then(|l| l.checked_add(at + 12)),
            l => (l as usize).checked_add(at + 4),
        };
        match next {
            Some(n) if n <= data.len() => at = n,
            _ => break,
        }
    }
    data
}

/// The stated address of `.eh_frame`, from its header.
fn eh_frame_of(hdr: &[u8], svma: &Range<u64>) -> Option<u64> {
    use gimli::{BaseAddresses, EhFrameHdr, LittleEndian, Pointer};
    let bases = BaseAddresses::default().set_eh_frame_hdr(svma.start);
    let parsed = EhFrameHdr::new(hdr, LittleEndian).parse(&bases, 8).ok()?;
    match parsed.eh_frame_ptr() {
        Pointer::Direct(a) => Some(a),
        Pointer::Indirect(_) => None,
    }
}

/// The readable part of a thread's stack for one sample: from the
/// interrupted stack pointer less the red zone to the stack's top, if the
/// stack pointer lies in the thread's stack at all (else nothing: a
/// signal stack or a stack of the program's own making).
pub(crate) fn readable(sp: u64, stack: &Range<u64>) -> Range<u64> {
    /// The x86-64 System V red zone below the stack pointer.
    const RED_ZONE: u64 = 128;
    if stack.contains(&sp) {
        sp.saturating_sub(RED_ZONE).max(stack.start)..stack.end
    } else {
        0..0
    }
}

/// Reads the word at `addr` if it lies within `readable`.
#[inline]
fn read_word(addr: u64, readable: &Range<u64>) -> Result<u64, ()> {
    if !addr.is_multiple_of(8)
        || addr < readable.start
        || addr.checked_add(8).is_none_or(|e| e > readable.end)
    {
        return Err(());
    }
    // SAFETY: `readable` is a part of this thread's own stack that is
    // mapped (from below the interrupted stack pointer, above which the
    // kernel pushed this handler's frame, to the stack's top), and the word
    // lies within it, aligned.
    Ok(unsafe { core::ptr::read_volatile(addr as *const u64) })
}

/// Walks the stack from `regs` into `out` (innermost first): with the
/// unwind tables when `modules` is given and knows the code, else along
/// the frame pointers. Returns the frame count, the method and whether
/// the walk stopped before the outermost frame.
pub(crate) fn walk(
    modules: Option<&Modules>,
    cache: Option<&mut Cache>,
    regs: Regs,
    readable: &Range<u64>,
    out: &mut [u64; MAX_FRAMES],
) -> (usize, Method, bool) {
    if let (Some(m), Some(cache)) = (modules, cache) {
        let (n, truncated) = walk_tables(m, cache, regs, readable, out);
        if n > 1 || !truncated {
            return (n, Method::Tables, truncated);
        }
    }
    let (n, truncated) = walk_frame_pointers(regs, readable, out);
    let method = if n > 1 {
        Method::FramePointers
    } else {
        Method::PcOnly
    };
    (n, method, truncated)
}

fn walk_tables(
    m: &Modules,
    cache: &mut Cache,
    regs: Regs,
    readable: &Range<u64>,
    out: &mut [u64; MAX_FRAMES],
) -> (usize, bool) {
    let mut read = |addr: u64| read_word(addr, readable);
    let start = UnwindRegsX86_64::new(regs.pc, regs.sp, regs.bp);
    let mut frames = m.unwinder.iter_frames(regs.pc, start, cache, &mut read);
    let mut n = 0;
    loop {
        match frames.next() {
            Ok(Some(_)) if n == MAX_FRAMES => return (n, true),
            Ok(Some(f)) => {
                out[n] = f.address();
                n += 1;
            }
            Ok(None) => return (n, false),
            Err(_) => return (n, true),
        }
    }
}

/// The frame-pointer chain (`-C force-frame-pointers=yes`): each frame's
/// `rbp` points at the caller's saved `rbp`, the return address above it;
/// a chain that leaves the readable stack or does not climb ends the walk.
pub(crate) fn walk_frame_pointers(
    regs: Regs,
    readable: &Range<u64>,
    out: &mut [u64; MAX_FRAMES],
) -> (usize, bool) {
    out[0] = regs.pc;
    let mut n = 1;
    let mut fp = regs.bp;
    while n < MAX_FRAMES {
        if fp == 0 {
            // The outermost frame (thread entry points clear `rbp`).
            return (n, false);
        }
        // Checked: a garbled `fp` near the top of the address space must
        // end the walk, not overflow (a panic in the signal handler aborts).
        let Some(ret_at) = fp.checked_add(8) else {
            return (n, true);
        };
        let (Ok(next), Ok(ret)) = (read_word(fp, readable), read_word(ret_at, readable)) else {
            return (n, true);
        };
        if ret == 0 {
            return (n, false);
        }
        out[n] = ret;
        n += 1;
        if next != 0 && next <= fp {
            return (n, true);
        }
        fp = next;
    }
    (n, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Garbage stacks: every word random, frame pointers into the stack,
    /// out of it, unaligned, looping: the walks end, within bounds, never
    /// reading outside the buffer given as the stack.
    #[test]
    fn walks_never_leave_the_stack() {
        let modules = Modules::discover();
        assert!(modules.len() > 0, "no module with unwind tables found");
        let mut cache = Box::new(Cache::new_in());
        let mut stack = vec![0u64; 4096];
        let lo = stack.as_ptr() as u64;
        let hi = lo + stack.len() as u64 * 8;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let code = walks_never_leave_the_stack as *const () as u64;
        let mut out = [0u64; MAX_FRAMES];
        for round in 0..2000 {
            for w in stack.iter_mut() {
                *w = match rand() % 4 {
                    0 => rand(),
                    1 => lo + rand() % (hi - lo + 64),
                    2 => code + rand() % 4096,
                    _ => 0,
                };
            }
            let sp = lo + (rand() % (hi - lo)) / 8 * 8;
            let regs = Regs {
                pc: if round % 2 == 0 { code } else { rand() },
                sp,
                bp: lo + rand() % (hi - lo + 64),
            };
            let readable = readable(sp, &(lo..hi));
            let (n, method, _) = walk(Some(&modules), Some(&mut cache), regs, &readable, &mut out);
            assert!((1..=MAX_FRAMES).contains(&n), "{n} frames");
            assert_eq!(out[0], regs.pc, "the first frame is the pc ({method:?})");
            let (n, _) = walk_frame_pointers(regs, &readable, &mut out);
            assert!((1..=MAX_FRAMES).contains(&n));
        }
    }

    /// `.eh_frame` is copied up to its terminator (or whole without one,
    /// or when a length runs past the segment).
    #[test]
    fn eh_frame_is_copied_to_its_terminator() {
        let mut data = Vec::new();
        data.extend_from_slice(&8u32.to_le_bytes());
        data.extend_from_slice(&[1; 8]);
        data.extend_from_slice(&0u32.to_le_bytes());
        data.extend_from_slice(&[0xee; 20]);
        assert_eq!(eh_frame_entries(&data).len(), 16);
        assert_eq!(eh_frame_entries(&data[..12]).len(), 12, "no terminator");
        let mut long = 100u32.to_le_bytes().to_vec();
        long.extend_from_slice(&[0; 8]);
        assert_eq!(eh_frame_entries(&long).len(), 12, "length past the end");
    }

    /// A stack pointer outside the thread's stack reads nothing.
    #[test]
    fn foreign_stack_pointer_reads_nothing() {
        let r = readable(10, &(4096..8192));
        assert!(r.is_empty());
        assert_eq!(read_word(4096, &r), Err(()));
        let r = readable(4096 + 256, &(4096..8192));
        assert_eq!(r, 4096 + 128..8192);
        assert_eq!(read_word(8192 - 4, &r), Err(()), "crosses the top");
    }

    /// A well-formed frame-pointer chain is followed to its end.
    #[test]
    fn frame_pointer_chain_is_followed() {
        let mut stack = vec![0u64; 64];
        let lo = stack.as_ptr() as u64;
        // Frames at words 4, 10, 20: [saved rbp, return address].
        stack[4] = lo + 10 * 8;
        stack[5] = 0x1111;
        stack[10] = lo + 20 * 8;
        stack[11] = 0x2222;
        stack[20] = 0;
        stack[21] = 0x3333;
        let hi = lo + 64 * 8;
        let regs = Regs {
            pc: 0x42,
            sp: lo + 2 * 8,
            bp: lo + 4 * 8,
        };
        let mut out = [0u64; MAX_FRAMES];
        let (n, truncated) = walk_frame_pointers(regs, &readable(regs.sp, &(lo..hi)), &mut out);
        assert_eq!(&out[..n], &[0x42, 0x1111, 0x2222, 0x3333]);
        assert!(!truncated);
        drop(stack);
    }

    /// A saved frame pointer at the very top of the address space ends
    /// the walk as truncated (the return address's slot would lie past
    /// the last address), both as the interrupted `rbp` and in the chain.
    #[test]
    fn frame_pointer_at_the_top_of_the_address_space_ends_the_walk() {
        let mut stack = vec![0u64; 64];
        let lo = stack.as_ptr() as u64;
        let top: u64 = !7;
        stack[4] = top;
        stack[5] = 0x1111;
        let hi = lo + 64 * 8;
        let mut out = [0u64; MAX_FRAMES];
        for bp in [lo + 4 * 8, top] {
            let regs = Regs {
                pc: 0x42,
                sp: lo + 2 * 8,
                bp,
            };
            let r = readable(regs.sp, &(lo..hi));
            let (n, truncated) = walk_frame_pointers(regs, &r, &mut out);
            assert!(truncated, "bp {bp:#x}");
            assert!(n <= 2, "bp {bp:#x}: {n} frames");
            // Everything in the full walk too (tables first, no module).
            let (n, _, truncated) = walk(None, None, regs, &r, &mut out);
            assert!(truncated && n <= 2);
        }
        drop(stack);
    }
}
