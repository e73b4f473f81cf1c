//! The values of one leaf column (a scalar column, a map's keys or values,
//! a list's items) in the row group being built, as the pages will hold
//! them: definition and repetition levels, and the values that are
//! present, strings as dictionary ids.
//!
//! A level is pushed per row (per entry of a map or list), a value only
//! when it is present, as Parquet stores them.

use super::decimal;
use super::delta::{Coded, Delta};
use super::dictionary::{Dictionary, Page, Recent};
use super::take_like;

/// The levels of a leaf. Definition levels are kept only once one is not
/// the maximum (a column without nulls has none to keep), repetition
/// levels only for a leaf inside a map or list.
pub struct Levels {
    /// Levels pushed.
    pub count: usize,
    /// The greatest definition level (a value present).
    pub max_def: u8,
    /// Whether the leaf repeats (has repetition levels).
    pub nested: bool,
    /// Definition levels, or empty while all are `max_def`.
    pub defs: Vec<u8>,
    /// Repetition levels (of a nested leaf).
    pub reps: Vec<u8>,
}

impl Levels {
    /// The levels of a leaf whose present values have definition level
    /// `max_def`.
    pub fn new(max_def: u8, nested: bool) -> Levels {
        Levels {
            count: 0,
            max_def,
            nested,
            defs: Vec::new(),
            reps: Vec::new(),
        }
    }

    /// Spells out the definition levels pushed so far (all `max_def`
    /// while none was kept), so that those pushed next can be kept: what
    /// a level that is not the greatest needs before it is pushed. With
    /// none pushed yet, kept and not kept look alike: the caller knows
    /// which it wants.
    #[inline(always)]
    pub fn keep_defs(&mut self) {
        if self.defs.is_empty() {
            self.defs.resize(self.count, self.max_def);
        }
    }

    /// Pushes a definition level (and, if nested, a repetition level).
    #[inline(always)]
    pub fn push(&mut self, def: u8, rep: u8) {
        if !self.defs.is_empty() {
            self.defs.push(def);
        } else if def != self.max_def {
            self.keep_defs();
            self.defs.push(def);
        }
        if self.nested {
            self.reps.push(rep);
        }
        self.count += 1;
    }

    /// Pushes the levels of a map's `entries` entries (at least one), all
    /// present: the first begins the row, the others repeat.
    #[inline]
    pub fn push_entries(&mut self, entries: usize) {
        debug_assert!(self.nested && entries > 0);
        if !self.defs.is_empty() {
            self.defs.resize(self.defs.len() + entries, self.max_def);
        }
        self.reps.push(0);
        self.reps.resize(self.reps.len() + entries - 1, 1);
        self.count += entries;
    }

    /// Pushes `n` levels, each definition level `def` (and, if nested,
    /// repetition level `rep`): what pushing them one at a time gives.
    #[inline]
    pub fn push_run(&mut self, def: u8, rep: u8, n: usize) {
        // Kept before it is known whether any was (none pushed: kept and
        // not kept look alike).
        if def != self.max_def || !self.defs.is_empty() {
            self.keep_defs();
            self.defs.resize(self.defs.len() + n, def);
        }
        if self.nested {
            self.reps.resize(self.reps.len() + n, rep);
        }
        self.count += n;
    }

    /// Pushes levels given as blocks: definition levels `defs` (`None`:
    /// all `max_def`) and, if nested, repetition levels `reps` (as many;
    /// a top-level leaf's count is `defs`' length, or `count` if none).
    /// What pushing them one at a time gives, in a few copies.
    pub fn extend(&mut self, defs: Option<&[u8]>, reps: &[u8], count: usize) {
        debug_assert!(defs.is_none_or(|d| d.len() == count));
        debug_assert!(!self.nested || reps.len() == count);
        match defs {
            Some(defs) => {
                if self.defs.is_empty() {
                    if defs.iter().all(|&d| d == self.max_def) {
                        return self.extend(None, reps, count);
                    }
                    self.defs.resize(self.count, self.max_def);
                }
                self.defs.extend_from_slice(defs);
            }
            None => {
                if !self.defs.is_empty() {
                    self.defs.resize(self.defs.len() + count, self.max_def);
                }
            }
        }
        if self.nested {
            self.reps.extend_from_slice(reps);
        }
        self.count += count;
    }

