//! Stage 2: what parsed but cannot be traced.
//!
//! Every check runs, whatever the others found, and all problems come back
//! as one `syn::Error` (each part spanned on its own tokens), so the user
//! fixes them in one pass. The attribute's validation also turns the
//! option list into [`FnOptions`], the only form `expand` reads.

use proc_macro2::Span;
use quote::ToTokens;
use syn::{Expr, Lit, Path};

use crate::parse::args::Arg;
use crate::parse::attr::{AttrOption, AttrOptions, MaybeItemFn, Shape};
use crate::parse::invocation::{Body, IdRule, Invocation, Kind};

/// The most arguments an FXT record can hold (4 bits in the event header).
pub(crate) const MAX_ARGS: usize = 15;

/// Errors collected so far.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(error),
            None => self.0 = Some(error),
        }
    }

    fn at(&mut self, span: Span, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span, message));
    }

    fn finish<T>(self, value: T) -> syn::Result<T> {
        match self.0 {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
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

/// The checked options of `#[trace_duration]`.
pub(crate) struct FnOptions<'a> {
    /// `name = ...`; the function's name when absent.
    pub name: Option<&'a Expr>,
    /// `category = ...`; the crate's name when absent.
    pub category: Option<&'a Expr>,
    pub args: &'a [Arg],
    /// `crate = path`; `::fxt` when absent.
    pub krate: Option<&'a Path>,
    pub async_mode: AsyncMode,
}

/// `#[trace_duration]`: the options (each at most once, valid values) and
/// the function (traceable, and `async` only where it means something).
pub(crate) fn function<'a>(
    options: &'a AttrOptions,
    item: &MaybeItemFn,
    shape: &Shape,
) -> syn::Result<FnOptions<'a>> {
    let mut errors = Errors::default();
    let mut checked = FnOptions {
        name: None,
        category: None,
        args: &[],
        krate: None,
        async_mode: AsyncMode::Both,
    };
    let mut seen: Vec<&'static str> = Vec::new();
    for option in &options.0 {
        if seen.contains(&option.name()) {
            errors.at(
                option.key_span(),
                format!("duplicate option `{}`: give it once", option.name()),
            );
            continue;
        }
        seen.push(option.name());
        match option {
            AttrOption::Name { value, .. } => {
                str_constant(value, "the name", Empty::Refused, &mut errors);
                checked.name = Some(value);
            }
            AttrOption::Category { value, .. } => {
                str_constant(value, "the category", Empty::Refused, &mut errors);
                checked.category = Some(value);
            }
            AttrOption::Args { list, .. } => {
                arg_list(list, "#[trace_duration]", &mut errors);
                checked.args = list;
            }
            AttrOption::Crate { path, .. } => checked.krate = Some(path),
            AttrOption::Async { key, value } => {
                match value.value().as_str() {
                    "both" => checked.async_mode = AsyncMode::Both,
                    "span" => checked.async_mode = AsyncMode::Span,
                    "polls" => checked.async_mode = AsyncMode::Polls,
                    _ => errors.at(value.span(), "expected \"both\", \"span\" or \"polls\""),
                }
                if matches!(shape, Shape::Sync) {
                    errors.at(
                        *key,
                        "the `async` option applies to `async fn` (and `#[async_trait]` methods) only",
                    );
                }
            }
        }
    }
    if let Some(constness) = &item.sig.constness {
        errors.at(
            constness.span,
            "#[trace_duration] cannot trace a `const fn`: tracing reads the clock and writes records at run time; \
             remove `const` or trace the callers",
        );
    }
    if let Some(semi) = &item.semi {
        errors.at(
            semi.span,
            "#[trace_duration] needs a function body; put it on the function in the `impl` instead",
        );
    }
    errors.finish(checked)
}

/// A function-like macro: the id where the kind needs one and nowhere
/// else, a counter with values, the argument list's limits, and a
/// category and name that can be strings.
pub(crate) fn invocation(invocation: &Invocation) -> syn::Result<()> {
    let mut errors = Errors::default();
    let kind = invocation.kind;
    let user = kind.user_name();
    str_constant(
        &invocation.category,
        "the category",
        Empty::Allowed,
        &mut errors,
    );
    match &invocation.body {
        Body::Event { name, id, args } => {
            str_constant(name, "the name", Empty::Allowed, &mut errors);
            match (kind.id_rule(), id) {
                (IdRule::Required, None) => errors.push(syn::Error::new_spanned(
                    name,
                    format!(
                        "{user} needs an id after the name: {user}(\"category\", \"name\", id = <u64>, ...)"
                    ),
                )),
                (IdRule::No, Some((key, _))) => errors.at(
                    *key,
                    format!("{user} takes no id (async, flow and counter events do)"),
                ),
                _ => {}
            }
            arg_list(args, user, &mut errors);
            if kind == Kind::Counter && args.is_empty() {
                let last: &dyn ToTokens = match id {
                    Some((_, id)) => id,
                    None => name,
                };
                errors.push(syn::Error::new_spanned(
                    last,
                    "trace_counter! needs at least one numeric value: trace_counter!(\"category\", \"name\", \"series\" => value)",
                ));
            }
        }
        Body::Blob { name, .. } => str_constant(name, "the name", Empty::Allowed, &mut errors),
        Body::Log { .. } => {}
    }
    errors.finish(())
}

/// At most [`MAX_ARGS`] arguments (the error underlines the 16th), and
/// distinct keys (the error underlines the second use).
fn arg_list(args: &[Arg], what: &str, errors: &mut Errors) {
    if let Some(extra) = args.get(MAX_ARGS) {
        errors.push(syn::Error::new_spanned(
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
            errors.at(arg.key.span(), format!("duplicate argument key `{key}`"));
        }
    }
}

/// Whether an empty string literal is accepted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Empty {
    /// The function-like macros write what they are given (an empty name
    /// is a valid FXT string).
    Allowed,
    /// `#[trace_duration]` names a function: an empty name or category is
    /// a mistake.
    Refused,
}

/// A category or a name: any `&'static str` constant expression (rustc
/// checks the type); a literal must be a string.
fn str_constant(expr: &Expr, what: &str, empty: Empty, errors: &mut Errors) {
    let mut inner = expr;
    loop {
        match inner {
            Expr::Group(g) => inner = &g.expr,
            Expr::Paren(p) => inner = &p.expr,
            _ => break,
        }
    }
    let Expr::Lit(lit) = inner else {
        return;
    };
    match &lit.lit {
        Lit::Str(s) if empty == Empty::Refused && s.value().is_empty() => errors.push(
            syn::Error::new_spanned(expr, format!("{what} cannot be empty")),
        ),
        Lit::Str(_) => {}
        other => errors.push(syn::Error::new_spanned(
            other,
            format!("{what} must be a `&'static str`: a string literal or a constant"),
        )),
    }
}
