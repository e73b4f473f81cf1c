//! Stage 3: the code, from validated input.
//!
//! Generated code names the runtime only through `<fxt path>::__macro_support`
//! (written `ms` below), `core` items included (`ms::core::...`), so neither
//! a renamed `fxt` nor a user's own `core` module breaks it. Generated
//! locals are `Span::mixed_site()` identifiers that user code cannot name;
//! the per-call-site statics live in a block of their own.

mod function;
pub(crate) mod invocation;

pub(crate) use function::function;
pub(crate) use invocation::invocation;

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::Expr;

/// The per-call-site statics: `__FXT_KEYS` (one interned-key cache per
/// argument) and `__FXT_CALLSITE`.
fn callsite(
    ms: &TokenStream,
    category: TokenStream,
    name: TokenStream,
    keys: &[&syn::LitStr],
) -> TokenStream {
    let n = keys.len();
    quote! {
        static __FXT_KEYS: [#ms::KeyCache; #n] = [#ms::KeyCache::NEW; #n];
        static __FXT_CALLSITE: #ms::Callsite =
            #ms::Callsite::new(#category, #name, &[#(#keys),*], &__FXT_KEYS);
    }
}

/// The spans of the first and last tokens of `tokens`.
fn first_last(tokens: &impl ToTokens) -> (Span, Span) {
    let mut iter = tokens.to_token_stream().into_iter();
    let first = iter.next().map_or_else(Span::call_site, |t| t.span());
    let last = iter.last().map_or(first, |t| t.span());
    (first, last)
}

/// `<ms>::function(&(expr) <extra>)`, where the borrow, the parentheses and the
/// function name carry the spans of the user's expression: rustc then
/// underlines the expression when its type does not fit (an unsupported
/// argument type), instead of the whole macro call. (Spans of this
/// crate's own call site would be mapped to the macro invocation.)
fn call_with_ref(ms: &TokenStream, function: &str, expr: &Expr, extra: TokenStream) -> TokenStream {
    let (first, last) = first_last(expr);
    let amp = quote_spanned!(first=> &);
    let mut group = Group::new(Delimiter::Parenthesis, expr.to_token_stream());
    group.set_span(last);
    let mut call_args = Group::new(Delimiter::Parenthesis, quote!(#amp #group #extra));
    call_args.set_span(last);
    // `ms` keeps its own spans: it may start with `$crate`, whose meaning
    // is tied to its span. The last segment only names an item.
    let function = Ident::new(function, first);
    quote!(#ms::#function #call_args)
}
