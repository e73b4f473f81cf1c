//! What appending the derived records costs at the end of a session
//! (feature `symbolize` of the runtime, and every `fxt` delivery): CPU time
//! (user + system, from `getrusage`, so other load on the machine does not
//! count) of [`fxt_symbols::derived::records`] over a trace of MB
//! megabytes of events, one in `EVERY` a contended lock's wait naming its
//! holder, against a bare decode walk of the same trace in the same run
//! (what any reader of the file pays).
//!
//! ```text
//! cargo run --release -p fxt-symbols --example derive_cost -- [MB] [EVERY]
//! ```

use std::time::Duration;

use fxt_format::decode::SliceReader;
use fxt_format::encode::{
    encode_into_vec, words_to_bytes, Arg, ArgValue, Event, EventKind, Initialization, StringRef,
    ThreadRef,
};

/// CPU time of this process so far.
fn cpu() -> Duration {
    // SAFETY: `getrusage` fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a writable rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// A trace of about `mb` MB: slices on 8 threads, one in `every` a wait
/// for the lock "turns" handed over by the previous thread.
fn trace(mb: usize, every: u64) -> (Vec<u8>, u64) {
    let mut words = Vec::new();
    encode_into_vec(
        &Initialization {
            ticks_per_second: 1_000_000_000,
        },
        &mut words,
    )
    .unwrap();
    let (mut i, mut waits) = (0u64, 0);
    while words.len() * 8 < mb << 20 {
        let thread = i % 8;
        let ts = i * 1000;
        let at = ThreadRef::Inline { process: 1, thread };
        let k = StringRef::Inline;
        if i % every == 0 {
            let args = [
                Arg::new(k("mode"), ArgValue::Str(k("exclusive"))),
                Arg::new(k("state"), ArgValue::Str(k("wait"))),
                Arg::new(k("holder"), ArgValue::U64((thread + 7) % 8)),
                Arg::new(k("handoff_ns"), ArgValue::U64(100)),
            ];
            let e = Event {
                kind: EventKind::DurationComplete { end: ts + 900 },
                timestamp: ts,
                thread: at,
                category: k("lock"),
                name: k("turns"),
                args: &args,
            };
            encode_into_vec(&e, &mut words).unwrap();
            waits += 1;
        } else {
            let args = [Arg::new(k("n"), ArgValue::U64(i))];
            let e = Event {
                kind: EventKind::DurationComplete { end: ts + 500 },
                timestamp: ts,
                thread: at,
                category: k("app"),
                name: k("work"),
                args: &args,
            };
            encode_into_vec(&e, &mut words).unwrap();
        }
        i += 1;
    }
    (words_to_bytes(&words), waits)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mb: usize = args.next().map_or(256, |s| s.parse().expect("MB"));
    let every: u64 = args.next().map_or(100, |s| s.parse().expect("EVERY"));
    let (bytes, waits) = trace(mb, every);
    let t0 = cpu();
    let records = SliceReader::new(&bytes).flatten().count();
    let walk = cpu() - t0;
    let t0 = cpu();
    let derived = fxt_symbols::derived::records(&bytes);
    let derive = cpu() - t0;
    let per_mb = |d: Duration| d.as_secs_f64() * 1e3 / mb as f64;
    println!("trace: {mb} MB, {records} records, {waits} lock waits");
    println!("decode walk:        {:7.2} ms CPU per MB", per_mb(walk));
    println!(
        "derived::records:   {:7.2} ms CPU per MB ({:.2}x the walk), {} words appended",
        per_mb(derive),
        derive.as_secs_f64() / walk.as_secs_f64(),
        derived.len()
    );
}
