//! Samples as folded stacks (`outer;…;inner COUNT`), for `fxt flame
//! --samples`: every sample, or only those taken on a thread while a slice
//! of a given name was open on it.

use std::collections::BTreeMap;

use fxt_format::decode::Text;

use super::{Names, Sampled};
use crate::folded::Folded;

/// The folded stacks of `samples` (counts of samples), outermost frame
/// first. With `inside`, only the samples whose entry in `enclosing` (the
/// open slices, see [`super::Timeline::enclosing`]) names it.
pub fn fold(samples: &[Sampled], names: &Names, inside: Option<(&str, &[Vec<Text>])>) -> Folded {
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        if let Some((name, enclosing)) = inside {
            let open = enclosing
                .get(i)
                .is_some_and(|o| o.iter().any(|t| t == name));
            if !open {
                continue;
            }
        }
        let mut stack = names.stack(&s.sample);
        if stack.is_empty() {
            continue;
        }
        stack.reverse();
        // `;` separates frames in the folded format.
        let key = stack
            .iter()
            .map(|f| f.replace(';', ":"))
            .collect::<Vec<_>>()
            .join(";");
        *stacks.entry(key).or_default() += 1;
    }
    Folded {
        stacks,
        overlaps: 0,
        unmatched_ends: 0,
        unclosed_begins: 0,
    }
}
