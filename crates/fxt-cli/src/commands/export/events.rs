//! The columns every event table begins with, built as columns: a row
//! gives its key ([`super::keys`]: what decides its provider, thread,
//! category and name), and appends only the number of that key in the
//! row group and its `ts`. A key's strings are looked up in their
//! columns' dictionaries once, when the row group first meets it; at the
//! row group's end each column is expanded from the key numbers in one
//! pass. No string is compared and no level pushed per row, and runs of
//! one key cost no more than keys taking turns.
//!
//! A key first met at its row numbers its strings in the order the rows
//! bring them, so the dictionaries, and the pages, are the ones a string
//! pushed per row would give.

use rustc_hash::FxHashMap;

use super::encode::{Dictionary, Leaf, Levels, NumLeaf, Values};
use super::keys::{EventKey, NO_KEY};
use super::summary::Summary;
use super::table::{Col, Columns};
use crate::error::Error;

/// The string columns a key decides, in schema order but for the koids:
/// `trace`, `host`, `provider`, `process`, `thread`, `category`, `name`.
const TEXTS: usize = 7;

/// A key's string id in a column where its value is null.
const NULL: u32 = u32::MAX;

/// A key as the row group's numbers hold it: compared word by word (an
/// array's `==` calls `memcmp`, a call per row).
#[derive(Clone, Copy)]
struct Key(EventKey);

impl std::hash::Hash for Key {
    #[inline(always)]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.iter().for_each(|&w| state.write_u64(w));
    }
}

impl PartialEq for Key {
    #[inline(always)]
    fn eq(&self, other: &Key) -> bool {
        (0..5).fold(0, |diff, k| diff | (self.0[k] ^ other.0[k])) == 0
    }
}

impl Eq for Key {}

/// Slots of [`EventLeaves::recent`].
const RECENT: usize = 256;

impl Key {
    /// The key's slot in [`EventLeaves::recent`]: its words mixed by a
    /// multiply, the top bits.
    #[inline(always)]
    fn slot(&self) -> usize {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let mixed = self.0.iter().fold(0u64, |h, &w| (h ^ w).wrapping_mul(K));
        (mixed >> (64 - RECENT.trailing_zeros())) as usize
    }
}

/// An event row's first columns: its key's and its `ts`.
pub struct Event<'a> {
    /// The key (its last word 0: none, the row's strings looked up as
    /// they are).
    pub key: EventKey,
    /// `trace`, `host`, `provider`, `process`, `thread`, `category` and
    /// `name` (`None`: null), which the key decides.
    pub texts: [Option<&'a str>; TEXTS],
    /// `pid` and `tid`, which the key decides.
    pub koids: [i64; 2],
    /// Nanoseconds (a slice: when it began).
    pub ts: Option<i64>,
}

/// The leaves of [`Event`]'s columns: the row group's keys and each
/// row's key number.
pub struct EventLeaves {
    /// The number of each key met in the row group.
    numbers: FxHashMap<Key, u32>,
    /// Keys met lately and their numbers, by a few bits of the key (a
    /// trace's rows take turns among a few keys: found without hashing
    /// and probing); an empty slot holds no key ([`NO_KEY`]).
    recent: Box<[(Key, u32); RECENT]>,
    /// Per key number: its strings' ids in their columns' dictionaries.
    ids: Vec<[u32; TEXTS]>,
    /// Per key number: its koids.
    koids: Vec<[i64; 2]>,
    /// The string columns' dictionaries.
    dictionaries: [Dictionary; TEXTS],
    /// Each row's key number.
    rows: Vec<u32>,
    ts: NumLeaf<i64>,
}

impl EventLeaves {
    /// The number of `e`'s key, numbered (its strings looked up) if new:
    /// what rows of `e` appended with [`EventLeaves::push_numbered`] carry
    /// (valid until the row group is finished).
    #[inline]
    pub fn number(&mut self, e: &Event<'_>) -> u32 {
        if e.key[4] == 0 {
            return self.add(e);
        }
        let key = Key(e.key);
        let slot = key.slot();
        let (seen, n) = self.recent[slot];
        if seen == key {
            return n;
        }
        let n = match self.numbers.get(&key) {
            Some(&n) => n,
            None => {
                let n = self.add(e);
                self.numbers.insert(key, n);
                n
            }
        };
        self.recent[slot] = (key, n);
        n
    }

    /// Appends a row of key number `n` and `ts`.
    #[inline(always)]
    pub fn push_numbered(&mut self, n: u32, ts: Option<i64>) {
        self.rows.push(n);
        match ts {
            Some(ts) => {
                self.ts.levels.push_top(true);
                self.ts.value(ts);
            }
            None => self.ts.levels.push_top(false),
        }
    }

    /// Numbers `e`'s values as a key of their own.
    #[inline(never)]
    fn add(&mut self, e: &Event<'_>) -> u32 {
        let mut ids = [NULL; TEXTS];
        for ((id, text), dictionary) in ids.iter_mut().zip(e.texts).zip(&mut self.dictionaries) {
            if let Some(s) = text {
                *id = dictionary.id(s.as_bytes());
            }
        }
        self.ids.push(ids);
        self.koids.push(e.koids);
        (self.ids.len() - 1) as u32
    }

