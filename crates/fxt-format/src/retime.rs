//! Rewriting the timestamps of encoded records in place, for tools that
//! put traces recorded against different clocks on one time base (`fxt
//! record` converts every process's ticks to one clock's nanoseconds).
//!
//! [`retime_record`] finds every timestamp field the spec defines — the
//! timestamp of event, log, scheduling and large blob (with metadata)
//! records and the end time of a duration complete event — by walking the
//! record's words (inline strings, inline thread koids, arguments), and
//! replaces each with `map(timestamp)`. fxt's own CPU sample blob
//! ([`crate::samples::sample`]) has its timestamp in its payload, on the
//! same clock as events, and is retimed too: a sample stays inside the
//! slice it was taken in. Nothing else changes: the record keeps its size,
//! refs and arguments. An initialization record's ticks per
//! second is rewritten with [`set_ticks_per_second`].
//!
//! ```
//! use fxt_format::encode::{write_record, Event, EventKind, StringRef, ThreadRef};
//! use fxt_format::retime::retime_record;
//!
//! let event = Event {
//!     kind: EventKind::Instant,
//!     timestamp: 1_000,
//!     thread: ThreadRef::Inline { process: 1, thread: 2 },
//!     category: StringRef::Inline("c"),
//!     name: StringRef::Inline("n"),
//!     args: &[],
//! };
//! let mut bytes = Vec::new();
//! write_record(&mut bytes, &event).unwrap();
//! retime_record(&mut bytes, &mut |t| t * 2).unwrap();
//! assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 2_000);
//! ```

use std::fmt;

use crate::encode::BlobType;
use crate::samples::{alloc, sample, ALLOC_NAME, SAMPLE_NAME};

/// Why a record could not be retimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RetimeError {
    /// The record is not a whole number of 8-byte words, or ends before the
    /// fields its header announces.
    Truncated {
        /// The record type (header bits 0–3).
        record_type: u8,
    },
}

impl fmt::Display for RetimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetimeError::Truncated { record_type } => write!(
                f,
                "record of type {record_type} ends before the fields its header announces"
            ),
        }
    }
}

impl std::error::Error for RetimeError {}

#[inline]
fn bits(word: u64, lsb: u32, width: u32) -> u64 {
    (word >> lsb) & ((1u64 << width) - 1)
}

/// A walk over one record's words.
struct Words<'a> {
    bytes: &'a mut [u8],
    /// Index of the next word.
    at: usize,
    record_type: u8,
}

impl Words<'_> {
    fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    fn err(&self) -> RetimeError {
        RetimeError::Truncated {
            record_type: self.record_type,
        }
    }

    fn word(&mut self) -> Result<u64, RetimeError> {
        let w = self.peek(self.at)?;
        self.at += 1;
        Ok(w)
    }

    fn peek(&self, i: usize) -> Result<u64, RetimeError> {
        if i >= self.len() {
            return Err(self.err());
        }
        let b: [u8; 8] = self.bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes");
        Ok(u64::from_le_bytes(b))
    }

    fn skip(&mut self, words: u64) -> Result<(), RetimeError> {
        let end = (self.at as u64)
            .checked_add(words)
            .ok_or_else(|| self.err())?;
        if end > self.len() as u64 {
            return Err(self.err());
        }
        self.at = end as usize;
        Ok(())
    }

    /// Replaces the next word (a timestamp) with `map` of it.
    fn timestamp(&mut self, map: &mut dyn FnMut(u64) -> u64) -> Result<(), RetimeError> {
        let t = self.peek(self.at)?;
        let i = self.at * 8;
        self.bytes[i..i + 8].copy_from_slice(&map(t).to_le_bytes());
        self.at += 1;
        Ok(())
    }

    /// Skips the inline part of a string ref (`0x8000 | length`: the
    /// string follows, padded to whole words).
    fn string_ref(&mut self, r: u64) -> Result<(), RetimeError> {
        if r & 0x8000 != 0 {
            self.skip((r & 0x7fff).div_ceil(8))?;
        }
        Ok(())
    }

    /// Whether string ref `r` is inline and its text, at the next word, is
    /// `name`.
    fn inline_is(&self, r: u64, name: &str) -> bool {
        let start = self.at * 8;
        r & 0x8000 != 0
            && (r & 0x7fff) as usize == name.len()
            && self.bytes.get(start..start + name.len()) == Some(name.as_bytes())
    }

    /// Skips the inline part of a thread ref (0: process and thread koids).
    fn thread_ref(&mut self, r: u64) -> Result<(), RetimeError> {
        if r == 0 {
            self.skip(2)?;
        }
        Ok(())
    }

    /// Skips `n` arguments, each sized by its header's bits 4–15.
    fn args(&mut self, n: u64) -> Result<(), RetimeError> {
        for _ in 0..n {
            let size = bits(self.peek(self.at)?, 4, 12);
            if size == 0 {
                return Err(self.err());
            }
            self.skip(size)?;
        }
        Ok(())
    }
}

