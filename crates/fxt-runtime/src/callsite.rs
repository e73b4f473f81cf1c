//! Call sites: the per-call-site cache that makes a disabled event cost one
//! relaxed load and a branch, and an enabled one skip all string lookups.
//!
//! # The cache word
//!
//! | value | meaning |
//! |---|---|
//! | `0` | disabled (no session, or category off): [`Callsite::site`] returns `None` |
//! | [`STALE`] (1, the initial value) | unknown: the next use takes the slow path |
//! | bit 31 set | enabled in session generation `bits [0 .. 30)`; bits `[32 .. 48)` = category string ref, `[48 .. 64)` = name string ref; bit 30 = some string ref of the site (category, name or key) is inline |
//!
//! The enabled word's upper half is exactly the upper half of an event
//! record header, so the hot path builds headers with one XOR and one OR.
//! Its lower half, [`Site::token`], is what the hot path compares with
//! the writing thread's gate (`crate::ring::Cursor`): a thread opens its
//! gate with `ENABLED | generation`, so one comparison says the site is
//! enabled in the thread's session with every string ref indexed.
//!
//! A [`KeyCache`] word is `key ref << 48 | ENABLED | (INLINE) | generation`:
//! its lower half equals the site's token exactly when the key was
//! interned, indexed, in the site's session, and its upper half shifted
//! down is the key's bits of an argument header.
//!
//! # Protocol
//!
//! The slow path ([`Callsite::register`], cold and never inlined) runs
//! under the control lock: it links the call site into the registry (an
//! intrusive list, like tracing-core's), interns the category, name and
//! argument keys (string records go into the durable region first, each
//! key's cache is stored), then publishes the word with a Release store.
//! The fast path loads the word Relaxed and, only when it is enabled, issues
//! an Acquire fence (free on x86) that pairs with that Release store, so the
//! string records and key caches are visible before the indices are used.
//!
//! Session start/stop and category changes rewrite every registered word
//! under the same lock (to [`STALE`] or 0), so a decision never outlives the
//! configuration it was made under; an enabled word read just before a
//! change carries its generation, which the emit path compares with the
//! thread's session (events of a finished session are dropped).

use core::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};

use crate::state::{self, Control};

/// The "unknown, take the slow path" cache word.
pub(crate) const STALE: u64 = 1;
/// Enabled flag of the cache word.
pub(crate) const ENABLED: u64 = 1 << 31;
/// "Some ref is inline" flag of the cache word.
pub(crate) const INLINE: u64 = 1 << 30;
/// Mask of the generation bits.
pub(crate) const GEN_MASK: u64 = (1 << 30) - 1;

/// The gate token a thread opens its cursor with to take events of the
/// session of `generation` on the hot path (see the module docs).
#[inline]
pub(crate) fn gate_token(generation: u32) -> u32 {
    (ENABLED | (generation as u64 & GEN_MASK)) as u32
}

/// A static call site: category, name, argument keys, and the cached
/// decision and string indices. Lives in a block-local `static`.
///
/// ```
/// use fxt_runtime::__macro_support::{Callsite, KeyCache, instant, ArgValue};
/// static KEYS: [KeyCache; 1] = [KeyCache::NEW];
/// static SITE: Callsite = Callsite::new("demo", "tick", &["n"], &KEYS);
/// if let Some(site) = SITE.site() {
///     instant(site, &[ArgValue::U64(1)]);
/// }
/// ```
pub struct Callsite {
    word: AtomicU64,
    /// Next call site in the registry (written once, under the control lock).
    next: AtomicPtr<Callsite>,
    registered: AtomicBool,
    pub(crate) category: &'static str,
    pub(crate) name: &'static str,
    pub(crate) arg_names: &'static [&'static str],
    pub(crate) keys: &'static [KeyCache],
}

impl core::fmt::Debug for Callsite {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Callsite")
            .field("category", &self.category)
            .field("name", &self.name)
            .field("arg_names", &self.arg_names)
            .field("word", &self.word.load(Ordering::Relaxed))
            .finish()
    }
}

/// The cached string index of one argument key of a call site:
/// `string ref << 48 | ENABLED | (INLINE if the ref is inline) | generation`
/// (0 until first interned; see the module docs).
#[derive(Debug)]
pub struct KeyCache {
    pub(crate) word: AtomicU64,
}

impl KeyCache {
    /// An empty cache, for `static` arrays.
    #[allow(clippy::declare_interior_mutable_const)]
    pub const NEW: KeyCache = KeyCache {
        word: AtomicU64::new(0),
    };

    /// The key's string ref in generation `generation`, if it was interned for it.
    #[inline(always)]
    pub(crate) fn get(&self, generation: u32) -> Option<u16> {
        // Relaxed: the value was stored before the call site's word was
        // published (Release), and the caller loaded that word and fenced
        // (Acquire).
        let w = self.word.load(Ordering::Relaxed);
        if w & ENABLED != 0 && (w & GEN_MASK) as u32 == generation {
            Some((w >> 48) as u16)
        } else {
            None
        }
    }

