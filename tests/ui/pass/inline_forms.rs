//! Every function-like macro and every argument type.
#![deny(warnings)]

use fxt::{
    trace_async_begin, trace_async_end, trace_async_instant, trace_blob, trace_counter,
    trace_duration_begin, trace_duration_end, trace_duration_scope, trace_flow_begin,
    trace_flow_end, trace_flow_step, trace_instant, trace_log, Koid,
};

const CATEGORY: &str = "ui";

fn main() {
    let value = 5u8;
    let text = String::from("owned");
    let bytes = [1u8, 2, 3];
    let pointer: *const u8 = &value;
    let mut target = 0u32;
    let mutable: *mut u32 = &mut target;
    trace_instant!("ui", "bare");
    trace_instant!(CATEGORY, "const category", "trailing" => 1,);
    trace_instant!("ui", "signed", "i8" => -1i8, "i16" => -2i16, "i32" => -3i32, "i64" => -4i64, "isize" => -5isize);
    trace_instant!("ui", "unsigned", "u8" => value, "u16" => 2u16, "u32" => 3u32, "u64" => 4u64, "usize" => 5usize);
    trace_instant!("ui", "others", "f32" => 1.5f32, "f64" => 2.5, "bool" => true, "str" => "lit", "string" => text, "ref string" => &text);
    trace_instant!("ui", "more", "ptr" => pointer, "mut ptr" => mutable, "koid" => Koid(42), "null" => ());
    trace_instant!("ui", "bytes", "slice" => &b"raw"[..], "vec" => vec![1u8, 2, 3]);
    trace_instant!("ui", "expressions", "sum" => value as u32 + 1, "len" => text.len(), "call" => text.to_uppercase());

    trace_counter!("ui", "counter", "a" => 1);
    trace_counter!("ui", "counter", id = 7, "a" => 1u64, "b" => 2.5f64, "c" => -3i32);

    {
        let _scope = trace_duration_scope!("ui", "scope");
        let _with_args =
            trace_duration_scope!("ui", "scope args", "text" => text.as_str(), "n" => 1);
    }
    trace_duration_begin!("ui", "begin", "x" => 1);
    trace_duration_end!("ui", "begin", "y" => 2);

    let id = fxt::next_async_id();
    trace_async_begin!("ui", "async", id = id, "k" => "v");
    trace_async_instant!("ui", "async", id = id);
    trace_async_end!("ui", "async", id = id,);

    trace_flow_begin!("ui", "flow", id = 1);
    trace_flow_step!("ui", "flow", id = 1, "step" => 2);
    trace_flow_end!("ui", "flow", id = 1);

    trace_log!("ui", "plain message");
    trace_log!("ui", "formatted {} {text}", value);
    trace_blob!("ui", "blob", bytes);
    trace_blob!("ui", "vec", vec![1u8, 2]);
    trace_blob!("ui", "slice", &bytes[1..],);
}
