//! `trace_instant!`: names, categories, every argument type, and lazy
//! evaluation of arguments.
#![deny(warnings, clippy::all)]

mod macros_support;

use std::borrow::Cow;

use fxt::{trace_instant, Config, Koid};
use macros_support::{args, one, s, trace, trace_with, ArgValue, EventKind};

const CATEGORY: &str = "consts";

#[test]
fn bare_instant() {
    let records = trace(|| trace_instant!("app", "started"));
    let e = one(&records, "started");
    assert_eq!(e.kind, EventKind::Instant);
    assert_eq!(e.category, "app");
    assert!(e.args.is_empty());
}

#[test]
fn constants_as_category() {
    let records = trace(|| trace_instant!(CATEGORY, "from const"));
    assert_eq!(one(&records, "from const").category, "consts");
}

#[test]
fn argument_types_follow_rust_types() {
    let owned = String::from("owned");
    let value = 9u8;
    let pointer: *const u8 = &value;
    let records = trace(|| {
        trace_instant!("types", "ints",
            "i8" => -8i8, "i16" => -16i16, "i32" => -32i32, "i64" => -64i64, "isize" => -1isize,
            "u8" => 8u8, "u16" => 16u16, "u32" => 32u32, "u64" => 64u64, "usize" => 1usize,
        );
        trace_instant!("types", "others",
            "f32" => 0.25f32, "f64" => 1.5f64, "bool" => false, "str" => "literal",
            "string" => owned, "borrowed" => &owned, "cow" => Cow::Borrowed("cow"),
            "pointer" => pointer, "koid" => Koid(1234), "unit" => (),
            "some" => Some(5u64), "none" => None::<u64>,
        );
    });
    assert_eq!(
        args(one(&records, "ints")),
        [
            ("i8".to_string(), ArgValue::I32(-8)),
            ("i16".to_string(), ArgValue::I32(-16)),
            ("i32".to_string(), ArgValue::I32(-32)),
            ("i64".to_string(), ArgValue::I64(-64)),
            ("isize".to_string(), ArgValue::I64(-1)),
            ("u8".to_string(), ArgValue::U32(8)),
            ("u16".to_string(), ArgValue::U32(16)),
            ("u32".to_string(), ArgValue::U32(32)),
            ("u64".to_string(), ArgValue::U64(64)),
            ("usize".to_string(), ArgValue::U64(1)),
        ]
    );
    assert_eq!(
        args(one(&records, "others")),
        [
            ("f32".to_string(), ArgValue::F64(0.25)),
            ("f64".to_string(), ArgValue::F64(1.5)),
            ("bool".to_string(), ArgValue::Bool(false)),
            ("str".to_string(), s("literal")),
            ("string".to_string(), s("owned")),
            ("borrowed".to_string(), s("owned")),
            ("cow".to_string(), s("cow")),
            (
                "pointer".to_string(),
                ArgValue::Pointer(pointer as usize as u64)
            ),
            ("koid".to_string(), ArgValue::Koid(1234)),
            ("unit".to_string(), ArgValue::Null),
            ("some".to_string(), ArgValue::U64(5)),
            ("none".to_string(), ArgValue::Null),
        ]
    );
}

#[test]
fn fifteen_arguments_fit() {
    let records = trace(|| {
        trace_instant!("limits", "fifteen",
            "a1" => 1, "a2" => 2, "a3" => 3, "a4" => 4, "a5" => 5,
            "a6" => 6, "a7" => 7, "a8" => 8, "a9" => 9, "a10" => 10,
            "a11" => 11, "a12" => 12, "a13" => 13, "a14" => 14, "a15" => 15,
        );
    });
    let e = one(&records, "fifteen");
    assert_eq!(e.args.len(), 15);
    assert_eq!(e.args[14].value, ArgValue::I32(15));
}

#[test]
fn each_call_site_records_each_time() {
    let records = trace(|| {
        for i in 0..100u32 {
            trace_instant!("loop", "tick", "i" => i);
        }
    });
    let ticks = macros_support::named(&records, "tick");
    assert_eq!(ticks.len(), 100);
    assert_eq!(ticks[99].args[0].value, ArgValue::U32(99));
    assert!(ticks.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
}

#[test]
fn disabled_categories_record_and_evaluate_nothing() {
    let mut evaluations = 0;
    let mut count = || {
        evaluations += 1;
        evaluations
    };
    let records = trace_with(
        Config::new().buffer_size(1 << 20).categories(&["wanted"]),
        || {
            trace_instant!("wanted", "kept", "n" => count());
            trace_instant!("unwanted", "skipped", "n" => count());
        },
    );
    assert_eq!(
        evaluations, 1,
        "only the enabled call site evaluated its argument"
    );
    one(&records, "kept");
    assert!(macros_support::named(&records, "skipped").is_empty());
}