    /// Pushes the level of a top-level column's value (`present`) or
    /// null: definition level 1 or 0, no repetition level.
    #[inline(always)]
    pub fn push_top(&mut self, present: bool) {
        debug_assert!(self.max_def == 1 && !self.nested);
        if !self.defs.is_empty() {
            self.defs.push(u8::from(present));
        } else if !present {
            self.defs.resize(self.count, 1);
            self.defs.push(0);
        }
        self.count += 1;
    }

    /// Pushes `n` more copies of a top-level column's last row (one was
    /// pushed since the last [`Levels::take`]): its level, and its value,
    /// the last of the leaf's `values`, if present.
    #[inline]
    fn repeat_top<T: Copy>(&mut self, values: &mut Vec<T>, n: usize) {
        debug_assert!(self.max_def == 1 && !self.nested && self.count > 0);
        let present = match self.defs.last() {
            Some(&last) => {
                self.defs.resize(self.defs.len() + n, last);
                last == self.max_def
            }
            None => true,
        };
        if let (true, Some(&v)) = (present, values.last()) {
            values.resize(values.len() + n, v);
        }
        self.count += n;
    }

    /// The levels of a map's keys from its values' levels: the same
    /// repetition levels, and the same definition levels but that a key
    /// is present (one less than its value's maximum) where its value is
    /// null. A map's keys and values are pushed entry by entry together,
    /// so only the values' are kept.
    fn keys_of(values: &Levels) -> Levels {
        let max_def = values.max_def - 1;
        Levels {
            count: values.count,
            max_def,
            nested: values.nested,
            defs: values.defs.iter().map(|&d| d.min(max_def)).collect(),
            reps: values.reps.clone(),
        }
    }

    /// Levels whose definition level is below the maximum: the nulls a
    /// column's statistics count.
    pub fn nulls(&self) -> usize {
        // Counted in 32-bit lanes a block at a time (a count in 64-bit
        // lanes widens every byte twice over).
        self.defs
            .chunks(1 << 16)
            .map(|block| {
                block
                    .iter()
                    .map(|&d| u32::from(d != self.max_def))
                    .sum::<u32>() as usize
            })
            .sum()
    }

    /// Takes the levels, leaving room for as many.
    fn take(&mut self) -> Levels {
        let taken = Levels {
            count: self.count,
            max_def: self.max_def,
            nested: self.nested,
            defs: std::mem::take(&mut self.defs),
            reps: take_like(&mut self.reps),
        };
        self.count = 0;
        taken
    }
}

/// A leaf's present values.
pub enum Values {
    /// Strings, as ids into the row group's dictionary.
    Dict {
        /// The dictionary page.
        page: Page,
        /// One id per present value.
        ids: Vec<u32>,
    },
    /// Strings, every one the same id into the row group's dictionary (a
    /// column that names one thing in every row: no id per row kept).
    Same {
        /// The dictionary page.
        page: Page,
        /// The id of every value.
        id: u32,
        /// Values present.
        count: usize,
    },
    /// Strings, PLAIN-encoded (each a 4-byte length and its bytes).
    Text(Vec<u8>),
    /// Integers delta-coded as they arrived ([`NumLeaf`]'s).
    Delta(Coded),
    /// 64-bit integers.
    I64(Vec<i64>),
    /// 32-bit integers.
    I32(Vec<i32>),
    /// Doubles.
    F64(Vec<f64>),
}

/// A leaf column of one row group, ready to encode.
pub struct Leaf {
    /// Its levels.
    pub levels: Levels,
    /// Its present values.
    pub values: Values,
}

/// A leaf of strings, dictionary-encoded.
pub struct StrLeaf {
    /// Its levels.
    pub levels: Levels,
    dictionary: Dictionary,
    ids: Vec<u32>,
    /// The last few values, if short enough to compare from here (a
    /// column's next value is most often one of its last).
    recent: Recent,
}

impl StrLeaf {
    /// A leaf of strings present at definition level `max_def`.
    pub fn new(max_def: u8, nested: bool) -> StrLeaf {
        StrLeaf {
            levels: Levels::new(max_def, nested),
            dictionary: Dictionary::default(),
            ids: Vec::new(),
            recent: Recent::default(),
        }
    }

    /// Adds a present value (its level pushed apart).
    #[inline(always)]
    pub fn value(&mut self, s: &str) {
        let id = self.dictionary.id_recent(&mut self.recent, s.as_bytes());
        self.ids.push(id);
    }

    /// Adds `n` more copies of a top-level column's last row (there is
    /// one since the last [`StrLeaf::finish`]), level and id.
    pub fn repeat_last(&mut self, n: usize) {
        self.levels.repeat_top(&mut self.ids, n);
    }

