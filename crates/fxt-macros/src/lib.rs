//! Procedural macros of [fxt](https://docs.rs/fxt). Do not depend on this
//! crate directly: use the `fxt` crate, which re-exports
//! [`macro@trace_duration`] and wraps the function-like macros.
//!
//! Every macro works in three stages, each in its own module:
//!
//! 1. **parse** (modules `attr`, `args`, `inline`): tokens to a syntax tree
//!    with `syn`; the body of a traced function is kept as tokens, so a
//!    half-typed body still reaches rustc;
//! 2. **validate**: limits the grammar does not express (15 arguments,
//!    duplicate keys, `const fn`, ...);
//! 3. **expand**: the code, which names the runtime only through
//!    `<fxt path>::__macro_support` (also for `core` items, which it
//!    re-exports).
//!
//! Errors are `syn::Error`s spanned on the offending tokens; the macro then
//! emits `compile_error!` plus a harmless fallback (the function unchanged,
//! or `()`), so the user sees the one real error.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod args;
mod attr;
mod expand;
mod inline;

use proc_macro::TokenStream;

/// Traces every call of a function as one duration. Documented where users
/// find it, as `fxt::trace_duration`.
///
/// Options: `name = "..."`, `category = "..."`, `args(param, key = expr, ...)`,
/// `crate = path`, and for `async fn`, `async = "both" | "span" | "polls"`.
#[proc_macro_attribute]
pub fn trace_duration(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    let item = proc_macro2::TokenStream::from(item);
    let result = syn::parse2::<attr::Options>(attr).and_then(|options| {
        let func = syn::parse2::<attr::MaybeItemFn>(item.clone()).map_err(|e| {
            // Keep the parser's detail only when the item is a function.
            let is_fn = item
                .clone()
                .into_iter()
                .any(|t| matches!(t, proc_macro2::TokenTree::Ident(i) if i == "fn"));
            if is_fn {
                e
            } else {
                syn::Error::new(
                    proc_macro2::Span::call_site(),
                    "#[trace_duration] applies to functions (free functions, methods, trait methods with a body)",
                )
            }
        })?;
        expand::validate(&options, &func)?;
        Ok(expand::expand(&options, &func))
    });
    match result {
        Ok(tokens) => tokens.into(),
        Err(e) => expand::fallback(e, item).into(),
    }
}

/// Engine of the `fxt::trace_*!` macros: `__trace!(kind $crate; tokens)`.
/// Not public API: call the `fxt` macros.
#[doc(hidden)]
#[proc_macro]
pub fn __trace(input: TokenStream) -> TokenStream {
    inline::trace(input.into()).into()
}