/// Replaces every timestamp of the encoded record `record` (exactly one
/// record, header first) with `map(timestamp)`. Records without
/// timestamps, and record kinds the spec does not define, are left as
/// they are.
pub fn retime_record(
    record: &mut [u8],
    map: &mut dyn FnMut(u64) -> u64,
) -> Result<(), RetimeError> {
    let record_type = record.first().map_or(0, |b| b & 0xf);
    if !record.len().is_multiple_of(8) || record.is_empty() {
        return Err(RetimeError::Truncated { record_type });
    }
    let mut w = Words {
        bytes: record,
        at: 0,
        record_type,
    };
    let header = w.word()?;
    match record_type {
        // Event.
        4 => {
            let event_type = bits(header, 16, 4);
            if event_type > 10 {
                return Ok(());
            }
            w.timestamp(map)?;
            w.thread_ref(bits(header, 24, 8))?;
            w.string_ref(bits(header, 32, 16))?;
            w.string_ref(bits(header, 48, 16))?;
            w.args(bits(header, 20, 4))?;
            if event_type == 4 {
                // Duration complete: the end time.
                w.timestamp(map)?;
            }
        }
        // Blob: only fxt's sample and alloc blobs, always named inline,
        // hold a timestamp (their payload's first word).
        5 => {
            let name = bits(header, 16, 16);
            let data = bits(header, 48, 8) == u64::from(BlobType::Data.value());
            let word = if data && w.inline_is(name, SAMPLE_NAME) {
                Some(sample::TIMESTAMP_WORD)
            } else if data && w.inline_is(name, ALLOC_NAME) {
                Some(alloc::TIMESTAMP_WORD)
            } else {
                None
            };
            if let Some(word) = word.filter(|_| bits(header, 32, 15) >= 8) {
                w.string_ref(name)?;
                w.skip(word)?;
                w.timestamp(map)?;
            }
        }
        // Scheduling: legacy context switch, context switch, wakeup.
        8 if bits(header, 60, 4) <= 2 => w.timestamp(map)?,
        // Log.
        9 => w.timestamp(map)?,
        // Large blob with metadata.
        15 if bits(header, 36, 4) == 0 && bits(header, 40, 4) == 0 => {
            let format = w.word()?;
            w.string_ref(bits(format, 0, 16))?;
            w.string_ref(bits(format, 16, 16))?;
            w.timestamp(map)?;
        }
        _ => {}
    }
    Ok(())
}

