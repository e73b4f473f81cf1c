//! Argument value types (docs/guide/instrument.md's table): each decodes
//! to the documented FXT argument, through records written at once
//! (`trace_instant!`) and through records written when a scope ends
//! (`trace_duration_scope!`,
//! `#[trace_duration]`), whose values are captured at the start.
#![deny(warnings, clippy::all)]

mod macros_support;

use std::borrow::Cow;
use std::num::{NonZeroI32, NonZeroU16, NonZeroU64, NonZeroUsize};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use fxt::{trace_duration, trace_duration_scope, trace_instant};
use macros_support::{args, one, s, trace, ArgValue};

fn blob(bytes: &[u8]) -> ArgValue {
    ArgValue::Blob(bytes.to_vec())
}

/// The values every test records, and what each must decode to.
fn expected() -> Vec<(String, ArgValue)> {
    [
        ("char", s("x")),
        ("char_wide", s("🦀")),
        ("byte_str", blob(b"FXT1")),
        ("byte_array", blob(&[1, 2, 3])),
        ("arc_str", s("arc")),
        ("rc_str", s("rc")),
        ("arc_string", s("arc string")),
        ("ref_ref_str", s("refref")),
        ("ref_box_str", s("boxed")),
        ("cow_bytes", blob(&[9, 8])),
        ("non_zero_u16", ArgValue::U32(7)),
        ("non_zero_i32", ArgValue::I32(-7)),
        ("non_zero_u64", ArgValue::U64(1 << 40)),
        ("duration", ArgValue::U64(1_500_000)),
        ("some", ArgValue::U32(5)),
        ("none", ArgValue::Null),
        ("some_char", s("é")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[test]
fn instant_arguments() {
    let arc_str: Arc<str> = Arc::from("arc");
    let rc_str: Rc<str> = Rc::from("rc");
    let arc_string = Arc::new(String::from("arc string"));
    let refref: &&str = &"refref";
    let boxed: Box<str> = "boxed".into();
    let cow: Cow<[u8]> = Cow::Owned(vec![9, 8]);
    let records = trace(|| {
        trace_instant!("types", "all",
            "char" => 'x',
            "char_wide" => '🦀',
            "byte_str" => b"FXT1",
            "byte_array" => [1u8, 2, 3],
            "arc_str" => arc_str,
            "rc_str" => rc_str,
            "arc_string" => arc_string,
            "ref_ref_str" => refref,
            "ref_box_str" => &boxed,
            "cow_bytes" => cow,
            "non_zero_u16" => NonZeroU16::new(7).unwrap(),
            "non_zero_i32" => NonZeroI32::new(-7).unwrap(),
            "non_zero_u64" => NonZeroU64::new(1 << 40).unwrap(),
            "duration" => Duration::from_micros(1500),
            "some" => Some(5u32)
        );
        trace_instant!("types", "optional", "none" => None::<&str>, "some_char" => Some('é'));
    });
    let mut all = args(one(&records, "all"));
    all.extend(args(one(&records, "optional")));
    assert_eq!(all, expected());
}

#[test]
fn scope_arguments_are_captured() {
    let records = trace(|| {
        let mut text = String::from("before");
        let c = 'x';
        {
            let _scope = trace_duration_scope!("types", "scope",
                "char" => c,
                "text" => text,
                "byte_str" => b"FXT1",
                "arc_str" => Arc::<str>::from("arc"),
                "duration" => Duration::from_secs(2),
                "none" => None::<u8>
            );
            // The record is written at the end of the scope, with the
            // values of its start.
            text.push_str(" and after");
        }
        assert_eq!(text, "before and after");
    });
    assert_eq!(
        args(one(&records, "scope")),
        [
            ("char".to_string(), s("x")),
            ("text".to_string(), s("before")),
            ("byte_str".to_string(), blob(b"FXT1")),
            ("arc_str".to_string(), s("arc")),
            ("duration".to_string(), ArgValue::U64(2_000_000_000)),
            ("none".to_string(), ArgValue::Null),
        ]
    );
}

#[trace_duration(args(key, tag, magic, shared, timeout, count, label))]
fn typed_params(
    key: char,
    tag: &&str,
    magic: [u8; 4],
    shared: Rc<str>,
    timeout: Duration,
    count: NonZeroUsize,
    label: Option<Cow<'_, str>>,
) -> usize {
    key.len_utf8()
        + tag.len()
        + magic.len()
        + shared.len()
        + timeout.as_secs() as usize
        + count.get()
        + label.map_or(0, |l| l.len())
}

#[test]
fn function_parameters() {
    let records = trace(|| {
        let n = typed_params(
            'k',
            &"tag",
            *b"FXT1",
            Rc::from("rc"),
            Duration::from_nanos(42),
            NonZeroUsize::new(3).unwrap(),
            Some(Cow::Borrowed("label")),
        );
        assert_eq!(n, 1 + 3 + 4 + 2 + 3 + 5);
    });
    assert_eq!(
        args(one(&records, "typed_params")),
        [
            ("key".to_string(), s("k")),
            ("tag".to_string(), s("tag")),
            ("magic".to_string(), blob(b"FXT1")),
            ("shared".to_string(), s("rc")),
            ("timeout".to_string(), ArgValue::U64(42)),
            ("count".to_string(), ArgValue::U64(3)),
            ("label".to_string(), s("label")),
        ]
    );
}
