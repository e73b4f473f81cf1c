//! The function-like macros' code.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};

use super::{call_with_ref, callsite, first_last};
use crate::parse::invocation::{Body, IdRule, Invocation, Kind};

/// The runtime function that emits this kind of record (events only).
fn emit_fn(kind: Kind) -> &'static str {
    match kind {
        Kind::Instant => "instant",
        Kind::Counter => "counter",
        Kind::DurationBegin => "duration_begin",
        Kind::DurationEnd => "duration_end",
        Kind::AsyncBegin => "async_begin",
        Kind::AsyncInstant => "async_instant",
        Kind::AsyncEnd => "async_end",
        Kind::FlowBegin => "flow_begin",
        Kind::FlowStep => "flow_step",
        Kind::FlowEnd => "flow_end",
        Kind::DurationScope | Kind::Log | Kind::Blob => unreachable!("not an event kind"),
    }
}

/// The code of a validated invocation.
///
/// Input:
///
/// ```text
/// trace_instant!("net", "packet", "len" => len)
/// ```
///
/// Output (`ms` = `$crate::__macro_support`):
///
/// ```text
/// {
///     static __FXT_KEYS: [ms::KeyCache; 1] = [ms::KeyCache::NEW; 1];
///     static __FXT_CALLSITE: ms::Callsite =
///         ms::Callsite::new("net", "packet", &["len"], &__FXT_KEYS);
///     if let ms::core::option::Option::Some(site) = ms::site(&__FXT_CALLSITE, &__FXT_KEYS) {
///         ms::instant(site, &[ms::arg(&(len), &mut ms::ArgScratch::new())]);
///     }
/// }
/// ```
///
/// `site()` is one relaxed load and a branch when the call site is off,
/// and a constant `None` with the `disabled` feature. `trace_duration_scope!`
/// is a `match` giving a `DurationGuard` (enabled or not) instead.
pub(crate) fn invocation(invocation: &Invocation) -> TokenStream {
    let krate = &invocation.krate;
    let ms = quote!(#krate::__macro_support);
    let site = Ident::new("__fxt_site", Span::mixed_site());
    let category = &invocation.category;
    let (name, keys): (TokenStream, Vec<&syn::LitStr>) = match &invocation.body {
        Body::Event { name, args, .. } => (
            name.to_token_stream(),
            args.iter().map(|a| &a.key).collect(),
        ),
        Body::Blob { name, .. } => (name.to_token_stream(), Vec::new()),
        Body::Log { .. } => (quote!("log"), Vec::new()),
    };
    let statics = callsite(&ms, category.to_token_stream(), name, &keys);
    let enabled =
        quote!(#ms::core::option::Option::Some(#site) = #ms::site(&__FXT_CALLSITE, &__FXT_KEYS));
    match &invocation.body {
        Body::Log { format } => quote! {{
            #statics
            if let #enabled {
                #ms::log_fmt(#site, #ms::core::format_args!(#format));
            }
        }},
        Body::Blob { data, .. } => {
            let bytes = call_with_ref(&ms, "blob_bytes", data, TokenStream::new());
            quote! {{
                #statics
                if let #enabled {
                    #ms::blob(#site, #bytes);
                }
            }}
        }
        Body::Event { args, .. } if invocation.kind == Kind::DurationScope => {
            let captures = args
                .iter()
                .map(|a| call_with_ref(&ms, "capture", &a.value, TokenStream::new()));
            quote! {{
                #statics
                match #ms::site(&__FXT_CALLSITE, &__FXT_KEYS) {
                    #ms::core::option::Option::Some(#site) => #ms::DurationGuard::enabled(#site, [#(#captures),*]),
                    #ms::core::option::Option::None => #ms::DurationGuard::disabled(),
                }
            }}
        }
        Body::Event { args, id, .. } => {
            // Each argument gets its own scratch, a temporary that lives
            // until the end of the statement that writes the record.
            let (value_fn, extra) = if invocation.kind == Kind::Counter {
                ("counter_arg", TokenStream::new())
            } else {
                ("arg", quote!(, &mut #ms::ArgScratch::new()))
            };
            let values = args
                .iter()
                .map(|a| call_with_ref(&ms, value_fn, &a.value, extra.clone()));
            let emit = Ident::new(emit_fn(invocation.kind), Span::call_site());
            let id_ident = Ident::new("__fxt_id", Span::mixed_site());
            let (id_let, id_arg) = match (id, invocation.kind.id_rule()) {
                (Some((_, expr)), _) => {
                    let (first, _) = first_last(expr);
                    let ty = quote_spanned!(first=> u64);
                    (quote!(let #id_ident: #ty = #expr;), quote!(#id_ident,))
                }
                (None, IdRule::Optional) => (quote!(), quote!(0,)),
                (None, _) => (quote!(), quote!()),
            };
            quote! {{
                #statics
                if let #enabled {
                    #id_let
                    #ms::#emit(#site, #id_arg &[#(#values),*]);
                }
            }}
        }
    }
}

/// What stands in for the expansion after an error: `()`, or a disabled
/// guard for `trace_duration_scope!`, so the user's code around it still
/// type-checks and only the real errors are reported.
pub(crate) fn fallback(kind: Option<Kind>, krate: &TokenStream) -> TokenStream {
    match kind {
        Some(Kind::DurationScope) => {
            quote!(#krate::__macro_support::DurationGuard::<0>::disabled())
        }
        _ => quote!(()),
    }
}
