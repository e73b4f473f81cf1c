//! Procedural macros of [fxt](https://docs.rs/fxt). Do not depend on this
//! crate directly: use the `fxt` crate, which re-exports
//! [`macro@trace_duration`] and wraps the function-like macros.
//!
//! Every macro works in three stages, each in its own module:
//!
//! 1. **`parse`**: tokens to syntax trees with `syn`, failing only on
//!    syntax it cannot read; the body of a traced function is kept as
//!    tokens, so a half-typed body still reaches rustc;
//! 2. **`validate`**: everything the grammar does not express (15
//!    arguments, duplicate keys and options, ids where the kind needs one,
//!    `const fn`, ...), every problem reported at once;
//! 3. **`expand`**: the code, which names the runtime only through
//!    `<fxt path>::__macro_support` (also for `core` items, which it
//!    re-exports).
//!
//! Errors are `syn::Error`s spanned on the offending tokens; the macro then
//! emits `compile_error!` plus a harmless fallback (the function unchanged,
//! or `()`), so the user sees the real errors and no follow-up ones.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod expand;
mod parse;
mod validate;

use proc_macro::TokenStream;
use proc_macro2::{Span, TokenTree};
use quote::quote;

use parse::attr::{AttrOptions, MaybeItemFn};
use parse::invocation::{Invocation, Kind};

/// Traces every call of a function as one duration. Documented where users
/// find it, as `fxt::trace_duration`.
///
/// Options: `name = ..`, `category = ..` (`&'static str` constants),
/// `args(param, key = expr, ...)`, `crate = path`, and for `async fn` (and
/// `#[async_trait]` methods), `async = "both" | "span" | "polls"`.
#[proc_macro_attribute]
pub fn trace_duration(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr = proc_macro2::TokenStream::from(attr);
    let item = proc_macro2::TokenStream::from(item);
    let result = syn::parse2::<AttrOptions>(attr).and_then(|options| {
        let func = syn::parse2::<MaybeItemFn>(item.clone()).map_err(|e| {
            // Keep the parser's detail only when the item is a function.
            let is_fn = item
                .clone()
                .into_iter()
                .any(|t| matches!(t, TokenTree::Ident(i) if i == "fn"));
            if is_fn {
                e
            } else {
                syn::Error::new(
                    Span::call_site(),
                    "#[trace_duration] applies to functions (free functions, methods, trait methods with a body)",
                )
            }
        })?;
        let shape = func.shape();
        let checked = validate::function(&options, &func, &shape)?;
        Ok(expand::function(&checked, &func, &shape))
    });
    match result {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            // The function exactly as written, so the user sees the errors
            // instead of every use of the function failing too.
            let error = error.to_compile_error();
            quote!(#error #item).into()
        }
    }
}

/// Engine of the `fxt::trace_*!` macros: `__trace!(kind $crate; tokens)`.
/// Not public API: call the `fxt` macros.
#[doc(hidden)]
#[proc_macro]
pub fn __trace(input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    // Kind and crate path first, for a fallback that type-checks.
    let mut iter = input.clone().into_iter();
    let kind = match iter.next() {
        Some(TokenTree::Ident(i)) => Kind::from_ident(&i).ok(),
        _ => None,
    };
    let krate: proc_macro2::TokenStream = iter
        .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
        .collect();
    let result = syn::parse2::<Invocation>(input).and_then(|invocation| {
        validate::invocation(&invocation)?;
        Ok(expand::invocation(&invocation))
    });
    match result {
        Ok(tokens) => tokens.into(),
        Err(error) => {
            let error = error.to_compile_error();
            let fallback = expand::invocation::fallback(kind, &krate);
            quote!({ #error #fallback }).into()
        }
    }
}
