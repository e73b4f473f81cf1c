//! Threads that exit mid-trace, and events emitted from thread-local
//! destructors while a thread exits: nothing panics, the trace decodes,
//! and every event is either in the file or counted as dropped.

mod common;

use std::cell::Cell;

use fxt_runtime::Config;

struct EmitOnDrop(Cell<u64>);

impl Drop for EmitOnDrop {
    fn drop(&mut self) {
        // Runs while the thread's locals are destroyed, before or after
        // fxt's own thread state.
        for i in 0..10 {
            common::emit(self.0.get(), 1000 + i);
        }
    }
}

thread_local! {
    static LATE: EmitOnDrop = const { EmitOnDrop(Cell::new(0)) };
}

#[test]
fn thread_exit_and_tls_destructors() {
    let _s = common::serial();
    for crash_safe in [false, true] {
        let path = common::temp_path(&format!("thread-exit-{crash_safe}.fxt"));
        let session = fxt_runtime::start(
            Config::new()
                .buffer_size(4 << 20)
                .output(&path)
                .crash_safe(crash_safe),
        )
        .unwrap();
        // Join each thread explicitly: a scope only waits for the closures
        // to return, not for the thread-local destructors that run after,
        // and an event emitted after `finish` is neither written nor counted
        // (see `FINISH_GRACE`). `join` waits for the thread's exit.
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u64)
                .map(|t| {
                    s.spawn(move || {
                        LATE.with(|l| l.0.set(t));
                        for i in 0..100 {
                            common::emit(t, i);
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        });
        let stats = session.finish().unwrap();
        let records = common::decode(&std::fs::read(&path).unwrap());
        let evs = common::stress_events(&records);
        assert!(evs.iter().filter(|e| e.1 < 100).count() == 800);
        assert_eq!(
            stats.emitted_records_written + stats.records_dropped,
            8 * 110,
            "{stats:?}"
        );
        std::fs::remove_file(&path).unwrap();
    }
}