    /// Takes the row group's leaf.
    pub fn finish(&mut self) -> Leaf {
        // The next row group numbers its values anew.
        self.recent = Recent::default();
        let ids = take_like(&mut self.ids);
        Leaf {
            levels: self.levels.take(),
            values: Values::Dict {
                page: self.dictionary.finish(),
                ids,
            },
        }
    }
}

/// The keys of a map: strings numbered by a dictionary the map shares
/// with others (each column chunk gets a copy of the whole page: a
/// dictionary may hold values a chunk does not use). Their levels are not
/// kept: a key has its value's ([`KeyLeaf::finish`]).
#[derive(Default)]
pub struct KeyLeaf {
    ids: Vec<u32>,
}

impl KeyLeaf {
    /// Adds a key, by its id in the shared dictionary (its value's level
    /// pushed apart).
    #[inline]
    pub fn id(&mut self, id: u32) {
        self.ids.push(id);
    }

    /// Adds keys, by their ids.
    #[inline]
    pub fn extend(&mut self, ids: &[u32]) {
        self.ids.extend_from_slice(ids);
    }

    /// The keys' ids so far, to append to in place (each an id in the
    /// shared dictionary, its value's level pushed apart).
    #[inline]
    pub fn ids_mut(&mut self) -> &mut Vec<u32> {
        &mut self.ids
    }

    /// Takes the row group's keys, with the shared dictionary's `page`;
    /// their levels are their values' `values` (taken after).
    pub fn finish(&mut self, page: Page, values: &Levels) -> Leaf {
        Leaf {
            levels: Levels::keys_of(values),
            values: Values::Dict {
                page,
                ids: take_like(&mut self.ids),
            },
        }
    }
}

/// A leaf of strings, PLAIN-encoded: values that are nearly all
/// distinct, which a dictionary would only hold once more.
pub struct TextLeaf {
    /// Its levels.
    pub levels: Levels,
    plain: Vec<u8>,
}

impl TextLeaf {
    /// A leaf of strings present at definition level `max_def`.
    pub fn new(max_def: u8, nested: bool) -> TextLeaf {
        TextLeaf {
            levels: Levels::new(max_def, nested),
            plain: Vec::new(),
        }
    }