    /// The key's bits of an argument header (`ref << 16`), if the key was
    /// interned as an indexed ref in the session of the site whose token
    /// is `token` ([`Site::token`]).
    #[inline(always)]
    pub(crate) fn header_bits(&self, token: u32) -> Option<u64> {
        // Relaxed: as in `get`.
        let w = self.word.load(Ordering::Relaxed);
        if w as u32 == token {
            Some(w >> 32)
        } else {
            None
        }
    }

    /// The cache word of a key interned as `r` in session `generation`.
    fn word_of(generation: u32, r: u16) -> u64 {
        let inline = if r & 0x8000 != 0 { INLINE } else { 0 };
        ((r as u64) << 48) | ENABLED | inline | (generation as u64 & GEN_MASK)
    }
}

/// Proof that a call site is enabled in a session: the call site and the
/// cache word it was enabled with. Pass it to the emit functions.
#[derive(Clone, Copy)]
pub struct Site {
    pub(crate) callsite: &'static Callsite,
    /// The call site's key caches: `callsite.keys`, given again by the
    /// macro expansion ([`Callsite::site_with_keys`]) so that, inlined,
    /// their address and number are constants instead of loads from the
    /// call site's static (which, holding atomics, the compiler cannot
    /// read at compile time).
    pub(crate) keys: &'static [KeyCache],
    pub(crate) word: u64,
}

impl core::fmt::Debug for Site {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Site")
            .field("category", &self.callsite.category)
            .field("name", &self.callsite.name)
            .field("generation", &self.generation())
            .finish()
    }
}

impl Site {
    /// The site of `callsite` enabled with `word` (taken apart by a caller
    /// that passes it to a function that is not inlined: as two words, in
    /// registers).
    #[inline(always)]
    pub(crate) fn from_parts(callsite: &'static Callsite, word: u64) -> Site {
        Site {
            callsite,
            keys: callsite.keys,
            word,
        }
    }

    /// Session generation the site was enabled in.
    #[inline(always)]
    pub(crate) fn generation(&self) -> u32 {
        (self.word & GEN_MASK) as u32
    }
    /// The site's gate token: the cache word's lower half. A thread's gate
    /// opens with `ENABLED | generation` (see the module docs), which
    /// this equals only for a site of that session whose refs are all
    /// indexed.
    #[inline(always)]
    pub(crate) fn token(&self) -> u32 {
        self.word as u32
    }
    /// Whether a string ref of the site is inline.
    #[inline(always)]
    pub(crate) fn has_inline(&self) -> bool {
        self.word & INLINE != 0
    }
    /// Category string ref.
    #[inline(always)]
    pub(crate) fn category_ref(&self) -> u16 {
        (self.word >> 32) as u16
    }
    /// Name string ref.
    #[inline(always)]
    pub(crate) fn name_ref(&self) -> u16 {
        (self.word >> 48) as u16
    }
}

/// Head of the registry of call sites (an intrusive singly linked list;
/// pushed and walked under the control lock, so Relaxed would do, but
/// Acquire/Release keeps the list valid for any lock-free reader).
static REGISTRY: AtomicPtr<Callsite> = AtomicPtr::new(core::ptr::null_mut());

