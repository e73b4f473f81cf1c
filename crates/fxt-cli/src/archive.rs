//! An archive of several providers' traces, as the trace manager writes
//! it: one magic number record, then each appended trace in turn (`fxt
//! merge` appends files; `fxt record` appends a spool's traces with a
//! [`Retime`] that puts every provider on one time base).
//!
//! Each provider of each input gets a distinct provider id: its provider
//! info record is rewritten with the new id and followed by a provider
//! section record, so a reader starts fresh string and thread tables for it
//! and each provider keeps its own (two inputs may use the same string
//! index for different strings). Provider section and provider event
//! records are rewritten to the new ids; records that an input has before
//! any provider info get a provider of the caller's default name. Other
//! records are copied byte for byte; magic number records and string
//! records of index 0 (no-ops: a crash-safe file's fillers) are dropped,
//! and a malformed record is left out with a warning.
//!
//! A [`Retime`] moves every timestamp, the CPU samples' included
//! ([`retime_record`]); the Perfetto packets of the samples, stamped on
//! the process's clock, are dropped and built again from the retimed
//! samples after the input's records ([`crate::samples::perfetto`]).

use std::collections::HashMap;
use std::io::Write;

use fxt_format::decode::{BlobType, Record, View};
use fxt_format::encode::{write_record, MagicNumber, ProviderEvent, ProviderInfo, ProviderSection};
use fxt_format::retime::{retime_record, set_ticks_per_second};
use fxt_format::samples::PERFETTO_NAME;
use fxt_format::time::ticks_per_second_or_default;

use crate::error::Error;
use crate::input::Input;
use crate::samples::perfetto::{rebuilt_after_retime, Rebuilt};

/// Puts the traces of several clocks on one time base while they are
/// appended: `map(ticks_per_second, ticks)` gives the archive's time of a
/// provider's timestamp, and the archive says `ticks_per_second` for every
/// provider.
pub struct Retime<'a> {
    /// The archive's ticks of a provider's `ticks` at its ticks per second.
    pub map: &'a dyn Fn(u64, u64) -> u64,
    /// The archive's ticks per second.
    pub ticks_per_second: u64,
}

/// An archive being written: a magic number record, then each appended
/// trace's providers, each under a fresh provider id.
pub struct Archive<W: Write> {
    out: W,
    name: String,
    next_id: u32,
    records: u64,
    /// Added to the name of every provider appended next (" (unfinished)").
    suffix: String,
}

impl<W: Write> Archive<W> {
    /// Starts an archive on `out` (`name` for messages).
    pub fn new(mut out: W, name: &str) -> Result<Archive<W>, Error> {
        write_record(&mut out, &MagicNumber).map_err(|e| Error::io(name, e))?;
        Ok(Archive {
            out,
            name: name.to_owned(),
            next_id: 1,
            records: 1,
            suffix: String::new(),
        })
    }

    /// Records written so far (the magic number record included).
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Adds `suffix` to the names of the providers appended from now on
    /// (`""`: names as they are).
    pub fn set_name_suffix(&mut self, suffix: &str) {
        suffix.clone_into(&mut self.suffix);
    }

