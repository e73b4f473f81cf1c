//! Rows of argument maps held back by their shape's number: a row whose
//! arguments are all integers named by index ([`super::shape`]), or
//! that has none, appends only its shape's number in the row group and
//! its values. The rows held are expanded into the maps' leaves in one
//! pass when a row of another kind comes or the row group ends: each
//! map's keys, levels and values written as blocks, not entry by entry
//! (a row's keys, levels and digits copied one small block at a time
//! cost a call each).
//!
//! The leaves get what appending the rows one by one gives them: the
//! same keys (numbered when the shape was found), levels and values, in
//! the same order.

use crate::commands::export::encode::{KeyLeaf, NumLeaf, TextLeaf};

/// The number of the shape of a row without arguments.
pub const NO_ARGS: u32 = 0;

/// Shapes compared with one found anew before it is numbered as a new
/// one (rows take turns among a few).
const LOOKED_AT: usize = 64;

/// The rows held and the shapes they have.
pub struct Held {
    /// Per shape number: its kept arguments' keys, in order.
    shapes: Vec<Vec<u32>>,
    /// Each row's shape number.
    rows: Vec<u32>,
    /// The rows' kept values, in order.
    values: Vec<i64>,
    /// The keys, definition and repetition levels of the maps' entries
    /// being expanded (kept for the next expansion's room).
    keys: Vec<u32>,
    defs: Vec<u8>,
    reps: Vec<u8>,
}

impl Default for Held {
    fn default() -> Held {
        Held {
            shapes: vec![Vec::new()],
            rows: Vec::new(),
            values: Vec::new(),
            keys: Vec::new(),
            defs: Vec::new(),
            reps: Vec::new(),
        }
    }
}

impl Held {
    /// The number of the shape whose kept keys are `keys`, numbered if
    /// new.
    pub fn number(&mut self, keys: &[u32]) -> u32 {
        let found = self
            .shapes
            .iter()
            .take(LOOKED_AT)
            .position(|shape| shape == keys);
        match found {
            Some(n) => n as u32,
            None => {
                self.shapes.push(keys.to_vec());
                (self.shapes.len() - 1) as u32
            }
        }
    }

    /// Holds a row of shape `shape` and kept values `values`.
    #[inline(always)]
    pub fn push(&mut self, shape: u32, values: impl Iterator<Item = i64>) {
        self.rows.push(shape);
        self.values.extend(values);
    }

    /// Holds a row without arguments.
    #[inline(always)]
    pub fn push_empty(&mut self) {
        self.rows.push(NO_ARGS);
    }

    /// Appends the rows held to the maps' leaves (text, integer, double),
    /// and holds none.
    pub fn expand(
        &mut self,
        text: &mut (KeyLeaf, TextLeaf),
        ints: &mut (KeyLeaf, NumLeaf<i64>),
        floats: &mut NumLeaf<f64>,
    ) {
        if self.rows.is_empty() {
            return;
        }
        self.entries();
        let defs = (self.defs.len() == self.reps.len()).then_some(&self.defs[..]);
        let count = self.reps.len();
        for (keys, values) in [
            (&mut text.0, &mut text.1.levels),
            (&mut ints.0, &mut ints.1.levels),
        ] {
            keys.extend(&self.keys);
            values.extend(defs, &self.reps, count);
        }
        for &v in &self.values {
            text.1.int(v);
        }
        ints.1.extend(&self.values);
        // Every row's double map is empty: definition level 1, the row's
        // first.
        let rows = self.rows.len();
        self.defs.clear();
        self.defs.resize(rows, 1);
        self.reps.clear();
        self.reps.resize(rows, 0);
        floats.levels.extend(Some(&self.defs), &self.reps, rows);
        self.rows.clear();
        self.values.clear();
    }

    /// The keys and levels of the rows' entries, into [`Held::keys`],
    /// [`Held::reps`] and [`Held::defs`] (left empty if every map has
    /// entries: all at the greatest level). Rows of one shape come in
    /// runs, each expanded as a block.
    fn entries(&mut self) {
        self.keys.clear();
        self.defs.clear();
        self.reps.clear();
        let mut empty = false;
        for run in self.rows.chunk_by(|a, b| a == b) {
            let keys = &self.shapes[run[0] as usize];
            match keys.len() {
                0 => {
                    empty = true;
                    self.reps.resize(self.reps.len() + run.len(), 0);
                }
                n => {
                    self.keys
                        .extend(std::iter::repeat_n(keys, run.len()).flatten());
                    let first = (0..n).map(|k| u8::from(k > 0));
                    self.reps
                        .extend(std::iter::repeat_n(first, run.len()).flatten());
                }
            }
        }
        if empty {
            // An empty map is definition level 1, an entry 3.
            let (shapes, defs) = (&self.shapes, &mut self.defs);
            for run in self.rows.chunk_by(|a, b| a == b) {
                match shapes[run[0] as usize].len() {
                    0 => defs.resize(defs.len() + run.len(), 1),
                    n => defs.resize(defs.len() + n * run.len(), 3),
                }
            }
        }
    }

    /// Forgets the shapes (the next row group numbers its keys anew).
    pub fn clear(&mut self) {
        debug_assert!(self.rows.is_empty());
        self.shapes.truncate(1);
    }
}
