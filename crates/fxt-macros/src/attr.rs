//! Stage 1 of `#[trace_duration]`: the options and the function.

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Attribute, LitStr, Path, Signature, Token, Visibility};

use crate::args::Arg;

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(category);
    syn::custom_keyword!(args);
}

/// How an `async fn` is traced (`async = "..."`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum AsyncMode {
    /// Async begin/end around the whole call and a duration per poll.
    Both,
    /// Only the async begin/end pair.
    Span,
    /// Only a duration per poll.
    Polls,
}

/// The options as written. Each keeps the token that named it, so stage 2
/// can point at it.
#[derive(Default)]
pub(crate) struct Options {
    pub name: Option<LitStr>,
    pub category: Option<LitStr>,
    pub args: Option<(kw::args, Vec<Arg>)>,
    pub krate: Option<(Token![crate], Path)>,
    pub async_mode: Option<(Token![async], AsyncMode)>,
}

impl Parse for Options {
    /// `name = "..", category = "..", args(a, b = expr), crate = path,
    /// async = "both" | "span" | "polls"`, in any order, each at most once.
    fn parse(input: ParseStream<'_>) -> syn::Result<Options> {
        let mut options = Options::default();
        while !input.is_empty() {
            let lookahead = input.lookahead1();
            if lookahead.peek(kw::name) {
                let key: kw::name = input.parse()?;
                let value = parse_str_value(input)?;
                set_once(&mut options.name, value, key.span, "name")?;
            } else if lookahead.peek(kw::category) {
                let key: kw::category = input.parse()?;
                let value = parse_str_value(input)?;
                set_once(&mut options.category, value, key.span, "category")?;
            } else if lookahead.peek(kw::args) {
                let key: kw::args = input.parse()?;
                let content;
                syn::parenthesized!(content in input);
                let list = Punctuated::<Arg, Token![,]>::parse_terminated_with(
                    &content,
                    Arg::parse_attr_style,
                )?;
                let value = (key, list.into_iter().collect());
                set_once(&mut options.args, value, key.span, "args")?;
            } else if lookahead.peek(Token![crate]) {
                let key: Token![crate] = input.parse()?;
                input.parse::<Token![=]>()?;
                let path = Path::parse_mod_style(input)?;
                set_once(&mut options.krate, (key, path), key.span, "crate")?;
            } else if lookahead.peek(Token![async]) {
                let key: Token![async] = input.parse()?;
                let value = parse_str_value(input)?;
                let mode = match value.value().as_str() {
                    "both" => AsyncMode::Both,
                    "span" => AsyncMode::Span,
                    "polls" => AsyncMode::Polls,
                    _ => {
                        return Err(syn::Error::new(
                            value.span(),
                            "expected \"both\", \"span\" or \"polls\"",
                        ))
                    }
                };
                set_once(&mut options.async_mode, (key, mode), key.span, "async")?;
            } else {
                return Err(lookahead.error());
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(options)
    }
}

/// `= "string"`.
fn parse_str_value(input: ParseStream<'_>) -> syn::Result<LitStr> {
    input.parse::<Token![=]>()?;
    let lookahead = input.lookahead1();
    if lookahead.peek(LitStr) {
        input.parse()
    } else {
        Err(lookahead.error())
    }
}

/// Stores an option, or fails on the second occurrence (pointing at it).
fn set_once<T>(
    slot: &mut Option<T>,
    value: T,
    span: proc_macro2::Span,
    what: &str,
) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            span,
            format!("duplicate option `{what}`: give it once"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

/// A function whose body is kept as tokens, so a body that does not parse
/// yet (the user is still typing) reaches rustc unchanged and rustc reports
/// the real error.
pub(crate) struct MaybeItemFn {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    /// `{ ... }`, or `None` for a declaration ending in `;`.
    pub body: Option<Group>,
    /// The `;` of a declaration, to point at.
    pub semi: Option<Token![;]>,
}

impl Parse for MaybeItemFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<MaybeItemFn> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis: Visibility = input.parse()?;
        let sig: Signature = input.parse()?;
        let (body, semi) = if input.peek(Token![;]) {
            (None, Some(input.parse()?))
        } else {
            match input.parse::<TokenTree>()? {
                TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => (Some(g), None),
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "expected the function body `{ ... }`",
                    ))
                }
            }
        };
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the function"));
        }
        Ok(MaybeItemFn {
            attrs,
            vis,
            sig,
            body,
            semi,
        })
    }
}

/// Splits the inner attributes (`#![...]`) off the front of a body; they
/// must stay first when statements are inserted.
pub(crate) fn split_inner_attrs(body: TokenStream) -> (TokenStream, TokenStream) {
    let mut tokens: Vec<TokenTree> = body.into_iter().collect();
    let mut i = 0;
    while i + 2 < tokens.len() {
        let is_inner = matches!(&tokens[i], TokenTree::Punct(p) if p.as_char() == '#')
            && matches!(&tokens[i + 1], TokenTree::Punct(p) if p.as_char() == '!')
            && matches!(&tokens[i + 2], TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket);
        if !is_inner {
            break;
        }
        i += 3;
    }
    let rest = tokens.split_off(i);
    (tokens.into_iter().collect(), rest.into_iter().collect())
}
