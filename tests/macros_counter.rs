//! `trace_counter!`: series values, types and the optional id.
#![deny(warnings, clippy::all)]

mod macros_support;

use fxt::trace_counter;
use macros_support::{args, named, one, trace, ArgValue, EventKind};

#[test]
fn series_and_default_id() {
    let used = 1024usize;
    let records = trace(
        || trace_counter!("mem", "heap", "used" => used, "ratio" => 0.5f32, "delta" => -3i32),
    );
    let e = one(&records, "heap");
    assert_eq!(e.category, "mem");
    assert_eq!(e.kind, EventKind::Counter { id: 0 });
    assert_eq!(
        args(e),
        [
            ("used".to_string(), ArgValue::U64(1024)),
            ("ratio".to_string(), ArgValue::F64(0.5)),
            ("delta".to_string(), ArgValue::I32(-3)),
        ]
    );
}

#[test]
fn explicit_ids() {
    let records = trace(|| {
        for pool in 1..=3u64 {
            trace_counter!("mem", "pool", id = pool, "free" => pool * 100);
        }
    });
    let pools = named(&records, "pool");
    let ids: Vec<_> = pools.iter().map(|e| e.kind).collect();
    assert_eq!(
        ids,
        [
            EventKind::Counter { id: 1 },
            EventKind::Counter { id: 2 },
            EventKind::Counter { id: 3 }
        ]
    );
    assert_eq!(pools[2].args[0].value, ArgValue::U64(300));
}
