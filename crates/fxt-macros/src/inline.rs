//! The function-like macros (`trace_instant!`, `trace_counter!`, ...).
//!
//! Users call the `macro_rules!` wrappers of the `fxt` crate; each forwards
//! its tokens here as `__trace!(kind $crate; user tokens)`, so the expansion
//! reaches the runtime through `$crate::__macro_support` whatever name the
//! user gave the `fxt` dependency, and every user token keeps its span for
//! error messages.
//!
//! Three stages, as for the attribute: [`Invocation::parse`] reads the
//! tokens, [`Invocation::validate`] checks the limits, [`Invocation::expand`]
//! writes the code. Every error is a `syn::Error` on the offending tokens and
//! becomes a single `compile_error!` (the expansion is then `()`, or a
//! disabled scope for `trace_duration_scope!`, so no follow-up errors).

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Token};

use crate::args::{self, Arg};

mod kw {
    syn::custom_keyword!(id);
}

/// Which macro the user called.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Instant,
    Counter,
    DurationScope,
    DurationBegin,
    DurationEnd,
    AsyncBegin,
    AsyncInstant,
    AsyncEnd,
    FlowBegin,
    FlowStep,
    FlowEnd,
    Log,
    Blob,
}

/// Whether a form takes `id = expr` after the name.
#[derive(PartialEq, Eq)]
enum IdRule {
    No,
    Optional,
    Required,
}

impl Kind {
    fn from_ident(ident: &Ident) -> syn::Result<Kind> {
        Ok(match ident.to_string().as_str() {
            "instant" => Kind::Instant,
            "counter" => Kind::Counter,
            "duration_scope" => Kind::DurationScope,
            "duration_begin" => Kind::DurationBegin,
            "duration_end" => Kind::DurationEnd,
            "async_begin" => Kind::AsyncBegin,
            "async_instant" => Kind::AsyncInstant,
            "async_end" => Kind::AsyncEnd,
            "flow_begin" => Kind::FlowBegin,
            "flow_step" => Kind::FlowStep,
            "flow_end" => Kind::FlowEnd,
            "log" => Kind::Log,
            "blob" => Kind::Blob,
            _ => return Err(syn::Error::new(ident.span(), "fxt: unknown macro kind")),
        })
    }

    /// The name the user typed, for messages.
    fn user_name(self) -> &'static str {
        match self {
            Kind::Instant => "trace_instant!",
            Kind::Counter => "trace_counter!",
            Kind::DurationScope => "trace_duration_scope!",
            Kind::DurationBegin => "trace_duration_begin!",
            Kind::DurationEnd => "trace_duration_end!",
            Kind::AsyncBegin => "trace_async_begin!",
            Kind::AsyncInstant => "trace_async_instant!",
            Kind::AsyncEnd => "trace_async_end!",
            Kind::FlowBegin => "trace_flow_begin!",
            Kind::FlowStep => "trace_flow_step!",
            Kind::FlowEnd => "trace_flow_end!",
            Kind::Log => "trace_log!",
            Kind::Blob => "trace_blob!",
        }
    }

    fn id_rule(self) -> IdRule {
        match self {
            Kind::Counter => IdRule::Optional,
            Kind::AsyncBegin
            | Kind::AsyncInstant
            | Kind::AsyncEnd
            | Kind::FlowBegin
            | Kind::FlowStep
            | Kind::FlowEnd => IdRule::Required,
            _ => IdRule::No,
        }
    }

    /// The runtime function that emits this kind of record (events only).
    fn emit_fn(self) -> &'static str {
        match self {
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
}

/// What follows the category, depending on the kind.
enum Body {
    /// Events and scopes: name, optional id, arguments.
    Event {
        name: Expr,
        id: Option<Expr>,
        args: Vec<Arg>,
    },
    /// `trace_log!`: the format string and its arguments, as written.
    Log { format: TokenStream },
    /// `trace_blob!`: name and bytes.
    Blob { name: Expr, data: Expr },
}

/// A parsed invocation.
pub(crate) struct Invocation {
    kind: Kind,
    /// Path of the `fxt` crate (`$crate` from the wrapper).
    krate: TokenStream,
    category: Expr,
    body: Body,
}

