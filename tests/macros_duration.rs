//! `#[trace_duration]` on synchronous functions, `trace_duration_scope!`,
//! `trace_duration_begin!` / `trace_duration_end!`.
#![deny(warnings, clippy::all)]

mod macros_support;

use fxt::{trace_duration, trace_duration_begin, trace_duration_end, trace_duration_scope};
use macros_support::{args, end, named, one, s, trace, ArgValue, EventKind};

#[trace_duration]
fn plain() -> u32 {
    7
}

#[trace_duration(name = "custom name", category = "custom", args(count, label, flag, ratio, total = count as u64 * 2))]
fn with_options(count: u32, label: &str, flag: bool, ratio: f64) -> usize {
    label.len() + count as usize
}

#[test]
fn default_name_and_category() {
    let records = trace(|| assert_eq!(plain(), 7));
    let e = one(&records, "plain");
    assert_eq!(e.category, env!("CARGO_CRATE_NAME"));
    assert!(e.args.is_empty(), "no argument unless asked: {:?}", e.args);
    assert!(e.timestamp <= end(e), "begin <= end");
}

#[test]
fn options_and_typed_arguments() {
    let records = trace(|| assert_eq!(with_options(3, "abc", true, 0.5), 6));
    let e = one(&records, "custom name");
    assert_eq!(e.category, "custom");
    assert_eq!(
        args(e),
        [
            ("count".to_string(), ArgValue::U32(3)),
            ("label".to_string(), s("abc")),
            ("flag".to_string(), ArgValue::Bool(true)),
            ("ratio".to_string(), ArgValue::F64(0.5)),
            ("total".to_string(), ArgValue::U64(6)),
        ]
    );
}

#[trace_duration(args(depth))]
fn recurse(depth: u32) -> u32 {
    if depth == 0 {
        0
    } else {
        1 + recurse(depth - 1)
    }
}

#[test]
fn nested_calls_nest() {
    let records = trace(|| assert_eq!(recurse(2), 2));
    let calls = named(&records, "recurse");
    assert_eq!(calls.len(), 3);
    // Inner calls finish first: records are written when a call returns.
    let depths: Vec<_> = calls.iter().map(|e| e.args[0].value.clone()).collect();
    assert_eq!(
        depths,
        [ArgValue::U32(0), ArgValue::U32(1), ArgValue::U32(2)]
    );
    for pair in calls.windows(2) {
        let (inner, outer) = (pair[0], pair[1]);
        assert!(outer.timestamp <= inner.timestamp, "outer begins first");
        assert!(end(inner) <= end(outer), "inner ends first");
        assert_eq!(inner.thread, outer.thread);
    }
}

#[derive(Debug, PartialEq)]
struct Invalid;

#[trace_duration(args(input))]
fn parse(input: &str) -> Result<u32, Invalid> {
    if input.is_empty() {
        return Err(Invalid);
    }
    let value: u32 = input.parse().map_err(|_| Invalid)?;
    Ok(value)
}

#[test]
fn every_way_out_is_recorded() {
    let records = trace(|| {
        assert_eq!(parse(""), Err(Invalid));
        assert_eq!(parse("x"), Err(Invalid));
        assert_eq!(parse("12"), Ok(12));
    });
    let calls = named(&records, "parse");
    let inputs: Vec<_> = calls.iter().map(|e| e.args[0].value.clone()).collect();
    assert_eq!(inputs, [s(""), s("x"), s("12")]);
}

#[trace_duration(args(reason))]
fn explode(reason: String) {
    panic!("{reason}");
}

#[test]
fn a_panicking_function_is_recorded() {
    let records = trace(|| {
        let result = std::panic::catch_unwind(|| explode("boom".to_string()));
        assert!(result.is_err());
    });
    let e = one(&records, "explode");
    assert!(matches!(e.kind, EventKind::DurationComplete { .. }));
    assert_eq!(args(e), [("reason".to_string(), s("boom"))]);
    assert!(e.timestamp <= end(e));
}

struct Account {
    balance: i64,
}

impl Account {
    #[trace_duration(args(amount))]
    fn deposit(&mut self, amount: i64) {
        self.balance += amount;
    }

    #[trace_duration(args(balance = self.balance))]
    fn balance(&self) -> i64 {
        self.balance
    }

    #[trace_duration]
    fn close(self) -> i64 {
        self.balance
    }
}

trait Describe {
    fn describe(&self) -> String;
}

impl Describe for Account {
    #[trace_duration(name = "Account::describe")]
    fn describe(&self) -> String {
        format!("{}", self.balance)
    }
}

#[trace_duration]
fn largest<T: PartialOrd + Copy>(items: &[T]) -> T {
    let mut best = items[0];
    for &item in items {
        if item > best {
            best = item;
        }
    }
    best
}

#[test]
fn methods_trait_methods_and_generics() {
    let records = trace(|| {
        let mut account = Account { balance: 0 };
        account.deposit(-5);
        assert_eq!(account.balance(), -5);
        assert_eq!(account.describe(), "-5");
        assert_eq!(account.close(), -5);
        assert_eq!(largest(&[1, 9, 3]), 9);
        assert_eq!(largest(&[1.5, 0.5]), 1.5);
    });
    assert_eq!(
        args(one(&records, "deposit")),
        [("amount".to_string(), ArgValue::I64(-5))]
    );
    assert_eq!(
        args(one(&records, "balance")),
        [("balance".to_string(), ArgValue::I64(-5))]
    );
    one(&records, "Account::describe");
    one(&records, "close");
    assert_eq!(named(&records, "largest").len(), 2);
}

#[test]
fn scope_guard_records_at_drop() {
    let records = trace(|| {
        let name = String::from("config.toml");
        let outer = trace_duration_scope!("io", "load", "file" => name.as_str(), "attempt" => 1u8);
        drop(name); // the string argument was copied when the scope began
        {
            let _inner = trace_duration_scope!("io", "read");
        }
        drop(outer);
    });
    let load = one(&records, "load");
    let read = one(&records, "read");
    assert_eq!(load.category, "io");
    assert_eq!(
        args(load),
        [
            ("file".to_string(), s("config.toml")),
            ("attempt".to_string(), ArgValue::U32(1))
        ]
    );
    assert!(load.timestamp <= read.timestamp && end(read) <= end(load));
}

#[test]
fn begin_and_end_records() {
    let records = trace(|| {
        trace_duration_begin!("io", "flush", "bytes" => 4096u32);
        trace_duration_end!("io", "flush", "ok" => true);
    });
    let flush = named(&records, "flush");
    assert_eq!(flush.len(), 2);
    assert_eq!(flush[0].kind, EventKind::DurationBegin);
    assert_eq!(args(flush[0]), [("bytes".to_string(), ArgValue::U32(4096))]);
    assert_eq!(flush[1].kind, EventKind::DurationEnd);
    assert_eq!(args(flush[1]), [("ok".to_string(), ArgValue::Bool(true))]);
    assert!(flush[0].timestamp <= flush[1].timestamp);
}

#[test]
fn nothing_is_recorded_or_evaluated_outside_a_session() {
    let _turn = macros_support::lock();
    let mut evaluated = false;
    let mut touch = || {
        evaluated = true;
        1u32
    };
    let _scope = trace_duration_scope!("io", "idle", "x" => touch());
    assert_eq!(plain(), 7);
    assert!(!evaluated, "arguments are evaluated only when enabled");
}
