//! Rows of argument maps held back by their shape's number: a row whose
//! arguments are all integers named by index ([`super::shape`]), a
//! begin's whose are integers and strings ([`super::kept`]), or one that
//! has none, appends only its shape's number in the row group (its
//! values go straight to the maps' value leaves, whose order no level
//! depends on). The rows held have their keys and levels expanded into
//! the maps' leaves in one pass when a row of another kind comes or the
//! row group ends: room made once, then each row's keys and levels
//! stored in place in the leaves (no copy made apart and copied in, no
//! call per row).
//!
//! The leaves get what appending the rows one by one gives them: the
//! same keys (numbered when the shape was found), levels and values, in
//! the same order.

use crate::commands::export::encode::{KeyLeaf, Levels, NumLeaf, TextLeaf};

/// The number of the shape of a row without arguments.
pub const NO_ARGS: u32 = 0;

/// Shapes compared with one found anew before it is numbered as a new
/// one (rows take turns among a few).
const LOOKED_AT: usize = 64;

/// A shape's entries: the keys of the text map's, and of the integer
/// map's (the same unless some arguments are strings), in order.
#[derive(Default, PartialEq)]
struct Entries {
    text: Vec<u32>,
    ints: Vec<u32>,
}

/// The rows held and the shapes they have.
pub struct Held {
    /// Per shape number: its entries.
    shapes: Vec<Entries>,
    /// Each row's shape number.
    rows: Vec<u32>,
    /// Each shape's entries in the map being expanded.
    lens: Vec<u32>,
}

impl Default for Held {
    fn default() -> Held {
        Held {
            shapes: vec![Entries::default()],
            rows: Vec::new(),
            lens: Vec::new(),
        }
    }
}

impl Held {
    /// The number of the shape whose entries' keys are `text` in the
    /// text map and `ints` in the integer map, numbered if new.
    pub fn number(&mut self, text: &[u32], ints: &[u32]) -> u32 {
        let found = self
            .shapes
            .iter()
            .take(LOOKED_AT)
            .position(|shape| shape.text == text && shape.ints == ints);
        match found {
            Some(n) => n as u32,
            None => {
                self.shapes.push(Entries {
                    text: text.to_vec(),
                    ints: ints.to_vec(),
                });
                (self.shapes.len() - 1) as u32
            }
        }
    }

    /// Holds a row of shape `shape` (its values appended apart).
    #[inline(always)]
    pub fn push(&mut self, shape: u32) {
        self.rows.push(shape);
    }

    /// Holds a row without arguments.
    #[inline(always)]
    pub fn push_empty(&mut self) {
        self.rows.push(NO_ARGS);
    }

    /// Appends the keys and levels of the rows held to the maps' leaves
    /// (text, integer, double), and holds none.
    pub fn expand(
        &mut self,
        text: &mut (KeyLeaf, TextLeaf),
        ints: &mut (KeyLeaf, NumLeaf<i64>),
        floats: &mut NumLeaf<f64>,
    ) {
        if self.rows.is_empty() {
            return;
        }
        self.append(|e| &e.text, text.0.ids_mut(), &mut text.1.levels);
        self.append(|e| &e.ints, ints.0.ids_mut(), &mut ints.1.levels);
        // Every row's double map is empty: definition level 1, the row's
        // first.
        floats.levels.push_run(1, 0, self.rows.len());
        self.rows.clear();
    }

    /// Appends the keys and levels of the rows' entries in one map (whose
    /// keys `map` picks of a shape) to its leaves: its keys' ids `keys`
    /// and its values' `levels`. Room is made first (from each shape's
    /// entry count), and each row then appends its keys and levels in
    /// place (rows of different shapes take turns: runs are short, and a
    /// row of one or two entries is a store or two, not a copy of its
    /// own). An entry's repetition level is 1 but a row's first's, 0;
    /// its definition level the greatest, an empty map's 1, and none is
    /// kept while every one is the greatest.
    fn append(
        &mut self,
        map: impl Fn(&Entries) -> &Vec<u32>,
        keys: &mut Vec<u32>,
        levels: &mut Levels,
    ) {
        self.lens.clear();
        self.lens
            .extend(self.shapes.iter().map(|s| map(s).len() as u32));
        let (mut entries, mut rows_levels, mut empty) = (0, 0, false);
        for &row in &self.rows {
            let n = self.lens[row as usize] as usize;
            entries += n;
            rows_levels += n.max(1);
            empty |= n == 0;
        }
        // An empty map's level is not the greatest: definition levels
        // kept from there on, decided once for the rows.
        let defs = empty || !levels.defs.is_empty();
        if defs {
            levels.keep_defs();
            levels.defs.reserve(rows_levels);
        }
        keys.reserve(entries);
        levels.reps.reserve(rows_levels);
        let (reps, max) = (&mut levels.reps, levels.max_def);
        for &row in &self.rows {
            match map(&self.shapes[row as usize])[..] {
                [] => {
                    reps.push(0);
                    if defs {
                        levels.defs.push(1);
                    }
                }
                [a] => {
                    keys.push(a);
                    reps.push(0);
                    if defs {
                        levels.defs.push(max);
                    }
                }
                [a, b] => {
                    keys.extend_from_slice(&[a, b]);
                    reps.extend_from_slice(&[0, 1]);
                    if defs {
                        levels.defs.extend_from_slice(&[max, max]);
                    }
                }
                ref more => {
                    keys.extend_from_slice(more);
                    reps.push(0);
                    reps.resize(reps.len() + more.len() - 1, 1);
                    if defs {
                        levels.defs.resize(levels.defs.len() + more.len(), max);
                    }
                }
            }
        }
        levels.count += rows_levels;
    }

