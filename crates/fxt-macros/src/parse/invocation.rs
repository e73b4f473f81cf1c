//! The function-like macros (`trace_instant!`, `trace_counter!`, ...).
//!
//! Users call the `macro_rules!` wrappers of the `fxt` crate; each forwards
//! its tokens as `__trace!(kind $crate; user tokens)`, so the expansion
//! reaches the runtime through `$crate::__macro_support` whatever name the
//! user gave the `fxt` dependency, and every user token keeps its span for
//! error messages.
//!
//! The grammar is the same for every event kind (`category, name [, id =
//! expr] [, "key" => value]*`); which kinds need or refuse an id, and the
//! limits of the argument list, are checked in `validate`.

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Token};

use super::args::Arg;

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
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum IdRule {
    No,
    Optional,
    Required,
}

impl Kind {
    pub(crate) fn from_ident(ident: &Ident) -> syn::Result<Kind> {
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
    pub(crate) fn user_name(self) -> &'static str {
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

    pub(crate) fn id_rule(self) -> IdRule {
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
}

/// What follows the category, depending on the kind.
pub(crate) enum Body {
    /// Events and scopes: name, optional `id = expr`, arguments.
    Event {
        name: Expr,
        /// `id = expr`, with the span of `id`.
        id: Option<(Span, Expr)>,
        args: Vec<Arg>,
    },
    /// `trace_log!`: the format string and its arguments, as written.
    Log { format: TokenStream },
    /// `trace_blob!`: name and bytes.
    Blob { name: Expr, data: Expr },
}

/// A parsed invocation.
pub(crate) struct Invocation {
    pub kind: Kind,
    /// Path of the `fxt` crate (`$crate` from the wrapper).
    pub krate: TokenStream,
    pub category: Expr,
    pub body: Body,
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
                if input.peek(Token![,]) && input.peek2(kw::id) && input.peek3(Token![=]) {
                    input.parse::<Token![,]>()?;
                    let key: kw::id = input.parse()?;
                    input.parse::<Token![=]>()?;
                    id = Some((key.span, input.parse::<Expr>()?));
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