    fn fresh_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1).max(1);
        id
    }

    /// Appends every provider of `input` (see the module docs); records
    /// before any provider info get a provider named `default_name`. With
    /// `retime`, every timestamp is mapped and initialization records say
    /// the archive's ticks per second (`input` must then be in memory).
    /// Returns the records appended.
    pub fn append(
        &mut self,
        input: &mut Input,
        default_name: &str,
        retime: Option<&Retime<'_>>,
    ) -> Result<u64, Error> {
        let name = self.name.clone();
        let io_err = |e: std::io::Error| Error::io(&name, e);
        let before = self.records;
        let rebuilt = retime
            .map(|rt| rebuilt_packets(input, rt))
            .transpose()?
            .flatten();
        // Old provider id (None: records before any provider info) -> new id.
        let mut ids: HashMap<Option<u32>, u32> = HashMap::new();
        let mut started = false;
        let mut scratch = Vec::new();
        let input_name = input.name.clone();
        // Events are walked as views: copied by their bytes, never decoded
        // whole.
        input.walk_views_in_order("merge", |ctx, view| {
            let init = match view {
                View::Event(_) => false,
                View::Record(record) => match record {
                    // Index 0 strings change nothing: they are the fillers of
                    // a crash-safe file's unused space, not worth copying.
                    Record::Magic | Record::String { index: 0, .. } => return Ok(()),
                    Record::ProviderInfo { provider_id, name } => {
                        let id = self.fresh_id();
                        ids.insert(Some(*provider_id), id);
                        let name = format!("{name}{}", self.suffix);
                        begin(&mut self.out, id, &name).map_err(io_err)?;
                        self.records += 2;
                        started = true;
                        return Ok(());
                    }
                    Record::ProviderSection { provider_id } => {
                        let id = *ids
                            .entry(Some(*provider_id))
                            .or_insert_with(|| self.fresh_id());
                        write_record(&mut self.out, &ProviderSection { provider_id: id })
                            .map_err(io_err)?;
                        self.records += 1;
                        started = true;
                        return Ok(());
                    }
                    Record::ProviderEvent { provider_id, event } => {
                        let id = ids
                            .get(&Some(*provider_id))
                            .or_else(|| ids.get(&ctx.provider_id()))
                            .copied()
                            .unwrap_or(0);
                        let event = ProviderEvent {
                            provider_id: id,
                            event: *event,
                        };
                        write_record(&mut self.out, &event).map_err(io_err)?;
                        self.records += 1;
                        return Ok(());
                    }
                    // Stamped on the process's clock: built again below.
                    Record::Blob(blob)
                        if retime.is_some()
                            && blob.blob_type == BlobType::Perfetto
                            && blob.name == PERFETTO_NAME =>
                    {
                        return Ok(());
                    }
                    Record::Initialization { .. } => true,
                    _ => false,
                },
            };
            if !started {
                let id = self.fresh_id();
                ids.insert(None, id);
                let name = format!("{default_name}{}", self.suffix);
                begin(&mut self.out, id, &name).map_err(io_err)?;
                self.records += 2;
                started = true;
            }
            let raw = ctx.record_bytes();
            match retime {
                None => self.out.write_all(raw).map_err(io_err)?,
                Some(rt) => {
                    let tps = ticks_per_second_or_default(ctx.ticks_per_second());
                    retimed(&mut scratch, raw, init, tps, rt)
                        .map_err(|e| Error::msg(format!("{input_name}: {e}")))?;
                    self.out.write_all(&scratch).map_err(io_err)?;
                }
            }
            self.records += 1;
            Ok(())
        })?;
        if let Some(rebuilt) = rebuilt {
            self.out.write_all(&rebuilt.bytes).map_err(io_err)?;
            self.records += rebuilt.records;
        }
        Ok(self.records - before)
    }

    /// Flushes the archive and returns its writer.
    pub fn finish(mut self) -> Result<W, Error> {
        self.out.flush().map_err(|e| Error::io(&self.name, e))?;
        Ok(self.out)
    }
}

/// `raw` (an initialization record if `init`, of a provider at
/// `ticks_per_second` otherwise) copied into `out` with `rt` applied.
fn retimed(
    out: &mut Vec<u8>,
    raw: &[u8],
    init: bool,
    ticks_per_second: u64,
    rt: &Retime<'_>,
) -> Result<(), fxt_format::retime::RetimeError> {
    out.clear();
    out.extend_from_slice(raw);
    if init {
        set_ticks_per_second(out, rt.ticks_per_second)
    } else {
        retime_record(out, &mut |t| (rt.map)(ticks_per_second, t))
    }
}

/// The Perfetto packets of `input`'s samples once `rt` applies (see
/// [`rebuilt_after_retime`]).
fn rebuilt_packets(input: &Input, rt: &Retime<'_>) -> Result<Option<Rebuilt>, Error> {
    let bytes = input
        .bytes()
        .ok_or_else(|| Error::msg(format!("{}: a retimed trace is read whole", input.name)))?;
    rebuilt_after_retime(bytes, rt.map, rt.ticks_per_second)
}

/// A provider info record and a section for it.
fn begin<W: Write>(out: &mut W, id: u32, name: &str) -> std::io::Result<()> {
    write_record(
        out,
        &ProviderInfo {
            provider_id: id,
            name,
        },
    )?;
    write_record(out, &ProviderSection { provider_id: id })
}
