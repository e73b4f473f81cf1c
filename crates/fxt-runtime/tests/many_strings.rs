//! Past 32767 entries the string table is full: later strings are written
//! inline and every event still decodes with its own name.
mod common;

use common::*;
use fxt_format::decode::Record;
use fxt_runtime::__macro_support::{instant, Callsite, KeyCache};
use fxt_runtime::{start, Config};

#[test]
fn forty_thousand_distinct_names() {
    let _g = serial();
    let n = 40_000;
    // 40000 distinct call sites (leaked, so they are 'static like the ones
    // the macros declare), each with its own name.
    let sites: Vec<&'static Callsite> = (0..n)
        .map(|i| {
            let name: &'static str = Box::leak(format!("name-{i}").into_boxed_str());
            let keys: &'static [KeyCache] = Box::leak(Box::new([]));
            &*Box::leak(Box::new(Callsite::new("strings", name, &[], keys)))
        })
        .collect();
    let session = start(Config::new().buffer_size(32 << 20)).unwrap();
    for s in &sites {
        if let Some(site) = s.site() {
            instant(site, &[]);
        }
    }
    let (bytes, stats) = session.finish_to_vec().unwrap();
    assert_eq!(stats.records_dropped, 0);
    let records = decode(&bytes);
    let strings = records
        .iter()
        // Index 0 is reserved (fillers).
        .filter(|r| matches!(r, Record::String { index, .. } if *index != 0))
        .count();
    assert_eq!(strings, 32767, "the string table is full, not overfull");
    let names: Vec<String> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e.name.as_str().expect("resolved").to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(names.len(), n);
    for (i, name) in names.iter().enumerate() {
        assert_eq!(*name, format!("name-{i}"));
    }
    // A second session interns again from scratch (no stale indices).
    let session = start(Config::new().buffer_size(32 << 20)).unwrap();
    for s in sites.iter().take(10) {
        if let Some(site) = s.site() {
            instant(site, &[]);
        }
    }
    let (bytes, _) = session.finish_to_vec().unwrap();
    let records = decode(&bytes);
    let names: Vec<String> = records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e.name.as_str().expect("resolved").to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        names,
        (0..10).map(|i| format!("name-{i}")).collect::<Vec<_>>()
    );
}
