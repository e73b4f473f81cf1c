//! Argument values of every type the table of docs/guide/instrument.md
//! lists, in every macro form that takes arguments, by value and by
//! reference.
#![deny(warnings)]

use std::borrow::Cow;
use std::num::{NonZeroI8, NonZeroIsize, NonZeroU32, NonZeroU64};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use fxt::{trace_duration, trace_duration_scope, trace_instant, Koid};

#[trace_duration(args(c, bytes, shared, d, maybe))]
fn attr(c: char, bytes: [u8; 2], shared: Arc<String>, d: Duration, maybe: Option<&str>) {}

fn main() {
    let session = fxt::start(fxt::Config::new()).unwrap();
    let boxed: Box<str> = "b".into();
    let text = String::from("t");
    let cow_str: Cow<str> = Cow::Borrowed("c");
    let cow_bytes: Cow<[u8]> = Cow::Owned(vec![1]);
    trace_instant!("ui", "types",
        "char" => 'c',
        "bytes" => b"FXT1",
        "array" => [0u8; 8],
        "arc" => Arc::<str>::from("a"),
        "rc" => Rc::<str>::from("r"),
        "ref_ref" => &&"rr",
        "ref_box" => &boxed,
        "cow_str" => cow_str,
        "cow_bytes" => &cow_bytes,
        "nz" => NonZeroU32::new(1).unwrap(),
        "nz_neg" => NonZeroI8::new(-1).unwrap(),
        "nz_size" => NonZeroIsize::new(2).unwrap(),
        "duration" => Duration::from_millis(3),
        "option" => Some(NonZeroU64::new(4).unwrap()),
        "koid" => Some(Koid(5))
    );
    {
        let _scope = trace_duration_scope!("ui", "scope", "c" => 'x', "t" => &text, "none" => None::<char>);
    }
    attr('a', *b"ok", Arc::new(text), Duration::ZERO, None);
    session.finish_to_vec().unwrap();
}
