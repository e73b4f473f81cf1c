//! `#[trace_duration(...)]`: the options as written and the function.
//!
//! The options are kept as a list, in order, duplicates included: whether a
//! list makes sense (each option once, `async` only on async functions, ...)
//! is for `validate`, which reports every problem at once.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{
    Attribute, Expr, ExprAsync, GenericArgument, LitStr, Path, PathArguments, Signature, Stmt,
    Token, Type, TypeParamBound, Visibility,
};

use super::args::Arg;

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(category);
    syn::custom_keyword!(args);
}

/// One option of the attribute, with the token that named it (for errors).
pub(crate) enum AttrOption {
    /// `name = <&'static str constant>`.
    Name { key: Span, value: Expr },
    /// `category = <&'static str constant>`.
    Category { key: Span, value: Expr },
    /// `args(param, key = expr, ...)`.
    Args { key: Span, list: Vec<Arg> },
    /// `crate = path`.
    Crate { key: Span, path: Path },
    /// `async = "both" | "span" | "polls"`.
    Async { key: Span, value: LitStr },
}

impl AttrOption {
    /// The option's name, for messages.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            AttrOption::Name { .. } => "name",
            AttrOption::Category { .. } => "category",
            AttrOption::Args { .. } => "args",
            AttrOption::Crate { .. } => "crate",
            AttrOption::Async { .. } => "async",
        }
    }

    /// The token that named the option.
    pub(crate) fn key_span(&self) -> Span {
        match self {
            AttrOption::Name { key, .. }
            | AttrOption::Category { key, .. }
            | AttrOption::Args { key, .. }
            | AttrOption::Crate { key, .. }
            | AttrOption::Async { key, .. } => *key,
        }
    }
}

/// The attribute's options, in the order written.
pub(crate) struct AttrOptions(pub Vec<AttrOption>);