/// Sets the ticks per second of an encoded initialization record (record
/// type 1, two words).
pub fn set_ticks_per_second(record: &mut [u8], ticks_per_second: u64) -> Result<(), RetimeError> {
    if record.len() != 16 || record[0] & 0xf != 1 {
        return Err(RetimeError::Truncated {
            record_type: record.first().map_or(0, |b| b & 0xf),
        });
    }
    record[8..16].copy_from_slice(&ticks_per_second.to_le_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{decode_all, EventKind as DKind, Record};
    use crate::encode::*;

    /// Every record with a timestamp, in its inline and ref forms, with
    /// arguments before the complete event's end time.
    fn sample() -> Vec<Vec<u8>> {
        fn enc(r: &dyn Encode) -> Vec<u8> {
            let mut v = Vec::new();
            write_record(&mut v, r).unwrap();
            v
        }
        let args = [
            Arg::new(
                StringRef::Inline("k"),
                ArgValue::Str(StringRef::Inline("v long value")),
            ),
            Arg::new(StringRef::Index(1), ArgValue::U64(7)),
        ];
        let event = |kind, timestamp, thread, category, name, args| Event {
            kind,
            timestamp,
            thread,
            category,
            name,
            args,
        };
        vec![
            enc(&MagicNumber),
            enc(&ProviderInfo {
                provider_id: 1,
                name: "p",
            }),
            enc(&Initialization {
                ticks_per_second: 1_000,
            }),
            enc(&StringRecord {
                index: 1,
                value: "cat",
            }),
            enc(&ThreadRecord {
                index: 1,
                process: 5,
                thread: 6,
            }),
            enc(&event(
                EventKind::DurationComplete { end: 300 },
                100,
                ThreadRef::Inline {
                    process: 5,
                    thread: 6,
                },
                StringRef::Inline("a category name"),
                StringRef::Inline("n"),
                &args,
            )),
            enc(&event(
                EventKind::Instant,
                150,
                ThreadRef::Index(1),
                StringRef::Index(1),
                StringRef::Index(1),
                &[],
            )),
            enc(&Log {
                timestamp: 160,
                thread: ThreadRef::Index(1),
                message: "hello",
            }),
            enc(&ContextSwitch {
                timestamp: 170,
                cpu: 1,
                outgoing_state: ThreadState::Blocked,
                outgoing_thread: 6,
                incoming_thread: 7,
                args: &[],
            }),
            enc(&ThreadWakeup {
                timestamp: 180,
                cpu: 0,
                waking_thread: 6,
                args: &[],
            }),
            enc(&LargeBlobWithMetadata {
                category: StringRef::Inline("c"),
                name: StringRef::Index(1),
                timestamp: 190,
                thread: ThreadRef::Index(1),
                args: &[],
                payload: &[1, 2, 3],
            }),
        ]
    }

    #[test]
    fn every_timestamp_is_mapped_and_nothing_else() {
        let records = sample();
        let before = decode_all(&records.concat()).unwrap();
        let mut retimed = records.clone();
        for r in &mut retimed {
            retime_record(r, &mut |t| t * 10 + 1).unwrap();
        }
        let after = decode_all(&retimed.concat()).unwrap();
        assert_eq!(before.len(), after.len());
        let mut mapped = 0;
        for (b, a) in before.iter().zip(&after) {
            match (b.timestamp(), a.timestamp()) {
                (Some(tb), Some(ta)) => {
                    assert_eq!(ta, tb * 10 + 1);
                    mapped += 1;
                }
                (None, None) => assert_eq!(b, a),
                _ => panic!("{b:?} / {a:?}"),
            }
            if let (Record::Event(eb), Record::Event(ea)) = (b, a) {
                if let (DKind::DurationComplete { end: e0 }, DKind::DurationComplete { end: e1 }) =
                    (&eb.kind, &ea.kind)
                {
                    assert_eq!(*e1, e0 * 10 + 1);
                }
                assert_eq!(eb.args, ea.args);
                assert_eq!(eb.name, ea.name);
            }
        }
        assert_eq!(mapped, 6);
    }

    #[test]
    fn truncated_records_are_errors() {
        for r in sample() {
            if r.len() <= 8 {
                continue;
            }
            let mut odd = r.clone();
            odd.push(0);
            assert!(retime_record(&mut odd, &mut |t| t).is_err());
        }
        // The complete event without its end time, the large blob without
        // its timestamp: both announce fields past their end.
        let mut no_end = sample()[5].clone();
        no_end.truncate(no_end.len() - 8);
        assert_eq!(
            retime_record(&mut no_end, &mut |t| t),
            Err(RetimeError::Truncated { record_type: 4 })
        );
        let mut blob = sample()[10].clone();
        blob.truncate(8 * 3);
        assert_eq!(
            retime_record(&mut blob, &mut |t| t),
            Err(RetimeError::Truncated { record_type: 15 })
        );
        let mut init = sample()[2].clone();
        set_ticks_per_second(&mut init, 1_000_000_000).unwrap();
        assert_eq!(
            decode_all(&[sample()[0].clone(), sample()[1].clone(), init].concat()).unwrap()[2],
            Record::Initialization {
                ticks_per_second: 1_000_000_000
            }
        );
    }

    #[test]
    fn the_sample_blob_timestamp_is_mapped_and_other_blobs_are_not() {
        use crate::samples::{Module, Modules, Sample, SampleRecord, Walk, SAMPLE_NAME};
        let frames = [0x10, 0x20];
        let sample = Sample {
            timestamp: 1_234,
            pid: 5,
            tid: 6,
            walk: Walk::FramePointers,
            truncated: false,
            frames: &frames,
        };
        let mut bytes = words_to_bytes(&encode_to_vec(&sample).unwrap());
        retime_record(&mut bytes, &mut |t| t * 10 + 1).unwrap();
        let records = decode_all(&[enc_magic(), bytes].concat()).unwrap();
        let Record::Blob(blob) = &records[1] else {
            panic!("{:?}", records[1])
        };
        let back = SampleRecord::decode(&blob.payload).unwrap();
        assert_eq!(back.timestamp, 12_341);
        assert_eq!(
            (back.pid, back.tid, back.frames.as_slice()),
            (5, 6, &frames[..])
        );

        // A raw-stack sample: its timestamp mapped, its registers and
        // stack words (which look like nothing to retime) untouched.
        let regs = [0x10, 0x7000, 0x7010];
        let stack = [1_234, 0x20, 0x30];
        let raw = crate::samples::RawSample {
            timestamp: 1_234,
            pid: 5,
            tid: 6,
            truncated: false,
            stack: crate::samples::RawStack {
                arch: crate::samples::Arch::X86_64,
                registers: &regs,
                stack_address: 0x7000,
                stack: &stack,
            },
        };
        let mut bytes = words_to_bytes(&encode_to_vec(&raw).unwrap());
        retime_record(&mut bytes, &mut |t| t * 10 + 1).unwrap();
        let records = decode_all(&[enc_magic(), bytes].concat()).unwrap();
        let Record::Blob(blob) = &records[1] else {
            panic!("{:?}", records[1])
        };
        let back = SampleRecord::decode(&blob.payload).unwrap();
        assert_eq!(back.timestamp, 12_341);
        let back = back.raw_stack.unwrap();
        assert_eq!(
            (back.registers.as_slice(), back.stack.as_slice()),
            (&regs[..], &stack[..])
        );

        // Blobs that hold no timestamp: another name (same length, or the
        // sample's name as a prefix), another blob type, a module list.
        let other = |name: &str, blob_type| {
            let payload = 7u64.to_le_bytes();
            let mut v = Vec::new();
            write_record(
                &mut v,
                &Blob {
                    name: StringRef::Inline(name),
                    blob_type,
                    payload: &payload,
                },
            )
            .unwrap();
            v
        };
        let mut modules = Vec::new();
        let list = [Module {
            start: 1,
            end: 2,
            offset: 0,
            build_id: &[],
            path: "/p",
        }];
        Modules {
            pid: 5,
            modules: &list,
        }
        .encode_records(99, ThreadRef::Index(1), &mut modules)
        .unwrap();
        for record in [
            other("fxt.sampl_", BlobType::Data),
            other(&format!("{SAMPLE_NAME}s"), BlobType::Data),
            other(SAMPLE_NAME, BlobType::Perfetto),
            words_to_bytes(&modules),
        ] {
            let mut retimed = record.clone();
            retime_record(&mut retimed, &mut |t| t * 10 + 1).unwrap();
            assert_eq!(retimed, record);
        }
        // A sample blob cut before its timestamp is an error.
        let mut cut = words_to_bytes(&encode_to_vec(&sample).unwrap());
        cut.truncate(8 * 3);
        assert_eq!(
            retime_record(&mut cut, &mut |t| t),
            Err(RetimeError::Truncated { record_type: 5 })
        );
    }

    fn enc_magic() -> Vec<u8> {
        let mut v = Vec::new();
        write_record(&mut v, &MagicNumber).unwrap();
        v
    }
}
