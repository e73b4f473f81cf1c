//! What `fxt diff` keeps of a trace: a thread, a category, a name.

use std::collections::HashMap;

use fxt_format::decode::Text;

/// What to keep of a trace.
#[derive(Default, Clone)]
pub struct Select {
    /// Only the thread with this name, koid, or `name [koid]` label.
    pub thread: Option<String>,
    /// Only durations of this category.
    pub category: Option<String>,
    /// Only durations of this name.
    pub name: Option<String>,
}

/// Whether `select` selects durations of `category` and `name`.
pub fn selected(select: &Select, category: &Text, name: &Text) -> bool {
    select.category.as_deref().is_none_or(|c| category == c)
        && select.name.as_deref().is_none_or(|n| name == n)
}

/// Whether `select` selects the thread of koid `koid` (`names`: the
/// threads' names by koid).
pub fn thread_selected(select: &Select, koid: u64, names: &HashMap<u64, String>) -> bool {
    let Some(want) = &select.thread else {
        return true;
    };
    let name = names.get(&koid).map(String::as_str).unwrap_or("");
    *want == koid.to_string() || want == name || *want == format!("{name} [{koid}]")
}