impl Parse for Invocation {
    /// Input: `kind <crate path> ; "category", ...` (see the module docs).
    fn parse(input: ParseStream<'_>) -> syn::Result<Invocation> {
        let kind_ident: Ident = input.parse()?;
        let kind = Kind::from_ident(&kind_ident)?;
        let mut krate = TokenStream::new();
        while !input.peek(Token![;]) {
            krate.extend([input.parse::<TokenTree>()?]);
        }
        input.parse::<Token![;]>()?;
        let user = kind.user_name();

        if input.is_empty() {
            return Err(input.error(format!(
                "{user} needs at least a category and a name: {user}(\"category\", \"name\" ...)"
            )));
        }
        let category: Expr = input.parse()?;
        let body = match kind {
            Kind::Log => {
                comma_before(input, &category, "a message after the category, as in trace_log!(\"category\", \"format\", args...)")?;
                let format: TokenStream = input.parse()?;
                if format.is_empty() {
                    return Err(input.error("trace_log! needs a message after the category"));
                }
                Body::Log { format }
            }
            Kind::Blob => {
                comma_before(
                    input,
                    &category,
                    "a name after the category, as in trace_blob!(\"category\", \"name\", bytes)",
                )?;
                let name: Expr = input.parse()?;
                comma_before(
                    input,
                    &name,
                    "the bytes after the name, as in trace_blob!(\"category\", \"name\", bytes)",
                )?;
                let data: Expr = input.parse()?;
                if input.peek(Token![,]) {
                    input.parse::<Token![,]>()?;
                }
                if !input.is_empty() {
                    return Err(input.error(
                        "trace_blob! takes a category, a name and the bytes, nothing more",
                    ));
                }
                Body::Blob { name, data }
            }
            _ => {
                comma_before(
                    input,
                    &category,
                    &format!(
                        "a name after the category, as in {user}(\"category\", \"name\", ...)"
                    ),
                )?;
                let name: Expr = input.parse()?;
                let mut id = None;
                let rule = kind.id_rule();
                if rule != IdRule::No
                    && input.peek(Token![,])
                    && input.peek2(kw::id)
                    && input.peek3(Token![=])
                {
                    input.parse::<Token![,]>()?;
                    input.parse::<kw::id>()?;
                    input.parse::<Token![=]>()?;
                    id = Some(input.parse::<Expr>()?);
                } else if rule == IdRule::Required {
                    let message = format!(
                        "{user} needs an id after the name: {user}(\"category\", \"name\", id = <u64>, ...)"
                    );
                    if input.peek(Token![,]) {
                        input.parse::<Token![,]>()?;
                    }
                    return Err(if input.is_empty() {
                        syn::Error::new_spanned(&name, message)
                    } else {
                        input.error(message)
                    });
                }
                let args = if input.is_empty() {
                    Vec::new()
                } else {
                    input.parse::<Token![,]>()?;
                    let list = Punctuated::<Arg, Token![,]>::parse_terminated(input)?;
                    list.into_iter().collect()
                };
                Body::Event { name, id, args }
            }
        };
        Ok(Invocation {
            kind,
            krate,
            category,
            body,
        })
    }
}

/// Expects `,` and more input; errors point at the unexpected token, or
/// at `previous` when the input ends too early.
fn comma_before(input: ParseStream<'_>, previous: &dyn ToTokens, what: &str) -> syn::Result<()> {
    let early_end = || syn::Error::new_spanned(previous, format!("expected {what}"));
    if input.is_empty() {
        return Err(early_end());
    }
    input.parse::<Token![,]>()?;
    if input.is_empty() {
        return Err(early_end());
    }
    Ok(())
}

impl Invocation {
    /// Stage 2: limits that parsing does not express.
    pub(crate) fn validate(&self) -> syn::Result<()> {
        if let Body::Event { name, id, args } = &self.body {
            args::check_list(args, self.kind.user_name())?;
            if self.kind == Kind::Counter && args.is_empty() {
                let last: &dyn ToTokens = match id {
                    Some(id) => id,
                    None => name,
                };
                return Err(syn::Error::new_spanned(
                    last,
                    "trace_counter! needs at least one numeric value: trace_counter!(\"category\", \"name\", \"series\" => value)",
                ));
            }
        }
        Ok(())
    }