    /// Forgets the shapes (the next row group numbers its keys anew).
    pub fn clear(&mut self) {
        debug_assert!(self.rows.is_empty());
        self.shapes.truncate(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What appending `rows` (each its entries' keys) entry by entry
    /// gives a map's leaves: a key and a level per entry (definition
    /// level 3; repetition 1, but 0 for a row's first), or level 1 for
    /// an empty map.
    fn one_by_one(rows: &[&[u32]]) -> (Vec<u32>, Levels) {
        let (mut keys, mut levels) = (Vec::new(), Levels::new(3, true));
        for row in rows {
            if row.is_empty() {
                levels.push(1, 0);
            }
            for (k, &key) in row.iter().enumerate() {
                keys.push(key);
                levels.push(3, u8::from(k > 0));
            }
        }
        (keys, levels)
    }

    /// A shape's text and integer entries.
    type Shape = (&'static [u32], &'static [u32]);

    fn same(a: &Levels, b: &Levels) -> bool {
        (a.count, &a.defs, &a.reps) == (b.count, &b.defs, &b.reps)
    }

    /// Rows of shapes taking turns, beginning with an empty map, a full
    /// one or having none (a leaf's levels kept only from its first that
    /// is not the greatest), one shape with a string the integer map
    /// leaves out, expanded twice into the same leaves: the keys and
    /// levels of appending them entry by entry.
    #[test]
    fn rows_held_expand_to_what_appending_them_one_by_one_gives() {
        let shapes: [Shape; 5] = [
            (&[], &[]),
            (&[7], &[7]),
            (&[7, 9], &[7, 9]),
            (&[1, 2, 3], &[1, 2, 3]),
            (&[5, 6], &[6]),
        ];
        let orders: [&[usize]; 4] = [
            &[0, 1, 2, 3, 0, 4],
            &[1, 0, 3, 4, 2],
            &[2, 1, 3, 4, 1],
            &[0, 0, 4],
        ];
        for order in orders {
            let mut held = Held::default();
            let numbers: Vec<u32> = shapes.iter().map(|(t, i)| held.number(t, i)).collect();
            assert_eq!(numbers[0], NO_ARGS);
            let mut text = (KeyLeaf::default(), TextLeaf::new(3, true));
            let mut ints = (KeyLeaf::default(), NumLeaf::new(3, true));
            let mut floats = NumLeaf::new(3, true);
            for _ in 0..2 {
                order.iter().for_each(|&s| held.push(numbers[s]));
                held.expand(&mut text, &mut ints, &mut floats);
            }
            let twice = |pick: fn(&Shape) -> &'static [u32]| {
                let rows: Vec<&[u32]> = order.iter().map(|&s| pick(&shapes[s])).collect();
                one_by_one(&[&rows[..], &rows[..]].concat())
            };
            let (text_keys, text_levels) = twice(|s| s.0);
            assert_eq!(*text.0.ids_mut(), text_keys, "{order:?}");
            assert!(same(&text.1.levels, &text_levels), "{order:?}");
            let (int_keys, int_levels) = twice(|s| s.1);
            assert_eq!(*ints.0.ids_mut(), int_keys, "{order:?}");
            assert!(same(&ints.1.levels, &int_levels), "{order:?}");
            let (_, empty) = one_by_one(&vec![&[][..]; 2 * order.len()]);
            assert!(same(&floats.levels, &empty), "{order:?}");
        }
    }
}
