//! `trace_log!` and `trace_blob!`.
#![deny(warnings, clippy::all)]

mod macros_support;

use fxt::{trace_blob, trace_log, Config};
use macros_support::{trace, trace_with, Record};

fn logs(records: &[Record]) -> Vec<&str> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Log(l) => Some(l.message.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn messages_are_formatted() {
    let records = trace(|| {
        let attempt = 3;
        trace_log!("net", "plain text");
        trace_log!("net", "attempt {attempt} of {}", 5);
        let long = "x".repeat(3000);
        trace_log!("net", "long: {long}");
    });
    let messages = logs(&records);
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0], "plain text");
    assert_eq!(messages[1], "attempt 3 of 5");
    assert_eq!(messages[2].len(), 3006);
}

struct Loud;
impl std::fmt::Display for Loud {
    fn fmt(&self, _: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        panic!("formatted while disabled");
    }
}

#[test]
fn disabled_logs_are_not_formatted() {
    let records = trace_with(
        Config::new().buffer_size(1 << 20).categories(&["other"]),
        || {
            trace_log!("net", "{}", Loud);
        },
    );
    assert!(logs(&records).is_empty());
}

#[test]
fn blobs() {
    let payload: Vec<u8> = (0..=255).collect();
    let records = trace(|| {
        trace_blob!("net", "packet", payload);
        trace_blob!("net", "header", &payload[..4]);
        trace_blob!("net", "array", [1u8, 2, 3]);
    });
    let blobs: Vec<(String, Vec<u8>)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Blob(b) => Some((b.name.to_string(), b.payload.clone())),
            Record::LargeBlobWithMetadata(b) => Some((b.name.to_string(), b.payload.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        blobs,
        [
            ("packet".to_string(), payload.clone()),
            ("header".to_string(), vec![0, 1, 2, 3]),
            ("array".to_string(), vec![1, 2, 3]),
        ]
    );
}