impl Parse for AttrOptions {
    /// `name = .., category = .., args(a, b = expr), crate = path,
    /// async = "both" | "span" | "polls"`, comma-separated.
    fn parse(input: ParseStream<'_>) -> syn::Result<AttrOptions> {
        let mut options = Vec::new();
        while !input.is_empty() {
            let lookahead = input.lookahead1();
            let option = if lookahead.peek(kw::name) {
                let key: kw::name = input.parse()?;
                input.parse::<Token![=]>()?;
                AttrOption::Name {
                    key: key.span,
                    value: input.parse()?,
                }
            } else if lookahead.peek(kw::category) {
                let key: kw::category = input.parse()?;
                input.parse::<Token![=]>()?;
                AttrOption::Category {
                    key: key.span,
                    value: input.parse()?,
                }
            } else if lookahead.peek(kw::args) {
                let key: kw::args = input.parse()?;
                let content;
                syn::parenthesized!(content in input);
                let list = Punctuated::<Arg, Token![,]>::parse_terminated_with(
                    &content,
                    Arg::parse_attr_style,
                )?;
                AttrOption::Args {
                    key: key.span,
                    list: list.into_iter().collect(),
                }
            } else if lookahead.peek(Token![crate]) {
                let key: Token![crate] = input.parse()?;
                input.parse::<Token![=]>()?;
                AttrOption::Crate {
                    key: key.span,
                    path: Path::parse_mod_style(input)?,
                }
            } else if lookahead.peek(Token![async]) {
                let key: Token![async] = input.parse()?;
                input.parse::<Token![=]>()?;
                let lookahead = input.lookahead1();
                if !lookahead.peek(LitStr) {
                    return Err(lookahead.error());
                }
                AttrOption::Async {
                    key: key.span,
                    value: input.parse()?,
                }
            } else {
                return Err(lookahead.error());
            };
            options.push(option);
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(AttrOptions(options))
    }
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
                TokenTree::Group(g) => match brace_block(g) {
                    Ok(block) => (Some(block), None),
                    Err(other) => {
                        return Err(syn::Error::new(
                            other.span(),
                            "expected the function body `{ ... }`",
                        ))
                    }
                },
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

/// The `{ ... }` of a body: the group itself, or, for a body that a
/// `macro_rules!` macro passed as `$body:block`, the braces inside the
/// invisible group that wraps the fragment.
fn brace_block(group: Group) -> Result<Group, Group> {
    match group.delimiter() {
        Delimiter::Brace => Ok(group),
        Delimiter::None => {
            let mut inner = group.stream().into_iter();
            match (inner.next(), inner.next()) {
                (Some(TokenTree::Group(g)), None) => brace_block(g).map_err(|_| group),
                _ => Err(group),
            }
        }
        _ => Err(group),
    }
}

/// What `#[trace_duration]` is looking at.
pub(crate) enum Shape {
    /// A function that runs its body when called.
    Sync,
    /// An `async fn`.
    Async,
    /// A function that `#[async_trait]` made of an `async fn`: not `async`,
    /// its body ends in `Box::pin(async move { ... })`, and the future
    /// holds the user's body.
    AsyncTrait(Box<AsyncTraitBody>),
}

/// The body of a method rewritten by `#[async_trait]`, split at the future
/// it returns.
pub(crate) struct AsyncTraitBody {
    /// The statements before the last expression (none, today).
    pub before: Vec<Stmt>,
    /// The function boxing the future (`Box::pin`, as written).
    pub boxing: Expr,
    /// The `async move { ... }` block.
    pub future: ExprAsync,
}

impl MaybeItemFn {
    /// Recognises the function's shape. The `#[async_trait]` shape is the
    /// one its expansion has had since async-trait 0.1.44: a function that
    /// is not `async`, returning `Pin<Box<dyn Future ...>>`, whose body's
    /// last expression is `Box::pin(async move { ... })` (as tracing's
    /// `#[instrument]` recognises it). Anything else that is not an
    /// `async fn` is traced as a plain function.
    pub(crate) fn shape(&self) -> Shape {
        if self.sig.asyncness.is_some() {
            return Shape::Async;
        }
        match (&self.body, returns_boxed_future(&self.sig)) {
            (Some(body), true) => async_trait_body(body.stream())
                .map_or(Shape::Sync, |b| Shape::AsyncTrait(Box::new(b))),
            _ => Shape::Sync,
        }
    }
}

/// Whether the return type is `Pin<Box<dyn Future<..> + ..>>` (any path to
/// `Pin` and `Future`), what async-trait writes.
fn returns_boxed_future(sig: &Signature) -> bool {
    let syn::ReturnType::Type(_, ty) = &sig.output else {
        return false;
    };
    let Some(boxed) = only_type_arg(ty, "Pin") else {
        return false;
    };
    let Some(Type::TraitObject(object)) = only_type_arg(boxed, "Box") else {
        return false;
    };
    object
        .bounds
        .iter()
        .any(|bound| matches!(bound, TypeParamBound::Trait(t) if ends_with(&t.path, &["Future"])))
}

/// `T` of a type `..::Name<T>`.
fn only_type_arg<'t>(ty: &'t Type, name: &str) -> Option<&'t Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != name {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) if args.args.len() == 1 => Some(t),
        _ => None,
    }
}

/// Whether a path ends with these segments (`Box::pin`, `::alloc::boxed::Box::pin`).
fn ends_with(path: &Path, names: &[&str]) -> bool {
    path.segments.len() >= names.len()
        && path
            .segments
            .iter()
            .rev()
            .zip(names.iter().rev())
            .all(|(segment, name)| segment.ident == name)
}

/// Splits a body ending in `Box::pin(async move { ... })`.
fn async_trait_body(body: TokenStream) -> Option<AsyncTraitBody> {
    let block: syn::Block = syn::parse2(quote::quote!({ #body })).ok()?;
    let mut stmts = block.stmts;
    let Some(Stmt::Expr(Expr::Call(call), None)) = stmts.pop() else {
        return None;
    };
    let Expr::Path(path) = &*call.func else {
        return None;
    };
    if !ends_with(&path.path, &["Box", "pin"]) || call.args.len() != 1 {
        return None;
    }
    let Some(Expr::Async(future)) = call.args.first() else {
        return None;
    };
    Some(AsyncTraitBody {
        before: stmts,
        boxing: (*call.func).clone(),
        future: future.clone(),
    })
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
