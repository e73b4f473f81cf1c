mod common;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use fxt_runtime::{Config, Mode};

#[test]
fn starve() {
    for cs in [false, true] {
        let path = common::temp_path(&format!("starve-{cs}.fxt"));
        let session = fxt_runtime::start(Config::new().mode(Mode::Circular).buffer_size(1 << 20).output(&path).crash_safe(cs)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let counts: Arc<Vec<AtomicU64>> = Arc::new((0..4).map(|_| AtomicU64::new(0)).collect());
        let parked = Arc::new(Barrier::new(5));
        let done = Arc::new(Barrier::new(5));
        let hs: Vec<_> = (0..4).map(|t| { let (stop, counts, parked, done) = (stop.clone(), counts.clone(), parked.clone(), done.clone()); std::thread::spawn(move || {
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) { common::emit(t, i); i += 1; }
            counts[t as usize].store(i, Ordering::Relaxed);
            parked.wait(); done.wait();
        })}).collect();
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        parked.wait();
        let (bytes, stats) = session.finish_to_vec().unwrap();
        let recs = common::decode(&bytes);
        let evs = common::stress_events(&recs);
        for t in 0..4u64 {
            let newest = evs.iter().filter(|e| e.0 == t).map(|e| e.1).max();
            eprintln!("cs={cs} thread {t}: emitted {} newest {:?}", counts[t as usize].load(Ordering::Relaxed), newest);
        }
        eprintln!("{stats:?}");
        done.wait();
        for h in hs { h.join().unwrap(); }
    }
}
