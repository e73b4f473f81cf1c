//! Argument lists, in the two spellings the macros take:
//!
//! * the function-like macros take `"key" => value` pairs, keys being string
//!   literals;
//! * `#[trace_duration(args(...))]` takes `param` (record the parameter under
//!   its own name) or `key = expr`.
//!
//! Both produce [`Arg`]s; their limits (how many, distinct keys) are checked
//! in `validate`.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, LitStr, Token};

/// One argument: a key and the expression giving its value.
pub(crate) struct Arg {
    /// The key as written, for the static list of argument names.
    pub key: LitStr,
    /// The value expression, evaluated only when the call site is enabled.
    pub value: Expr,
    /// All tokens of the argument as written (`"key" => value`,
    /// `key = value` or `param`), so an error can underline all of them.
    pub tokens: TokenStream,
}

impl Arg {
    /// `#[trace_duration(args(...))]` element: `param` or `key = expr`.
    pub(crate) fn parse_attr_style(input: ParseStream<'_>) -> syn::Result<Arg> {
        let ident = Ident::parse_any(input)?;
        let key_text = ident.unraw().to_string();
        if key_text == "self" || key_text == "Self" || key_text == "crate" || key_text == "super" {
            return Err(syn::Error::new(
                ident.span(),
                format!("`{key_text}` cannot be recorded as an argument; give it a key: `args(key = {key_text}...)`"),
            ));
        }
        let key = LitStr::new(&key_text, ident.span());
        if input.peek(Token![=]) {
            let eq: Token![=] = input.parse()?;
            let value: Expr = input.parse()?;
            let tokens = quote!(#ident #eq #value);
            Ok(Arg { key, value, tokens })
        } else {
            let value: Expr = syn::parse2(ident.to_token_stream())?;
            let tokens = ident.to_token_stream();
            Ok(Arg { key, value, tokens })
        }
    }
}

impl Parse for Arg {
    /// Function-like macro element: `"key" => value`.
    fn parse(input: ParseStream<'_>) -> syn::Result<Arg> {
        if !input.peek(LitStr) {
            return Err(
                input.error("expected an argument `\"key\" => value` (keys are string literals)")
            );
        }
        let key: LitStr = input.parse()?;
        let arrow: Token![=>] = input.parse()?;
        let value: Expr = input.parse()?;
        let tokens = quote!(#key #arrow #value);
        Ok(Arg { key, value, tokens })
    }
}
