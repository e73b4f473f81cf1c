//! What symbolizing costs on a large binary: CPU time (user + system, from
//! `getrusage`, so other load on the machine does not count) and peak
//! memory of opening BINARY and resolving N addresses spread over its code
//! with [`fxt_symbols::Symbolizer`], as `fxt symbolize` and the runtime's
//! collection do.
//!
//! ```text
//! cargo run --release -p fxt-symbols --example symbolize_cost -- BINARY [N]
//! ```

use std::time::Duration;

use fxt_format::samples::ModuleEntry;
use fxt_symbols::Symbolizer;
use object::{Object, ObjectSegment, SegmentFlags};

/// CPU time of this process so far, and its peak resident set in KiB.
fn usage() -> (Duration, i64) {
    // SAFETY: `getrusage` fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_maxrss)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: symbolize_cost BINARY [N]");
    let n: u64 = args.next().map_or(10_000, |s| s.parse().expect("N"));
    // Read through a cache of the parts parsed, so that the peak memory
    // below is the symbolizer's, not a copy of the file.
    let cache = object::read::ReadCache::new(std::fs::File::open(&path).expect("readable binary"));
    let file = object::File::parse(&cache).expect("an object file");
    // The executable segment, mapped as a loader would (runtime address =
    // file address, so the module's start is the segment's address).
    let text = file
        .segments()
        .find(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags.0 & 1 != 0))
        .expect("an executable segment");
    let (offset, size) = text.file_range();
    let module = ModuleEntry {
        start: text.address(),
        end: text.address() + size,
        offset,
        build_id: Vec::new(),
        path: path.clone(),
    };
    let debug = file
        .sections()
        .filter(|s| object::ObjectSection::name(s).is_ok_and(|n| n.starts_with(".debug_")))
        .map(|s| object::ObjectSection::size(&s))
        .sum::<u64>();
    drop(file);
    drop(cache);

    let modules = [module.clone()];
    let (before, rss_before) = usage();
    let mut symbolizer = Symbolizer::new();
    let first = symbolizer.resolve(&modules, module.start + size / 2, false);
    let (opened, rss_open) = usage();
    let step = (size / n).max(1);
    let mut named = 0u64;
    let mut frames = 0u64;
    for i in 0..n {
        let f = symbolizer.resolve(&modules, module.start + i * step, false);
        named += u64::from(!f.is_empty());
        frames += f.len() as u64;
    }
    let (done, rss_done) = usage();
    let per = (done - opened).as_secs_f64() / n as f64;
    println!("binary                {path}");
    println!(
        "size                  {} MiB ({} MiB of DWARF)",
        std::fs::metadata(&path).unwrap().len() >> 20,
        debug >> 20
    );
    println!("code                  {} MiB", size >> 20);
    println!(
        "open + first address  {:.3} s CPU ({} frames)",
        (opened - before).as_secs_f64(),
        first.len()
    );
    println!(
        "{n} addresses         {:.3} s CPU, {:.1} µs each",
        (done - opened).as_secs_f64(),
        per * 1e6
    );
    println!("named                 {named} of {n} ({frames} frames with inlined ones)");
    println!(
        "peak RSS              {} MiB before, {} MiB after opening, {} MiB at the end \
         (the binary's mapped pages count)",
        rss_before >> 10,
        rss_open >> 10,
        rss_done >> 10
    );
}
