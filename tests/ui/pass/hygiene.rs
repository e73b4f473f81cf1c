//! Expansions work without the prelude and next to user items that use the
//! names the expansion uses internally.
#![deny(warnings)]
#![no_implicit_prelude]

extern crate fxt;
extern crate std;

mod core {}
mod __macro_support {}

#[allow(non_upper_case_globals, dead_code)]
static __FXT_CALLSITE: u8 = 0;

#[::fxt::trace_duration(args(__fxt_site, __fxt_guard))]
fn uses_reserved_names(__fxt_site: u32, __fxt_guard: u32) -> u32 {
    let __fxt_future = __fxt_site + __fxt_guard;
    ::fxt::trace_instant!("ui", "x", "__fxt_site" => __fxt_site);
    ::fxt::trace_counter!("ui", "c", id = __fxt_guard as u64, "v" => __fxt_future);
    __fxt_future
}

#[::fxt::trace_duration]
async fn in_async(__fxt_scope: u8) -> ::std::option::Option<u8> {
    let __fxt_ret = __fxt_scope;
    ::std::option::Option::Some(__fxt_ret)
}

fn main() {
    let _ = uses_reserved_names(1, 2);
    ::std::mem::drop(in_async(1));
    let x = 3u8;
    let _s = ::fxt::trace_duration_scope!("ui", "s", "x" => x);
    ::fxt::trace_log!("ui", "{}", x);
}
