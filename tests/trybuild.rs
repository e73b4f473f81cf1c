//! UI tests of the macros: `tests/ui/pass` must build and run, every file in
//! `tests/ui/fail` must fail with exactly the checked-in `.stderr`.
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test
//! --test trybuild`, then read every changed `.stderr`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/fail/*.rs");
}
