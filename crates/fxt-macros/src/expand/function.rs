//! `#[trace_duration]`: the instrumented function.

use proc_macro2::{Delimiter, Group, Ident, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens};
use syn::ReturnType;

use super::{call_with_ref, callsite};
use crate::parse::attr::{split_inner_attrs, AsyncTraitBody, MaybeItemFn, Shape};
use crate::validate::{AsyncMode, FnOptions};

/// What every shape shares: the call site statics and the captured
/// arguments.
struct Site {
    /// `<fxt path>::__macro_support`.
    ms: TokenStream,
    /// The statics `__FXT_KEYS` and `__FXT_CALLSITE`.
    statics: TokenStream,
    /// `capture(&(expr))` for each argument.
    captures: Vec<TokenStream>,
    /// The mixed-site name of the enabled `Site`.
    site: Ident,
}

/// The instrumented function.
pub(crate) fn function(options: &FnOptions<'_>, item: &MaybeItemFn, shape: &Shape) -> TokenStream {
    let ms = match options.krate {
        Some(path) => quote!(#path::__macro_support),
        None => quote!(::fxt::__macro_support),
    };
    let name = match options.name {
        Some(expr) => expr.to_token_stream(),
        None => {
            let text = unraw(&item.sig.ident);
            quote!(#text)
        }
    };
    let category = match options.category {
        Some(expr) => expr.to_token_stream(),
        None => quote!(#ms::core::env!("CARGO_CRATE_NAME")),
    };
    let keys: Vec<&syn::LitStr> = options.args.iter().map(|a| &a.key).collect();
    let site = Site {
        statics: callsite(&ms, category, name, &keys),
        captures: options
            .args
            .iter()
            .map(|a| call_with_ref(&ms, "capture", &a.value, TokenStream::new()))
            .collect(),
        site: Ident::new("__fxt_site", Span::mixed_site()),
        ms,
    };

    let body = item.body.as_ref().expect("validated: has a body");
    let (inner_attrs, stmts) = split_inner_attrs(body.stream());
    let mode = async_mode(&site.ms, options.async_mode);
    let new_body = match shape {
        Shape::Sync => sync(&site, inner_attrs, stmts),
        Shape::Async => {
            let wrapped = instrument_future(&site, &mode, fake_return(&item.sig.output), stmts);
            quote!(#inner_attrs #wrapped)
        }
        Shape::AsyncTrait(parts) => async_trait(&site, &mode, inner_attrs, parts),
    };
    let mut body_group = Group::new(Delimiter::Brace, new_body);
    body_group.set_span(body.span());

    let attrs = &item.attrs;
    let vis = &item.vis;
    let sig = &item.sig;
    quote! {
        #(#attrs)*
        #vis #sig #body_group
    }
}

fn async_mode(ms: &TokenStream, mode: AsyncMode) -> TokenStream {
    match mode {
        AsyncMode::Both => quote!(#ms::AsyncMode::Both),
        AsyncMode::Span => quote!(#ms::AsyncMode::Span),
        AsyncMode::Polls => quote!(#ms::AsyncMode::Polls),
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
/// Output (`ms` = `::fxt::__macro_support`):
///
/// ```text
/// fn work(n: u32) -> u32 {
///     let __fxt_guard = {
///         static __FXT_KEYS: [ms::KeyCache; 1] = [ms::KeyCache::NEW; 1];
///         static __FXT_CALLSITE: ms::Callsite = ms::Callsite::new(
///             ms::core::env!("CARGO_CRATE_NAME"), "work", &["n"], &__FXT_KEYS);
///         match ms::site(&__FXT_CALLSITE, &__FXT_KEYS) {
///             Some(site) => ms::DurationGuard::enabled(site, [ms::capture(&(n))]),
///             None => ms::DurationGuard::disabled(),
///         }
///     };
///     let __fxt_ret = { n * 2 };
///     __fxt_guard.end();
///     __fxt_ret
/// }
/// ```
///
/// The duration ends after the body's locals are dropped, on every way
/// out: at the end of the body the guard's `end` writes one duration
/// complete record (inlined here, so specialized for this call site); on
/// `return`, `?` or a panic unwinding its `Drop` does (the compiler calls
/// the guard's shared drop code, which it does not inline into each
/// function). `__fxt_guard` and `__fxt_ret` are mixed-site identifiers:
/// user code cannot name them.
fn sync(site: &Site, inner_attrs: TokenStream, stmts: TokenStream) -> TokenStream {
    let Site {
        ms,
        statics,
        captures,
        site,
    } = site;
    let guard = Ident::new("__fxt_guard", Span::mixed_site());
    let ret = Ident::new("__fxt_ret", Span::mixed_site());
    quote! {
        #inner_attrs
        let #guard = {
            #statics
            match #ms::site(&__FXT_CALLSITE, &__FXT_KEYS) {
                #ms::core::option::Option::Some(#site) => #ms::DurationGuard::enabled(#site, [#(#captures),*]),
                #ms::core::option::Option::None => #ms::DurationGuard::disabled(),
            }
        };
        #[allow(unreachable_code, unused_braces, clippy::let_unit_value, clippy::diverging_sub_expression)]
        let #ret = { #stmts };
        #[allow(unreachable_code)]
        #guard.end();
        #[allow(unreachable_code)]
        #ret
    }
}

/// The statements of an `async` body that run the original statements as an
/// inner future inside a wrapper that traces it; used for `async fn` bodies
/// and for the `async move` block of an `#[async_trait]` method.
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
///         match ms::site(&__FXT_CALLSITE, &__FXT_KEYS) {
///             Some(site) => ms::AsyncScope::enabled(site, ms::AsyncMode::Both, [ms::capture(&(id))]),
///             None => ms::AsyncScope::disabled(),
///         }
///     };
///     let __fxt_future = ms::core::pin::pin!(async move {
///         // never runs; gives `?` and `return` in the body their type
///         if false { let __fxt_ret: Result<Page, Error> = loop {}; return __fxt_ret; }
///         body
///     });
///     ms::Instrumented::new(__fxt_future, __fxt_scope).await
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
fn instrument_future(
    site: &Site,
    mode: &TokenStream,
    fake_return: TokenStream,
    stmts: TokenStream,
) -> TokenStream {
    let Site {
        ms,
        statics,
        captures,
        site,
    } = site;
    let scope = Ident::new("__fxt_scope", Span::mixed_site());
    let future = Ident::new("__fxt_future", Span::mixed_site());
    quote! {
        let #scope = {
            #statics
            match #ms::site(&__FXT_CALLSITE, &__FXT_KEYS) {
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

/// A statement that never runs and gives `return` and `?` in an `async fn`
/// body the function's return type (which an `async` block would otherwise
/// infer from its first `return`). Nothing when the type mentions `impl
/// Trait`, which cannot annotate a `let`.
fn fake_return(output: &ReturnType) -> TokenStream {
    let ret = Ident::new("__fxt_ret", Span::mixed_site());
    match output {
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
    }
}

/// A method that `#[async_trait]` rewrote: the future it boxes is traced
/// (as an `async fn` body is), not the call that boxes it, so the records
/// show the method's work, its polls and its whole span.
///
/// Input (what `#[async_trait]` made of `#[trace_duration(args(id))] async
/// fn get(&self, id: u64) -> Page { body }`):
///
/// ```text
/// fn get<'life0, 'async_trait>(&'life0 self, id: u64)
///     -> Pin<Box<dyn Future<Output = Page> + Send + 'async_trait>>
/// where ...
/// {
///     Box::pin(async move { /* async-trait's prologue */ body })
/// }
/// ```
///
/// Output:
///
/// ```text
/// fn get<'life0, 'async_trait>(&'life0 self, id: u64) -> Pin<Box<...>> where ... {
///     Box::pin(async move {
///         let __fxt_scope = { statics; match ms::site(..) { ... [ms::capture(&(id))] ... } };
///         let __fxt_future = ms::core::pin::pin!(async move {
///             /* async-trait's prologue */ body
///         });
///         ms::Instrumented::new(__fxt_future, __fxt_scope).await
///     })
/// }
/// ```
///
/// async-trait's prologue already gives `return` its type, so no fake
/// return is added. If `#[trace_duration]` runs before `#[async_trait]` (it
/// then sees an `async fn`), the `async fn` expansion is used, and
/// async-trait boxes the traced body: the records are the same.
fn async_trait(
    site: &Site,
    mode: &TokenStream,
    inner_attrs: TokenStream,
    parts: &AsyncTraitBody,
) -> TokenStream {
    let AsyncTraitBody {
        before,
        boxing,
        future,
    } = parts;
    let attrs = &future.attrs;
    let capture = &future.capture;
    let stmts = &future.block.stmts;
    let wrapped = instrument_future(site, mode, TokenStream::new(), quote!(#(#stmts)*));
    quote! {
        #inner_attrs
        #(#before)*
        #boxing(#(#attrs)* async #capture { #wrapped })
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

/// An identifier without its `r#` prefix (the event name of `fn r#type`).
fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#")
        .map_or_else(|| s.clone(), str::to_owned)
}
