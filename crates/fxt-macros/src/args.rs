//! Parsing of argument lists shared by every macro form.
//!
//! Two spellings exist:
//!
//! * the function-like macros take `"key" => value` pairs, keys being string
//!   literals;
//! * `#[trace_duration(args(...))]` takes `param` (record the parameter under
//!   its own name) or `key = expr`.
//!
//! Both produce a list of [`Arg`]s, checked by [`check_list`]: at most
//! [`MAX_ARGS`] (an FXT record holds 15 arguments) and no key twice.

use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, LitStr, Token};

/// The most arguments an FXT record can hold (4 bits in the event header).
pub(crate) const MAX_ARGS: usize = 15;

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

/// Checks the limits of an argument list: at most [`MAX_ARGS`] arguments
/// (the error underlines the 16th) and distinct keys (the error underlines
/// the second use).
pub(crate) fn check_list(args: &[Arg], what: &str) -> syn::Result<()> {
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    if let Some(extra) = args.get(MAX_ARGS) {
        push(syn::Error::new_spanned(
            &extra.tokens,
            format!(
                "too many arguments: an FXT record holds at most {MAX_ARGS}, this is argument {} of {what}",
                MAX_ARGS + 1
            ),
        ));
    }
    for (i, arg) in args.iter().enumerate() {
        let key = arg.key.value();
        if args[..i].iter().any(|earlier| earlier.key.value() == key) {
            push(syn::Error::new_spanned(
                &arg.key,
                format!("duplicate argument key `{key}`"),
            ));
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The spans of the first and last tokens of `tokens`.
pub(crate) fn first_last(tokens: &impl ToTokens) -> (Span, Span) {
    let mut iter = tokens.to_token_stream().into_iter();
    let first = iter.next().map_or_else(Span::call_site, |t| t.span());
    let last = iter.last().map_or(first, |t| t.span());
    (first, last)
}

/// `<ms>::function(&(expr))`, where the borrow, the parentheses and the
/// function name carry the spans of the user's expression: rustc then
/// underlines the expression when its type does not fit (an unsupported
/// argument type), instead of the whole macro call. (Spans of this
/// crate's own call site would be mapped to the macro invocation.)
pub(crate) fn call_with_ref(ms: &TokenStream, function: &str, expr: &Expr) -> TokenStream {
    let (first, last) = first_last(expr);
    let amp = quote::quote_spanned!(first=> &);
    let mut group =
        proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, expr.to_token_stream());
    group.set_span(last);
    let mut call_args =
        proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, quote!(#amp #group));
    call_args.set_span(last);
    // `ms` keeps its own spans: it may start with `$crate`, whose meaning
    // is tied to its span. The last segment only names an item.
    let function = proc_macro2::Ident::new(function, first);
    quote!(#ms::#function #call_args)
}