    /// String column `c`'s leaf, expanded from the rows' key numbers.
    fn text_leaf(&mut self, c: usize) -> Leaf {
        let ids = &self.ids;
        let page = self.dictionaries[c].finish();
        let first = ids.first().map_or(NULL, |k| k[c]);
        if first != NULL && ids.iter().all(|k| k[c] == first) {
            // One value in every row (a trace's, a host's, most often a
            // provider's and category's): the rows' numbers not read, nor
            // an id per row written.
            return Leaf {
                levels: self.levels(Vec::new()),
                values: Values::Same {
                    page,
                    id: first,
                    count: self.rows.len(),
                },
            };
        }
        let (defs, values) = if ids.iter().all(|k| k[c] == NULL) {
            // Null in every row (a thread's name where the trace names
            // none): the rows' numbers not read.
            (vec![0; self.rows.len()], Vec::new())
        } else if ids.iter().any(|k| k[c] == NULL) {
            let defs = self
                .rows
                .iter()
                .map(|&k| u8::from(ids[k as usize][c] != NULL))
                .collect();
            let values = self
                .rows
                .iter()
                .map(|&k| ids[k as usize][c])
                .filter(|&id| id != NULL)
                .collect();
            (defs, values)
        } else {
            let column: Vec<u32> = ids.iter().map(|k| k[c]).collect();
            (Vec::new(), by_key(&self.rows, &column))
        };
        Leaf {
            levels: self.levels(defs),
            values: Values::Dict { page, ids: values },
        }
    }

    /// Koid column `c`'s leaf (0: `pid`, 1: `tid`), expanded from the
    /// rows' key numbers.
    fn koid_leaf(&self, c: usize) -> Leaf {
        let first = self.koids.first().map_or(0, |k| k[c]);
        let values = if self.koids.iter().all(|k| k[c] == first) {
            vec![first; self.rows.len()]
        } else {
            let column: Vec<i64> = self.koids.iter().map(|k| k[c]).collect();
            by_key(&self.rows, &column)
        };
        Leaf {
            levels: self.levels(Vec::new()),
            values: Values::I64(values),
        }
    }

    /// A top-level column's levels over the rows: `defs`, or none kept
    /// (every value present).
    fn levels(&self, defs: Vec<u8>) -> Levels {
        let mut levels = Levels::new(1, false);
        levels.count = self.rows.len();
        levels.defs = defs;
        levels
    }
}

/// Each row's value of a column whose value per key number is `column`
/// (`rows`: each row's key number, every one numbered there): the
/// column's values in a table of their own (a row group has few keys), a
/// row's bounds checked by a comparison, not a branch.
fn by_key<T: Copy + Default>(rows: &[u32], column: &[T]) -> Vec<T> {
    rows.iter()
        .map(|&k| column.get(k as usize).copied().unwrap_or_default())
        .collect()
}

impl Columns for Event<'_> {
    type Builders = EventLeaves;

    fn declare(_: &'static str, out: &mut Vec<(&'static str, Col)>) {
        out.extend([
            ("trace", Col::Str),
            ("host", Col::Str),
            ("provider", Col::Str),
            ("pid", Col::I64),
            ("process", Col::Str),
            ("tid", Col::I64),
            ("thread", Col::Str),
            ("category", Col::Str),
            ("name", Col::Str),
            ("ts", Col::I64),
        ]);
    }

    fn builders() -> EventLeaves {
        EventLeaves {
            numbers: FxHashMap::default(),
            recent: Box::new([(Key(NO_KEY), 0); RECENT]),
            ids: Vec::new(),
            koids: Vec::new(),
            dictionaries: Default::default(),
            rows: Vec::new(),
            ts: NumLeaf::new(1, false),
        }
    }

    #[inline]
    fn append(&self, b: &mut EventLeaves, _: &mut Summary) -> Result<(), Error> {
        let n = b.number(self);
        b.push_numbered(n, self.ts);
        Ok(())
    }

    fn finish(b: &mut EventLeaves, out: &mut Vec<Leaf>) {
        // Schema order: trace, host, provider, pid, process, tid, thread,
        // category, name, ts.
        let trace = b.text_leaf(0);
        let host = b.text_leaf(1);
        let provider = b.text_leaf(2);
        let pid = b.koid_leaf(0);
        let process = b.text_leaf(3);
        let tid = b.koid_leaf(1);
        let thread = b.text_leaf(4);
        let category = b.text_leaf(5);
        let name = b.text_leaf(6);
        out.extend([
            trace, host, provider, pid, process, tid, thread, category, name,
        ]);
        out.push(b.ts.finish());
        // The next row group numbers its keys anew.
        b.numbers.clear();
        b.recent.fill((Key(NO_KEY), 0));
        b.ids.clear();
        b.koids.clear();
        b.rows.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::by_key;

    #[test]
    fn each_row_gets_its_keys_value() {
        let column = [10i64, 20, 30];
        assert_eq!(by_key(&[1, 0, 2, 2, 1], &column), [20, 10, 30, 30, 20]);
        assert_eq!(by_key(&[], &column), Vec::<i64>::new());
        let ids = [7u32, 9];
        assert_eq!(by_key(&[0, 1, 1, 0], &ids), [7, 9, 9, 7]);
    }
}