    /// Stage 3: the code.
    ///
    /// Input:
    ///
    /// ```text
    /// trace_instant!("net", "packet", "len" => len)
    /// ```
    ///
    /// Output:
    ///
    /// ```text
    /// {
    ///     static __FXT_KEYS: [KeyCache; 1] = [KeyCache::NEW; 1];
    ///     static __FXT_CALLSITE: Callsite =
    ///         Callsite::new("net", "packet", &["len"], &__FXT_KEYS);
    ///     if let Some(site) = $crate::__macro_support::site(&__FXT_CALLSITE) {
    ///         $crate::__macro_support::instant(site, &[arg(&(len))]);
    ///     }
    /// }
    /// ```
    ///
    /// `site()` is one relaxed load and a branch when the call site is off,
    /// and a constant `None` with the `disabled` feature.
    pub(crate) fn expand(&self) -> TokenStream {
        let krate = &self.krate;
        let ms = quote!(#krate::__macro_support);
        let site = Ident::new("__fxt_site", Span::mixed_site());
        let category = &self.category;
        let (name, keys): (TokenStream, Vec<&syn::LitStr>) = match &self.body {
            Body::Event { name, args, .. } => (
                name.to_token_stream(),
                args.iter().map(|a| &a.key).collect(),
            ),
            Body::Blob { name, .. } => (name.to_token_stream(), Vec::new()),
            Body::Log { .. } => (quote!("log"), Vec::new()),
        };
        let callsite = callsite(&ms, category.to_token_stream(), name, &keys);
        let callsite_ident = format_ident!("__FXT_CALLSITE");
        let guard = quote!(#ms::core::option::Option::Some(#site) = #ms::site(&#callsite_ident));
        match &self.body {
            Body::Log { format } => quote! {{
                #callsite
                if let #guard {
                    #ms::log_fmt(#site, #ms::core::format_args!(#format));
                }
            }},
            Body::Blob { data, .. } => {
                let bytes = args::call_with_ref(&ms, "blob_bytes", data);
                quote! {{
                    #callsite
                    if let #guard {
                        #ms::blob(#site, #bytes);
                    }
                }}
            }
            Body::Event { args, id, .. } if self.kind == Kind::DurationScope => {
                let _ = id;
                let captures = args
                    .iter()
                    .map(|a| args::call_with_ref(&ms, "capture", &a.value));
                quote! {{
                    #callsite
                    match #ms::site(&#callsite_ident) {
                        #ms::core::option::Option::Some(#site) => #ms::DurationGuard::enabled(#site, [#(#captures),*]),
                        #ms::core::option::Option::None => #ms::DurationGuard::disabled(),
                    }
                }}
            }
            Body::Event { args, id, .. } => {
                let value_fn = if self.kind == Kind::Counter {
                    "counter_arg"
                } else {
                    "arg"
                };
                let values = args
                    .iter()
                    .map(|a| args::call_with_ref(&ms, value_fn, &a.value));
                let emit = Ident::new(self.kind.emit_fn(), Span::call_site());
                let id_ident = Ident::new("__fxt_id", Span::mixed_site());
                let (id_let, id_arg) = match (id, self.kind.id_rule()) {
                    (Some(expr), _) => {
                        let (first, _) = args::first_last(expr);
                        let ty = quote::quote_spanned!(first=> u64);
                        (quote!(let #id_ident: #ty = #expr;), quote!(#id_ident,))
                    }
                    (None, IdRule::Optional) => (quote!(), quote!(0,)),
                    (None, _) => (quote!(), quote!()),
                };
                quote! {{
                    #callsite
                    if let #guard {
                        #id_let
                        #ms::#emit(#site, #id_arg &[#(#values),*]);
                    }
                }}
            }
        }
    }

    /// What stands in for the expansion after an error: `()`, or a disabled
    /// scope for `trace_duration_scope!`, so the user's code around it still
    /// type-checks and only the real error is reported.
    pub(crate) fn fallback(kind: Option<Kind>, krate: &TokenStream) -> TokenStream {
        match kind {
            Some(Kind::DurationScope) => {
                quote!(#krate::__macro_support::DurationGuard::<0>::disabled())
            }
            _ => quote!(()),
        }
    }
}

/// The per-call-site statics: `__FXT_KEYS` (one interned-key cache per
/// argument) and `__FXT_CALLSITE`.
pub(crate) fn callsite(
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

/// Entry point for `__trace!`.
pub(crate) fn trace(input: TokenStream) -> TokenStream {
    // Recover kind and crate path first, for a fallback that type-checks.
    let mut iter = input.clone().into_iter();
    let kind = match iter.next() {
        Some(TokenTree::Ident(i)) => Kind::from_ident(&i).ok(),
        _ => None,
    };
    let krate: TokenStream = iter
        .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
        .collect();
    let result = syn::parse2::<Invocation>(input).and_then(|inv| {
        inv.validate()?;
        Ok(inv.expand())
    });
    match result {
        Ok(tokens) => tokens,
        Err(e) => {
            let error = e.to_compile_error();
            let fallback = Invocation::fallback(kind, &krate);
            quote!({ #error #fallback })
        }
    }
}
