//! What an export kept out of the tables, counted, and the summary printed
//! at its end: nothing is left out silently.

use std::collections::BTreeMap;

use crate::problems::Reason;

/// Counts over every input of one export.
#[derive(Default)]
pub struct Summary {
    /// Inputs read.
    pub inputs: u64,
    /// Records decoded.
    pub records: u64,
    /// Records left out by `fxt recover`'s rules, per reason.
    pub left_out: BTreeMap<Reason, u64>,
    /// Inputs whose framing was damaged, and the bytes after the damage.
    pub damaged_inputs: u64,
    /// Bytes after the damage, not read.
    pub unread_bytes: u64,
    /// Async ends with no open async begin of the same key.
    pub async_ends_without_begin: u64,
    /// Async begins never ended.
    pub async_never_ended: u64,
    /// Slices not in end order on their thread (their nesting is the
    /// nearest enclosing slice recorded later).
    pub nesting_out_of_order: u64,
    /// "Buffer filled up" provider events: the writer dropped records.
    pub buffer_filled: u64,
    /// Arguments whose name a record repeats (the first is kept).
    pub repeated_arg_names: u64,
    /// Arguments of a type the decoder does not know.
    pub unknown_arg_types: u64,
    /// Counter arguments that are not numbers.
    pub non_numeric_counter_values: u64,
    /// Records no table holds (logs, blobs, userspace objects, unknown
    /// records), per record type.
    pub not_exported: BTreeMap<&'static str, u64>,
}

impl Summary {
    /// Adds the counts of `other` (another thread's inputs). Destructured:
    /// a new count cannot be left out of the sum.
    pub fn add(&mut self, other: Summary) {
        let Summary {
            inputs,
            records,
            left_out,
            damaged_inputs,
            unread_bytes,
            async_ends_without_begin,
            async_never_ended,
            nesting_out_of_order,
            buffer_filled,
            repeated_arg_names,
            unknown_arg_types,
            non_numeric_counter_values,
            not_exported,
        } = other;
        self.inputs += inputs;
        self.records += records;
        for (reason, n) in left_out {
            *self.left_out.entry(reason).or_default() += n;
        }
        self.damaged_inputs += damaged_inputs;
        self.unread_bytes += unread_bytes;
        self.async_ends_without_begin += async_ends_without_begin;
        self.async_never_ended += async_never_ended;
        self.nesting_out_of_order += nesting_out_of_order;
        self.buffer_filled += buffer_filled;
        self.repeated_arg_names += repeated_arg_names;
        self.unknown_arg_types += unknown_arg_types;
        self.non_numeric_counter_values += non_numeric_counter_values;
        for (t, n) in not_exported {
            *self.not_exported.entry(t).or_default() += n;
        }
    }

    /// Prints the summary on stderr: the rows per table, then every count
    /// that is not zero.
    pub fn print(&self, rows: &[(&'static str, u64)], out: &str) {
        let tables: Vec<String> = rows.iter().map(|(t, n)| format!("{n} {t}")).collect();
        eprintln!(
            "fxt: exported {} input{} ({} records) to {out}: {}",
            self.inputs,
            if self.inputs == 1 { "" } else { "s" },
            self.records,
            tables.join(", ")
        );
        for (reason, n) in &self.left_out {
            eprintln!(
                "fxt:   left out {n} (as fxt recover would): {}",
                reason.describe()
            );
        }
        let counts = [
            (self.damaged_inputs, "damaged inputs, read up to the damage"),
            (self.unread_bytes, "bytes after damage not read"),
            (self.async_ends_without_begin, "async ends without a begin, left out"),
            (self.async_never_ended, "async begins never ended, left out"),
            (
                self.nesting_out_of_order,
                "slices recorded out of end order on their thread (depth and parent: the nearest enclosing slice recorded after them)",
            ),
            (self.buffer_filled, "'buffer filled up' events: the writer dropped records"),
            (self.repeated_arg_names, "repeated argument names (first value kept)"),
            (self.unknown_arg_types, "arguments of unknown types, left out"),
            (self.non_numeric_counter_values, "counter values that are not numbers, left out"),
        ];
        for (n, what) in counts {
            if n > 0 {
                eprintln!("fxt:   {n} {what}");
            }
        }
        for (t, n) in &self.not_exported {
            eprintln!("fxt:   {n} {t} records in no table");
        }
    }
}