impl Callsite {
    /// A call site. `keys` must have one [`KeyCache`] per entry of
    /// `arg_names` (extra arguments get an empty name).
    pub const fn new(
        category: &'static str,
        name: &'static str,
        arg_names: &'static [&'static str],
        keys: &'static [KeyCache],
    ) -> Callsite {
        Callsite {
            word: AtomicU64::new(STALE),
            next: AtomicPtr::new(core::ptr::null_mut()),
            registered: AtomicBool::new(false),
            category,
            name,
            arg_names,
            keys,
        }
    }

    /// The call site's category.
    pub fn category(&self) -> &'static str {
        self.category
    }

    /// The call site's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// `Some` when this call site records in the live session.
    ///
    /// Disabled (no session, or category off) this is one relaxed load and a
    /// branch.
    #[inline(always)]
    pub fn site(&'static self) -> Option<Site> {
        self.site_with_keys(self.keys)
    }

    // Used by `sync` (a lock's records are written after its unlock).
    #[cfg_attr(not(feature = "sync"), allow(dead_code))]
    /// The generation of the live session when this call site is already
    /// enabled in it; `None` otherwise. Unlike [`Callsite::site`] it never
    /// registers the call site, so it takes no lock and allocates nothing:
    /// for code that must not (a lock's unlock, before the raw unlock).
    #[inline(always)]
    pub(crate) fn enabled_generation(&'static self) -> Option<u32> {
        let w = self.word.load(Ordering::Relaxed);
        (w & ENABLED != 0).then_some((w & GEN_MASK) as u32)
    }

    /// [`Callsite::site`] for a call site built with `keys` (the same
    /// static given to [`Callsite::new`]): what macro expansions call.
    ///
    /// ```
    /// use fxt_runtime::__macro_support::{Callsite, KeyCache};
    /// static KEYS: [KeyCache; 1] = [KeyCache::NEW];
    /// static SITE: Callsite = Callsite::new("demo", "tick", &["n"], &KEYS);
    /// assert!(SITE.site_with_keys(&KEYS).is_none()); // no session
    /// ```
    #[inline(always)]
    pub fn site_with_keys(&'static self, keys: &'static [KeyCache]) -> Option<Site> {
        debug_assert!(core::ptr::eq(keys, self.keys));
        let w = self.word.load(Ordering::Relaxed);
        if w == 0 {
            return None;
        }
        if w & ENABLED != 0 {
            // Pairs with the Release store in `register`: the string records
            // and key caches written before the word are visible.
            fence(Ordering::Acquire);
            Some(Site {
                callsite: self,
                keys,
                word: w,
            })
        } else {
            match self.register() {
                0 => None,
                word => Some(Site {
                    callsite: self,
                    keys,
                    word,
                }),
            }
        }
    }

    /// Slow path: registers the call site and decides its word under the
    /// control lock. Returns the word if enabled, else 0.
    #[cold]
    #[inline(never)]
    fn register(&'static self) -> u64 {
        if state::forked() {
            // A forked child takes no lock (see `crate::session`); stay off.
            self.word.store(0, Ordering::Relaxed);
            return 0;
        }
        let ctl = state::control();
        if !self.registered.load(Ordering::Relaxed) {
            self.registered.store(true, Ordering::Relaxed);
            let head = REGISTRY.load(Ordering::Acquire);
            self.next.store(head, Ordering::Relaxed);
            REGISTRY.store(self as *const Callsite as *mut Callsite, Ordering::Release);
        }
        let word = self.decide(&ctl);
        // Release pairs with the Acquire fence in `site`.
        self.word.store(word, Ordering::Release);
        drop(ctl);
        // One word (in a register) rather than a `Site` (in memory, which
        // would keep the caller's `Site` on its stack).
        if word & ENABLED != 0 {
            word
        } else {
            0
        }
    }

    /// The cache word under the current control state (interning strings
    /// into the live session when enabled).
    fn decide(&self, ctl: &Control) -> u64 {
        let Some(s) = ctl.current.as_ref() else {
            return 0;
        };
        if !ctl.filter.enabled(self.category) {
            return 0;
        }
        let generation = s.generation;
        let cat = s.buffers.durable.intern(self.category);
        let name = s.buffers.durable.intern(self.name);
        let mut inline = cat & 0x8000 != 0 || name & 0x8000 != 0;
        for (key, cache) in self.arg_names.iter().zip(self.keys) {
            let r = s.buffers.durable.intern(key);
            inline |= r & 0x8000 != 0;
            cache
                .word
                .store(KeyCache::word_of(generation, r), Ordering::Relaxed);
        }
        ENABLED
            | if inline { INLINE } else { 0 }
            | (generation as u64 & GEN_MASK)
            | ((cat as u64) << 32)
            | ((name as u64) << 48)
    }
}

/// The categories of the registered call sites (those that ran at least
/// once: a site registers on its first use, session or not), sorted, each
/// once. Reads the registry without the lock: it is a push-only list.
pub(crate) fn registered_categories() -> Vec<&'static str> {
    let mut out = Vec::new();
    // Acquire pairs with the Release push in `register`: the call site a
    // pointer names is fully visible.
    let mut p = REGISTRY.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: as in `reset_all`: only `&'static Callsite`s are linked,
        // never unlinked.
        let cs: &'static Callsite = unsafe { &*p };
        out.push(cs.category);
        p = cs.next.load(Ordering::Acquire);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Sets every registered call site's word to `word` (call with the control
/// lock held: that is what keeps decisions and resets ordered).
pub(crate) fn reset_all(_ctl: &Control, word: u64) {
    let mut p = REGISTRY.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: only `&'static Callsite`s are linked into the registry
        // (`register` takes `&'static self`), and they are never unlinked,
        // so every non-null pointer in the list is valid for shared access
        // forever.
        let cs: &'static Callsite = unsafe { &*p };
        cs.word.store(word, Ordering::Release);
        p = cs.next.load(Ordering::Relaxed);
    }
}

/// Turns every registered call site off without the control lock: the
/// `fork` child handler (see `crate::session`), where the lock may be held by a
/// thread that does not exist in the child. The registry is a lock-free
/// list, so walking it needs no lock.
pub(crate) fn disable_all_after_fork() {
    let mut p = REGISTRY.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: as in `reset_all`: only `&'static Callsite`s are linked,
        // never unlinked.
        let cs: &'static Callsite = unsafe { &*p };
        cs.word.store(0, Ordering::Relaxed);
        p = cs.next.load(Ordering::Acquire);
    }
}
