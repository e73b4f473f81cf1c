//! Stages 2 and 3 of `#[trace_duration]`: validation and expansion.

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::ReturnType;

use crate::args::{self, Arg};
use crate::attr::{split_inner_attrs, AsyncMode, MaybeItemFn, Options};
use crate::inline::callsite;

/// Stage 2: everything the parser accepted but that cannot be traced.
/// All problems are reported together, each on its own tokens.
pub(crate) fn validate(options: &Options, item: &MaybeItemFn) -> syn::Result<()> {
    let mut errors: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut errors {
        Some(all) => all.combine(e),
        None => errors = Some(e),
    };
    if let Some(constness) = &item.sig.constness {
        push(syn::Error::new(
            constness.span,
            "#[trace_duration] cannot trace a `const fn`: tracing reads the clock and writes records at run time; \
             remove `const` or trace the callers",
        ));
    }
    if let Some(semi) = &item.semi {
        push(syn::Error::new(
            semi.span,
            "#[trace_duration] needs a function body; put it on the function in the `impl` instead",
        ));
    }
    if let (Some((key, _)), None) = (&options.async_mode, &item.sig.asyncness) {
        push(syn::Error::new(
            key.span,
            "the `async` option applies to `async fn` only",
        ));
    }
    if let Some((_, list)) = &options.args {
        if let Err(e) = args::check_list(list, "#[trace_duration]") {
            push(e);
        }
    }
    for lit in [&options.name, &options.category].into_iter().flatten() {
        if lit.value().is_empty() {
            push(syn::Error::new(
                lit.span(),
                "the name and category cannot be empty",
            ));
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Stage 3: the instrumented function.
pub(crate) fn expand(options: &Options, item: &MaybeItemFn) -> TokenStream {
    let ms = match &options.krate {
        Some((_, path)) => quote!(#path::__macro_support),
        None => quote!(::fxt::__macro_support),
    };
    let name = match &options.name {
        Some(lit) => lit.to_token_stream(),
        None => {
            let text = item.sig.ident.unraw_string();
            quote!(#text)
        }
    };
    let category = match &options.category {
        Some(lit) => lit.to_token_stream(),
        None => quote!(#ms::core::env!("CARGO_CRATE_NAME")),
    };
    let no_args = Vec::new();
    let arg_list: &Vec<Arg> = options.args.as_ref().map_or(&no_args, |(_, l)| l);
    let keys: Vec<&syn::LitStr> = arg_list.iter().map(|a| &a.key).collect();
    let statics = callsite(&ms, category, name, &keys);
    let captures: Vec<TokenStream> = arg_list
        .iter()
        .map(|a| args::call_with_ref(&ms, "capture", &a.value))
        .collect();
    let site = Ident::new("__fxt_site", Span::mixed_site());

    let body = item.body.as_ref().expect("validated: has a body");
    let (inner_attrs, stmts) = split_inner_attrs(body.stream());

    let new_body = if item.sig.asyncness.is_some() {
        let mode = match options.async_mode.map_or(AsyncMode::Both, |(_, m)| m) {
            AsyncMode::Both => quote!(#ms::AsyncMode::Both),
            AsyncMode::Span => quote!(#ms::AsyncMode::Span),
            AsyncMode::Polls => quote!(#ms::AsyncMode::Polls),
        };
        expand_async(
            &ms,
            &statics,
            &site,
            &captures,
            &mode,
            &item.sig.output,
            inner_attrs,
            stmts,
        )
    } else {
        expand_sync(&ms, &statics, &site, &captures, inner_attrs, stmts)
    };
    let mut body_group = proc_macro2::Group::new(proc_macro2::Delimiter::Brace, new_body);
    body_group.set_span(body.span());

    let attrs = &item.attrs;
    let vis = &item.vis;
    let sig = &item.sig;
    quote! {
        #(#attrs)*
        #vis #sig #body_group
    }
}

/// A synchronous function keeps its body; a guard is declared first.
///
/// Input:
///
/// ```text
/// #[trace_duration(args(n))]
/// fn work(n: u32) -> u32 { n * 2 }
/// ```
///
/// Output:
///
/// ```text
/// fn work(n: u32) -> u32 {
///     let __fxt_guard = {
///         static __FXT_KEYS: [KeyCache; 1] = [KeyCache::NEW; 1];
///         static __FXT_CALLSITE: Callsite = Callsite::new(
///             env!("CARGO_CRATE_NAME"), "work", &["n"], &__FXT_KEYS);
///         match site(&__FXT_CALLSITE) {
///             Some(site) => DurationGuard::enabled(site, [capture(&(n))]),
///             None => DurationGuard::disabled(),
///         }
///     };
///     n * 2
/// }
/// ```
///
/// The guard is dropped last of the body's locals, on every way out
/// (`return`, `?`, a panic unwinding), and its `Drop` writes one duration
/// complete record. `__fxt_guard` is a mixed-site identifier: user code
/// cannot name it.
fn expand_sync(
    ms: &TokenStream,
    statics: &TokenStream,
    site: &Ident,
    captures: &[TokenStream],
    inner_attrs: TokenStream,
    stmts: TokenStream,
) -> TokenStream {
    let guard = Ident::new("__fxt_guard", Span::mixed_site());
    quote! {
        #inner_attrs
        let #guard = {
            #statics
            match #ms::site(&__FXT_CALLSITE) {
                #ms::core::option::Option::Some(#site) => #ms::DurationGuard::enabled(#site, [#(#captures),*]),
                #ms::core::option::Option::None => #ms::DurationGuard::disabled(),
            }
        };
        #stmts
    }
}

/// An `async fn` runs its body as an inner future inside a wrapper that
/// traces it.
///
/// Input:
///
/// ```text
/// #[trace_duration(args(id))]
/// async fn fetch(id: u64) -> Result<Page, Error> { body }
/// ```
///
/// Output:
///
/// ```text
/// async fn fetch(id: u64) -> Result<Page, Error> {
///     let __fxt_scope = {
///         static __FXT_KEYS ...; static __FXT_CALLSITE ...;
///         match site(&__FXT_CALLSITE) {
///             Some(site) => AsyncScope::enabled(site, AsyncMode::Both, [capture(&(id))]),
///             None => AsyncScope::disabled(),
///         }
///     };
///     let __fxt_future = core::pin::pin!(async move {
///         // never runs; gives `?` and `return` in the body their type
///         if false { let __fxt_ret: Result<Page, Error> = loop {}; return __fxt_ret; }
///         body
///     });
///     Instrumented::new(__fxt_future, __fxt_scope).await
/// }
/// ```
///
/// The arguments are captured when the outer future is first polled, before
/// the parameters move into the inner future. `Instrumented` writes an async
/// begin record (id from `next_async_id()`) on the first poll, one duration
/// complete record around every poll, and the async end record when the
/// body completes or the future is dropped unfinished. The signature is
/// untouched, so `Send`-ness, lifetimes and trait `async fn`s are as
/// written.
#[allow(clippy::too_many_arguments)]
fn expand_async(
    ms: &TokenStream,
    statics: &TokenStream,
    site: &Ident,
    captures: &[TokenStream],
    mode: &TokenStream,
    output: &ReturnType,
    inner_attrs: TokenStream,
    stmts: TokenStream,
) -> TokenStream {
    let scope = Ident::new("__fxt_scope", Span::mixed_site());
    let future = Ident::new("__fxt_future", Span::mixed_site());
    let ret = Ident::new("__fxt_ret", Span::mixed_site());
    let fake_return = match output {
        ReturnType::Type(_, ty) if !mentions_impl(ty.to_token_stream()) => quote! {
            #[allow(
                unreachable_code,
                clippy::diverging_sub_expression,
                clippy::empty_loop,
                clippy::let_unit_value,
                clippy::needless_return,
                clippy::unreachable
            )]
            if false {
                let #ret: #ty = loop {};
                return #ret;
            }
        },
        _ => TokenStream::new(),
    };
    quote! {
        #inner_attrs
        let #scope = {
            #statics
            match #ms::site(&__FXT_CALLSITE) {
                #ms::core::option::Option::Some(#site) => #ms::AsyncScope::enabled(#site, #mode, [#(#captures),*]),
                #ms::core::option::Option::None => #ms::AsyncScope::disabled(),
            }
        };
        let #future = #ms::core::pin::pin!(async move {
            #fake_return
            #stmts
        });
        #ms::Instrumented::new(#future, #scope).await
    }
}

/// Whether a type mentions `impl Trait`, which cannot annotate a `let`.
fn mentions_impl(tokens: TokenStream) -> bool {
    tokens.into_iter().any(|tt| match tt {
        TokenTree::Ident(i) => i == "impl",
        TokenTree::Group(g) => mentions_impl(g.stream()),
        _ => false,
    })
}

trait UnrawString {
    fn unraw_string(&self) -> String;
}

impl UnrawString for Ident {
    fn unraw_string(&self) -> String {
        let s = self.to_string();
        s.strip_prefix("r#")
            .map_or_else(|| s.clone(), str::to_owned)
    }
}

/// What the attribute emits when it cannot trace the function: the error
/// and the function exactly as written, so the user sees one error instead
/// of every use of the function failing too.
pub(crate) fn fallback(error: syn::Error, item: TokenStream) -> TokenStream {
    let error = error.to_compile_error();
    quote! {
        #error
        #item
    }
}