    /// Adds a present value written by `write` (straight into the page's
    /// bytes: no copy of its own).
    #[inline]
    pub fn value_with(&mut self, write: impl FnOnce(&mut Plain<'_>)) {
        let at = self.plain.len();
        self.plain.extend_from_slice(&[0; 4]);
        write(&mut Plain(&mut self.plain));
        let len = (self.plain.len() - at - 4) as u32;
        self.plain[at..at + 4].copy_from_slice(&len.to_le_bytes());
    }

    /// Adds an integer's decimal text (its level pushed apart).
    #[inline(always)]
    pub fn int(&mut self, v: impl itoa::Integer) {
        let mut digits = itoa::Buffer::new();
        let digits = digits.format(v).as_bytes();
        self.plain
            .extend_from_slice(&(digits.len() as u32).to_le_bytes());
        self.plain.extend_from_slice(digits);
    }

    /// Adds an `i64`'s decimal text, as [`TextLeaf::int`] does, written
    /// in place in a fixed-size block (its level pushed apart): digits
    /// built apart and copied in would be read back whole right after
    /// being stored in pieces, which stalls.
    #[inline(always)]
    pub fn i64(&mut self, v: i64) {
        let at = self.plain.len();
        self.plain.extend_from_slice(&[0; decimal::BLOCK]);
        let block = self.plain[at..].first_chunk_mut().expect("a block added");
        let len = decimal::plain(v, block);
        self.plain.truncate(at + len);
    }

    /// Takes the row group's leaf.
    pub fn finish(&mut self) -> Leaf {
        Leaf {
            levels: self.levels.take(),
            values: Values::Text(take_like(&mut self.plain)),
        }
    }
}

/// The bytes of a PLAIN string being written.
pub struct Plain<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Plain<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// A number a leaf holds.
pub trait Number: Copy {
    /// Whether a leaf's values are delta-coded as they arrive (integers).
    const CODED: bool;
    /// The values of a leaf of this type: `values`, or `coded` and the
    /// values after those coded (the last coded first).
    fn values(values: &mut Vec<Self>, coded: &mut Coded) -> Values;
    /// Codes `values`' whole blocks ([`Coded::code`]).
    fn code(values: &[Self], coded: &mut Coded) -> usize;
    /// A column of no values of this type yet.
    fn coded() -> Coded;
}

/// [`Number::values`] of integers.
fn coded_values<T: Delta>(values: &mut Vec<T>, coded: &mut Coded) -> Values {
    coded.code(values, true);
    values.clear();
    Values::Delta(coded.take())
}

impl Number for i64 {
    const CODED: bool = true;
    fn values(values: &mut Vec<i64>, coded: &mut Coded) -> Values {
        coded_values(values, coded)
    }
    fn code(values: &[i64], coded: &mut Coded) -> usize {
        coded.code(values, false)
    }
    fn coded() -> Coded {
        Coded::new(false)
    }
}

impl Number for i32 {
    const CODED: bool = true;
    fn values(values: &mut Vec<i32>, coded: &mut Coded) -> Values {
        coded_values(values, coded)
    }
    fn code(values: &[i32], coded: &mut Coded) -> usize {
        coded.code(values, false)
    }
    fn coded() -> Coded {
        Coded::new(true)
    }
}

impl Number for f64 {
    const CODED: bool = false;
    fn values(values: &mut Vec<f64>, _: &mut Coded) -> Values {
        Values::F64(take_like(values))
    }
    fn code(_: &[f64], _: &mut Coded) -> usize {
        0
    }
    fn coded() -> Coded {
        Coded::new(false)
    }
}

/// A leaf of numbers: integers delta-coded a block at a time as they
/// arrive ([`Coded`]), doubles kept to be PLAIN-encoded.
pub struct NumLeaf<T> {
    /// Its levels.
    pub levels: Levels,
    /// Values not coded yet (integers: the last one coded first, then
    /// about [`CODE_EVERY`] at most).
    values: Vec<T>,
    coded: Coded,
}

/// Integers held before their whole blocks are coded: enough that a
/// block's call is rare, few enough that they stay in the core's cache.
const CODE_EVERY: usize = 1024;

impl<T: Number> NumLeaf<T> {
    /// A leaf of numbers present at definition level `max_def`.
    pub fn new(max_def: u8, nested: bool) -> NumLeaf<T> {
        NumLeaf {
            levels: Levels::new(max_def, nested),
            values: Vec::new(),
            coded: T::coded(),
        }
    }

    /// Adds a present value (its level pushed apart).
    #[inline(always)]
    pub fn value(&mut self, v: T) {
        self.values.push(v);
        self.code_if_full();
    }

    /// Adds present values (their levels pushed apart).
    #[inline]
    pub fn extend(&mut self, v: &[T]) {
        self.values.extend_from_slice(v);
        self.code_if_full();
    }

    /// Adds `n` more copies of a top-level column's last row (there is
    /// one since the last [`NumLeaf::finish`]), level and value.
    pub fn repeat_last(&mut self, n: usize) {
        self.levels.repeat_top(&mut self.values, n);
        self.code_if_full();
    }

    /// Codes the integers held, if there are enough.
    #[inline(always)]
    fn code_if_full(&mut self) {
        if T::CODED && self.values.len() > CODE_EVERY {
            self.code();
        }
    }

    /// Codes the integers held, but the last (the next block starts from
    /// it) and those after the last whole block.
    #[inline(never)]
    fn code(&mut self) {
        let done = T::code(&self.values, &mut self.coded);
        self.values.drain(..done);
    }

