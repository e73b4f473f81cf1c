//! Each [`super::Sampled`] allocator's own copy of the sampling
//! generation, so that an allocation or free while nothing samples reads
//! one word of the allocator itself and branches: the allocator is a
//! `static` of the program's crate, which its code addresses directly,
//! where fxt's [`super::GENERATION`] is addressed through the global
//! offset table (a load more per call).
//!
//! An allocator's copy starts [`UNSEEN`]; its first allocation that
//! crosses its thread's count (an allocator whose copy is not 0 counts
//! down, and a thread's count starts crossed) registers it ([`resolve`]):
//! its address goes into a fixed table the sessions write their
//! generation through, as they change the global one ([`publish`]). Only
//! an allocator in the program's static memory (the executable's writable
//! segments) is registered: one on a stack or the heap may be gone when a
//! session starts. Any other (or one past the table's room) *follows*
//! ([`FOLLOW`]): it counts down whether or not a session samples, and
//! reads the global generation each time its thread's count crosses (at
//! least every `countdown::CHECK_BYTES` while nothing samples).
//!
//! The copy is right once the registration returns, whatever sessions
//! start or stop meanwhile: the registration stores the generation it
//! read and reads it again (until the two agree), and a session stores
//! the global generation before it stores each registered copy, all
//! sequentially consistent: a session that the registration's second read
//! does not see stores its generation into the copy after it.

use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use super::GENERATION;

/// The copy of an allocator not registered yet (no generation is this
/// large: they are at most `callsite::GEN_MASK`).
pub(super) const UNSEEN: u32 = u32::MAX;
/// The copy of an allocator that reads [`GENERATION`] at each call.
pub(super) const FOLLOW: u32 = u32::MAX - 1;

/// Allocators registered (a program has one global allocator; a few more
/// are room for wrappers used directly).
const ROOM: usize = 8;

static REGISTERED: [AtomicPtr<AtomicU32>; ROOM] = [const { AtomicPtr::new(ptr::null_mut()) }; ROOM];

/// The generation for the allocator whose copy `armed` held `seen`: the
/// copy itself when registered, else out of line ([`resolve`]).
#[inline(always)]
pub(super) fn resolve_inline(armed: &AtomicU32, seen: u32) -> u32 {
    if seen >= FOLLOW {
        resolve(armed, seen)
    } else {
        seen
    }
}

/// The generation for the allocator whose copy `armed` held `seen`
/// (`UNSEEN` or `FOLLOW`): registers it first when unseen.
#[cold]
#[inline(never)]
pub(super) fn resolve(armed: &AtomicU32, seen: u32) -> u32 {
    if seen == UNSEEN {
        return register(armed);
    }
    GENERATION.load(Ordering::Relaxed)
}

/// Registers the allocator whose copy is `armed`, or makes it follow the
/// global generation; the generation now. No lock, no allocation.
fn register(armed: &AtomicU32) -> u32 {
    let at = armed as *const AtomicU32 as *mut AtomicU32;
    let registered = in_static_memory(at as usize)
        && REGISTERED.iter().any(|slot| {
            // SeqCst, here and below: see the module docs. Another thread
            // registering the same allocator finds it here.
            match slot.compare_exchange(ptr::null_mut(), at, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => true,
                Err(other) => other == at,
            }
        });
    if !registered {
        armed.store(FOLLOW, Ordering::Relaxed);
        return GENERATION.load(Ordering::Relaxed);
    }
    loop {
        let generation = GENERATION.load(Ordering::SeqCst);
        armed.store(generation, Ordering::SeqCst);
        if GENERATION.load(Ordering::SeqCst) == generation {
            return generation;
        }
    }
}

/// Stores `generation` (just stored in [`GENERATION`]) into every
/// registered allocator's copy. No lock: also for the `fork` child
/// handler.
pub(super) fn publish(generation: u32) {
    for slot in &REGISTERED {
        let at = slot.load(Ordering::SeqCst);
        if !at.is_null() {
            // SAFETY: only an allocator in the executable's static memory
            // is registered (`in_static_memory`): its copy lives, at that
            // address, as long as the process.
            unsafe { &*at }.store(generation, Ordering::SeqCst);
        }
    }
}

/// Whether `address` lies in a writable segment of the executable (its
/// statics), from its program headers as the kernel passed them: no
/// lock, no allocation, no system call.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn in_static_memory(address: usize) -> bool {
    // SAFETY: `getauxval` reads the auxiliary vector; no preconditions.
    let (phdr, count) = unsafe {
        (
            libc::getauxval(libc::AT_PHDR) as usize,
            libc::getauxval(libc::AT_PHNUM) as usize,
        )
    };
    if phdr == 0 || count == 0 {
        return false;
    }
    // SAFETY: the kernel's `AT_PHDR` is the address of the executable's
    // `AT_PHNUM` program headers, mapped (in its first loaded segment)
    // for the whole life of the process and never written.
    let headers = unsafe { core::slice::from_raw_parts(phdr as *const libc::Elf64_Phdr, count) };
    // Where the executable is loaded: its headers' address less the
    // address they are linked at.
    let Some(own) = headers.iter().find(|h| h.p_type == libc::PT_PHDR) else {
        return false;
    };
    let bias = phdr.wrapping_sub(own.p_vaddr as usize);
    headers.iter().any(|h| {
        let start = bias.wrapping_add(h.p_vaddr as usize);
        h.p_type == libc::PT_LOAD
            && h.p_flags & libc::PF_W != 0
            && (start..start.saturating_add(h.p_memsz as usize)).contains(&address)
    })
}

/// Elsewhere every allocator follows the global generation.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn in_static_memory(_: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    static STATIC: AtomicU32 = AtomicU32::new(0);

    /// A static is in the executable's static memory; a local, a heap
    /// block and the executable's code are not.
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    #[test]
    fn statics_only() {
        let local = AtomicU32::new(0);
        let boxed = Box::new(AtomicU32::new(0));
        assert!(in_static_memory(&STATIC as *const AtomicU32 as usize));
        assert!(!in_static_memory(&local as *const AtomicU32 as usize));
        assert!(!in_static_memory(&*boxed as *const AtomicU32 as usize));
        assert!(!in_static_memory(statics_only as fn() as usize));
    }
}
