//! Rows of argument maps held back by their shape's number: a row whose
//! arguments are all integers named by index ([`super::shape`]), a
//! begin's whose are integers and strings ([`super::kept`]), or one that
//! has none, appends only its shape's number in the row group (its
//! values go straight to the maps' value leaves, whose order no level
//! depends on). The rows held have their keys and levels expanded into
//! the maps' leaves in one pass when a row of another kind comes or the
//! row group ends, as blocks, not entry by entry (a row's keys and
//! levels copied one small block at a time cost a call each).
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
    /// Whether a shape has text entries the integer map has not.
    strings: bool,
    /// Each row's shape number.
    rows: Vec<u32>,
    /// The keys, definition and repetition levels of the maps' entries
    /// being expanded (kept for the next expansion's room).
    keys: Vec<u32>,
    defs: Vec<u8>,
    reps: Vec<u8>,
    /// Each shape's entries in the map being expanded.
    lens: Vec<u32>,
}

impl Default for Held {
    fn default() -> Held {
        Held {
            shapes: vec![Entries::default()],
            strings: false,
            rows: Vec::new(),
            keys: Vec::new(),
            defs: Vec::new(),
            reps: Vec::new(),
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
                self.strings |= text != ints;
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
        self.entries(|e| &e.text);
        self.extend(&mut text.0, &mut text.1.levels);
        if self.strings {
            self.entries(|e| &e.ints);
        }
        self.extend(&mut ints.0, &mut ints.1.levels);
        // Every row's double map is empty: definition level 1, the row's
        // first.
        let rows = self.rows.len();
        self.defs.clear();
        self.defs.resize(rows, 1);
        self.reps.clear();
        self.reps.resize(rows, 0);
        floats.levels.extend(Some(&self.defs), &self.reps, rows);
        self.rows.clear();
    }

    /// Appends the keys and levels [`Held::entries`] found to a map's
    /// leaves.
    fn extend(&self, keys: &mut KeyLeaf, levels: &mut Levels) {
        let defs = (self.defs.len() == self.reps.len()).then_some(&self.defs[..]);
        keys.extend(&self.keys);
        levels.extend(defs, &self.reps, self.reps.len());
    }

    /// The keys and levels of the rows' entries in one map (whose keys
    /// `map` picks of a shape), into [`Held::keys`], [`Held::reps`] and
    /// [`Held::defs`] (left empty if every map has entries: all at the
    /// greatest level). The buffers are sized first (from each shape's
    /// entry count), filled with the levels most entries have, and each
    /// row then stores its keys and its first level in place (rows of
    /// different shapes take turns: runs are short, and a row of one or
    /// two entries is a store or two, not a copy of its own).
    fn entries(&mut self, map: impl Fn(&Entries) -> &Vec<u32>) {
        self.lens.clear();
        self.lens
            .extend(self.shapes.iter().map(|s| map(s).len() as u32));
        let (mut keys, mut levels, mut empty) = (0, 0, false);
        for &row in &self.rows {
            let n = self.lens[row as usize] as usize;
            keys += n;
            levels += n.max(1);
            empty |= n == 0;
        }
        self.keys.clear();
        self.keys.resize(keys, 0);
        // An entry's repetition level is 1 but a row's first's, 0; its
        // definition level 3, an empty map's 1.
        self.reps.clear();
        self.reps.resize(levels, 1);
        self.defs.clear();
        if empty {
            self.defs.resize(levels, 3);
        }
        let (mut k, mut l) = (0, 0);
        for &row in &self.rows {
            let row_keys = map(&self.shapes[row as usize]);
            self.reps[l] = 0;
            match row_keys[..] {
                [] => {
                    self.defs[l] = 1;
                    l += 1;
                }
                [a] => {
                    self.keys[k] = a;
                    k += 1;
                    l += 1;
                }
                [a, b] => {
                    self.keys[k] = a;
                    self.keys[k + 1] = b;
                    k += 2;
                    l += 2;
                }
                ref more => {
                    self.keys[k..k + more.len()].copy_from_slice(more);
                    k += more.len();
                    l += more.len();
                }
            }
        }
        debug_assert_eq!((k, l), (keys, levels));
    }

    /// Forgets the shapes (the next row group numbers its keys anew).
    pub fn clear(&mut self) {
        debug_assert!(self.rows.is_empty());
        self.shapes.truncate(1);
        self.strings = false;
    }
}