    /// Takes the row group's leaf.
    pub fn finish(&mut self) -> Leaf {
        Leaf {
            levels: self.levels.take(),
            values: T::values(&mut self.values, &mut self.coded),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leaf_numbers_values_that_come_back_with_their_first_id() {
        let mut leaf = StrLeaf::new(1, false);
        let long = "a value longer than sixteen bytes";
        for v in ["ab", "ab", "abc", "ab", long, long, "", "abc"] {
            leaf.levels.push(1, 0);
            leaf.value(v);
        }
        let Leaf {
            values: Values::Dict { page, ids },
            levels,
        } = leaf.finish()
        else {
            panic!("not a dictionary leaf");
        };
        assert_eq!(ids, [0, 0, 1, 0, 2, 2, 3, 1]);
        assert_eq!(page.value(2), long.as_bytes());
        assert_eq!(levels.count, 8);
        // The next row group starts its dictionary over.
        leaf.value("abc");
        let Values::Dict { ids, .. } = leaf.finish().values else {
            panic!("not a dictionary leaf");
        };
        assert_eq!(ids, [0]);
    }

    #[test]
    fn a_maps_keys_have_its_values_levels_but_where_a_value_is_null() {
        // Rows: an empty map; two entries, the second's value null; one entry.
        let mut values = Levels::new(3, true);
        for (def, rep) in [(1, 0), (3, 0), (2, 1), (3, 0)] {
            values.push(def, rep);
        }
        let mut keys = KeyLeaf::default();
        keys.id(0);
        keys.id(1);
        keys.id(0);
        let leaf = keys.finish(Dictionary::default().finish(), &values);
        assert_eq!(leaf.levels.max_def, 2);
        assert_eq!(leaf.levels.defs, [1, 2, 2, 2]);
        assert_eq!(leaf.levels.reps, [0, 0, 1, 0]);
        assert_eq!(leaf.levels.count, 4);
        assert_eq!(leaf.levels.nulls(), 1);
        // Values all present: no definition levels kept for either.
        let mut values = Levels::new(3, true);
        values.push(3, 0);
        values.push(3, 1);
        let keys = Levels::keys_of(&values);
        assert!(keys.defs.is_empty());
        assert_eq!(keys.reps, [0, 1]);
    }

    /// A run of levels, the greatest or not, after none, the greatest or
    /// one that is not: what pushing them one at a time gives.
    #[test]
    fn a_run_of_levels_is_the_levels_pushed_one_by_one() {
        for nested in [true, false] {
            for before in [&[][..], &[(3, 0)][..], &[(2, 0)][..]] {
                for (def, rep, n) in [(3, 1, 3), (1, 0, 2), (3, 0, 0)] {
                    let (mut pushed, mut run) = (Levels::new(3, nested), Levels::new(3, nested));
                    for &(d, r) in before {
                        pushed.push(d, r);
                        run.push(d, r);
                    }
                    (0..n).for_each(|_| pushed.push(def, rep));
                    run.push_run(def, rep, n);
                    assert_eq!(
                        (pushed.count, &pushed.defs, &pushed.reps),
                        (run.count, &run.defs, &run.reps),
                        "{nested} {before:?} {def} {rep} {n}"
                    );
                }
            }
        }
    }

    #[test]
    fn levels_extended_by_blocks_are_the_levels_pushed_one_by_one() {
        // A map's rows: two entries, an empty map, one entry.
        let rows: [(u8, u8); 4] = [(3, 0), (3, 1), (1, 0), (3, 0)];
        for before in [&[][..], &[(3, 0)][..], &[(2, 0)][..]] {
            let (mut pushed, mut blocks) = (Levels::new(3, true), Levels::new(3, true));
            for &(d, r) in before {
                pushed.push(d, r);
                blocks.push(d, r);
            }
            for (def, rep) in rows {
                pushed.push(def, rep);
            }
            pushed.push_entries(2);
            let (defs, reps): (Vec<u8>, Vec<u8>) = rows.iter().copied().unzip();
            blocks.extend(Some(&defs), &reps, rows.len());
            blocks.extend(None, &[0, 1], 2);
            assert_eq!(
                (pushed.count, &pushed.defs, &pushed.reps),
                (blocks.count, &blocks.defs, &blocks.reps)
            );
        }
        // All present: still no definition levels kept.
        let mut levels = Levels::new(1, false);
        levels.extend(Some(&[1, 1]), &[], 2);
        assert!(levels.defs.is_empty());
        assert_eq!(levels.count, 2);
        let mut leaf = NumLeaf::<i64>::new(1, false);
        leaf.extend(&[4, 5]);
        leaf.value(6);
        assert_eq!(page_of(leaf.finish().values), encoded(&[4i64, 5, 6]));
    }

    /// The values' bytes of a leaf of integers, as its page holds them.
    fn page_of(values: Values) -> Vec<u8> {
        let Values::Delta(coded) = values else {
            panic!("not a leaf of integers");
        };
        let mut out = Vec::new();
        coded.write(&mut out);
        out
    }

    /// `values` delta-coded at once.
    fn encoded<T: Delta>(values: &[T]) -> Vec<u8> {
        let mut out = Vec::new();
        let wide: Vec<i64> = values.iter().map(|&v| v.into()).collect();
        if std::mem::size_of::<T>() == 4 {
            let narrow: Vec<i32> = wide.iter().map(|&v| v as i32).collect();
            super::super::delta::encode32(&narrow, &mut out);
        } else {
            super::super::delta::encode(&wide, &mut out);
        }
        out
    }

    /// Integers added one by one, a slice or a repeat at a time, across
    /// blocks and row groups: each row group's page is the one its values
    /// coded at once give, and its range theirs.
    fn coded_as_at_once<T: Number + Delta>(from: impl Fn(u64) -> T) {
        let mut next = crate::test_rng::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut leaf = NumLeaf::<T>::new(1, false);
        for len in [0usize, 1, 2, 127, 128, 129, 1024, 1025, 1026, 5000, 70_000] {
            let mut values = Vec::new();
            while values.len() < len {
                let v = from(next());
                match next() % 4 {
                    0 if !values.is_empty() => {
                        let n = (next() % 3000) as usize % (len - values.len() + 1);
                        leaf.levels.push_top(true);
                        leaf.repeat_last(n);
                        values.resize(values.len() + n, *values.last().unwrap());
                    }
                    1 => {
                        let run: Vec<T> = (0..next() % 300).map(|_| from(next())).collect();
                        leaf.extend(&run);
                        values.extend_from_slice(&run);
                    }
                    _ => {
                        leaf.value(v);
                        values.push(v);
                    }
                }
            }
            let Values::Delta(coded) = leaf.finish().values else {
                panic!("not a leaf of integers");
            };
            let range = values.iter().min().zip(values.iter().max());
            let range = range.map(|(&lo, &hi)| (lo.into(), hi.into()));
            assert_eq!(coded.range, range, "{} values", values.len());
            assert_eq!(page_of(Values::Delta(coded)), encoded(&values), "{len}");
        }
    }

    #[test]
    fn integers_coded_as_they_arrive_are_those_coded_at_once() {
        coded_as_at_once(|x| (x % 5000) as i64 - 1000 + (x >> 40) as i64 % 3 * (1 << 40));
        coded_as_at_once(|x| x as i64);
        coded_as_at_once(|x| (x % 70_000) as i32 - 35_000);
        coded_as_at_once(|x| x as i32);
    }

    #[test]
    fn top_level_nulls_keep_definition_levels_from_the_first() {
        let mut levels = Levels::new(1, false);
        levels.push_top(true);
        levels.push_top(true);
        assert!(levels.defs.is_empty());
        levels.push_top(false);
        levels.push_top(true);
        assert_eq!(levels.defs, [1, 1, 0, 1]);
        assert_eq!(levels.count, 4);
        assert!(levels.reps.is_empty());
    }

    #[test]
    fn definition_levels_are_kept_from_the_first_null() {
        let mut levels = Levels::new(1, false);
        levels.push(1, 0);
        levels.push(1, 0);
        assert!(levels.defs.is_empty());
        levels.push(0, 0);
        levels.push(1, 0);
        assert_eq!(levels.defs, [1, 1, 0, 1]);
        assert_eq!(levels.nulls(), 1);
        assert!(levels.reps.is_empty());
    }

    #[test]
    fn a_top_level_columns_last_row_repeats_present_or_null() {
        let mut text = StrLeaf::new(1, false);
        let mut numbers = NumLeaf::<i64>::new(1, false);
        for (value, n) in [
            (Some(("a", 1)), 3),
            (None, 2),
            (Some(("b", 2)), 1),
            (None, 0),
        ] {
            match value {
                Some((s, v)) => {
                    text.levels.push_top(true);
                    text.value(s);
                    numbers.levels.push_top(true);
                    numbers.value(v);
                }
                None => {
                    text.levels.push_top(false);
                    numbers.levels.push_top(false);
                }
            }
            text.repeat_last(n);
            numbers.repeat_last(n);
        }
        let Leaf {
            values: Values::Dict { ids, .. },
            levels,
        } = text.finish()
        else {
            panic!("not a dictionary leaf");
        };
        assert_eq!(ids, [0, 0, 0, 0, 1, 1]);
        assert_eq!(levels.defs, [1, 1, 1, 1, 0, 0, 0, 1, 1, 0]);
        assert_eq!(levels.count, 10);
        assert_eq!(numbers.values, [1, 1, 1, 1, 2, 2]);
        assert_eq!(numbers.levels.defs, levels.defs);
        // Present only: no definition levels kept.
        let mut present = NumLeaf::<i64>::new(1, false);
        present.levels.push_top(true);
        present.value(7);
        present.repeat_last(4);
        assert!(present.levels.defs.is_empty());
        assert_eq!(
            (present.levels.count, &present.values[..]),
            (5, &[7; 5][..])
        );
    }
}
