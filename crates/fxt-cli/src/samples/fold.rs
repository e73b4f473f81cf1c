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
    weighted(samples, inside, |_, s| {
        let stack = names.stack(&s.sample);
        (!stack.is_empty()).then_some((stack, 1.0))
    })
}

/// The folded stacks of `samples` (`outer;…;inner WEIGHT`): `each` gives
/// a sample's frames, innermost first, and its weight, or `None` to leave
/// it out; with `inside`, only the samples whose entry in `enclosing`
/// names it. Weights are summed per stack and rounded; stacks that round
/// to 0 are left out.
pub fn weighted(
    samples: &[Sampled],
    inside: Option<(&str, &[Vec<Text>])>,
    mut each: impl FnMut(usize, &Sampled) -> Option<(Vec<String>, f64)>,
) -> Folded {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        if let Some((name, enclosing)) = inside {
            let open = enclosing
                .get(i)
                .is_some_and(|o| o.iter().any(|t| t == name));
            if !open {
                continue;
            }
        }
        let Some((mut frames, weight)) = each(i, s) else {
            continue;
        };
        frames.reverse();
        // `;` separates frames in the folded format.
        let key = frames
            .iter()
            .map(|f| f.replace(';', ":"))
            .collect::<Vec<_>>()
            .join(";");
        *sums.entry(key).or_default() += weight;
    }
    Folded {
        stacks: sums
            .into_iter()
            .map(|(k, v)| (k, v.round() as u64))
            .filter(|(_, v)| *v > 0)
            .collect(),
        overlaps: 0,
        unmatched_ends: 0,
        unclosed_begins: 0,
    }
}
