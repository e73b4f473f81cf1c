//! One leaf of one row group as a Parquet column chunk: its dictionary
//! page (strings), one data page (levels, then values: dictionary ids,
//! delta-coded integers, PLAIN doubles and free text), each compressed
//! with Snappy, and the chunk's metadata and statistics, for
//! `SerializedRowGroupWriter::append_column`.
//!
//! fxt encodes its pages itself because it knows what a general writer
//! must find out: which strings repeat (their dictionary ids come from a
//! lookup by address, not a hash per value) and that most levels are one
//! run.

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, EncodingMask, PageType};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::statistics::{Statistics, ValueStatistics};
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::delta;
use super::hybrid::{encode, repeat, width_of};
use super::leaf::{Leaf, Levels, Values};

/// Compresses pages (one per encoding thread: it keeps its tables and
/// its output buffer, which is not cleared again for each page), and
/// keeps the buffer pages are encoded into before compression (reused
/// by every chunk: a fresh one would fault its pages in each time).
pub struct Snappy {
    encoder: snap::raw::Encoder,
    out: Vec<u8>,
    data: Vec<u8>,
}

impl Default for Snappy {
    fn default() -> Snappy {
        Snappy::new()
    }
}

impl Snappy {
    /// A compressor.
    pub fn new() -> Snappy {
        Snappy {
            encoder: snap::raw::Encoder::new(),
            out: Vec::new(),
            data: Vec::new(),
        }
    }

    /// `bytes`, compressed.
    fn compress(&mut self, bytes: &[u8]) -> Result<Bytes, ParquetError> {
        let most = snap::raw::max_compress_len(bytes.len());
        if self.out.len() < most {
            self.out.resize(most, 0);
        }
        let n = self
            .encoder
            .compress(bytes, &mut self.out)
            .map_err(|e| ParquetError::General(format!("snappy: {e}")))?;
        Ok(Bytes::copy_from_slice(&self.out[..n]))
    }
}

/// The column chunk of `leaf` (a row group of `rows` rows) for column
/// `descr`, with statistics if `statistics`.
pub fn column_chunk(
    leaf: Leaf,
    descr: &ColumnDescPtr,
    rows: usize,
    statistics: bool,
    snappy: &mut Snappy,
) -> Result<(Bytes, ColumnCloseResult), ParquetError> {
    let Leaf { levels, values } = leaf;
    check_levels(&levels, descr)?;
    // Integers' ranges are found as they are encoded.
    let ranged = matches!(values, Values::I64(_) | Values::I32(_));
    let nulls = levels.nulls();
    let mut stats = (statistics && !ranged).then(|| statistics_of(&values, nulls, descr));
    // Room for the pages as they are before compression: growing a buffer
    // of a row group's values copies it at every doubling.
    let room = plain_size(&values) + levels.count / 2 + 64;
    let mut sink = TrackedWrite::new(Vec::with_capacity(room));
    let mut writer = SerializedPageWriter::new(&mut sink);
    let mut encodings = vec![Encoding::RLE];
    let mut dictionary_len = None;
    // The data page: levels, then the values behind them.
    let mut data = std::mem::take(&mut snappy.data);
    data.clear();
    data.reserve(room);
    levels_of(&levels, descr, &mut data);
    let encoding = match values {
        Values::Dict { page, ids } => {
            let (spec, width) = dictionary_page(&mut writer, snappy, &page, &mut data)?;
            dictionary_len = Some(spec);
            encode(&ids, width, &mut data);
            Encoding::RLE_DICTIONARY
        }
        Values::Same { page, id, count } => {
            let (spec, width) = dictionary_page(&mut writer, snappy, &page, &mut data)?;
            dictionary_len = Some(spec);
            same_ids(id, count, width, &mut data);
            Encoding::RLE_DICTIONARY
        }
        Values::I64(v) => {
            let range = delta::encode(&v, &mut data);
            stats = statistics.then(|| value_statistics!(range.unzip(), None, nulls, descr));
            Encoding::DELTA_BINARY_PACKED
        }
        Values::I32(v) => {
            let range = delta::encode32(&v, &mut data);
            stats = statistics.then(|| value_statistics!(range.unzip(), None, nulls, descr));
            Encoding::DELTA_BINARY_PACKED
        }
        Values::Delta(coded) => {
            coded.write(&mut data);
            Encoding::DELTA_BINARY_PACKED
        }
        other => {
            plain(other, &mut data);
            Encoding::PLAIN
        }
    };
    if dictionary_len.is_some() {
        encodings.push(Encoding::PLAIN);
    }
    encodings.push(encoding);
    let count = levels.count as u32;
    let data_spec = write_page(&mut writer, snappy, &data, |buf| Page::DataPage {
        buf,
        num_values: count,
        encoding,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    })?;
    snappy.data = data;
    let bytes = Bytes::from(sink.into_inner()?);
    let (dict_offset, dict_compressed, dict_uncompressed) = match dictionary_len {
        Some(spec) => (Some(0), spec.1, spec.2),
        None => (None, 0, 0),
    };
    let mut metadata = ColumnChunkMetaData::builder(descr.clone())
        .set_compression(Compression::SNAPPY)
        .set_encodings_mask(EncodingMask::new_from_encodings(encodings.iter()))
        .set_total_compressed_size((dict_compressed + data_spec.1) as i64)
        .set_total_uncompressed_size((dict_uncompressed + data_spec.2) as i64)
        .set_num_values(i64::from(count))
        .set_data_page_offset(data_spec.0 as i64)
        .set_dictionary_page_offset(dict_offset);
    if let Some(stats) = stats {
        metadata = metadata.set_statistics(stats);
    }
    let close = ColumnCloseResult {
        bytes_written: bytes.len() as u64,
        rows_written: rows as u64,
        metadata: metadata.build()?,
        bloom_filter: None,
        column_index: None,
        offset_index: None,
    };
    Ok((bytes, close))
}

/// An error unless `levels` are those of column `descr`.
fn check_levels(levels: &Levels, descr: &ColumnDescPtr) -> Result<(), ParquetError> {
    if i16::from(levels.max_def) != descr.max_def_level()
        || levels.nested != (descr.max_rep_level() > 0)
    {
        return Err(ParquetError::General(format!(
            "internal error: column {} has levels up to {} (nested: {}), its leaf {}",
            descr.path(),
            descr.max_def_level(),
            descr.max_rep_level() > 0,
            levels.max_def
        )));
    }
    Ok(())
}

/// Writes the dictionary page of `page`, and the width of its ids at the
/// start of the data page `data`; the page's offset and sizes (as
/// [`write_page`] gives them), and the width.
fn dictionary_page(
    writer: &mut SerializedPageWriter<'_, Vec<u8>>,
    snappy: &mut Snappy,
    page: &super::dictionary::Page,
    data: &mut Vec<u8>,
) -> Result<((u64, usize, usize), u8), ParquetError> {
    let spec = write_page(writer, snappy, &page.bytes, |buf| Page::DictionaryPage {
        buf,
        num_values: page.spans.len() as u32,
        encoding: Encoding::PLAIN,
        is_sorted: false,
    })?;
    let width = width_of(page.spans.len().saturating_sub(1) as u64);
    data.push(width);
    Ok((spec, width))
}

/// Appends `count` copies of dictionary id `id` as [`encode`] writes
/// them: one run when they fill a group (every value is in it, none left
/// to pack), else packed.
fn same_ids(id: u32, count: usize, width: u8, data: &mut Vec<u8>) {
    if count >= 8 {
        repeat(u64::from(id), count, width, data);
    } else {
        encode(&vec![id; count], width, data);
    }
}

/// Writes `bytes`, compressed, as the page `page` makes of them; its
/// offset, and its compressed and uncompressed sizes with its header.
fn write_page(
    writer: &mut SerializedPageWriter<'_, Vec<u8>>,
    snappy: &mut Snappy,
    bytes: &[u8],
    page: impl FnOnce(Bytes) -> Page,
) -> Result<(u64, usize, usize), ParquetError> {
    // A page header holds its sizes as 32-bit signed numbers: a larger
    // page (a row group of huge text values) would be written corrupt.
    // (Snappy's bound is 0 for what it cannot compress at all.)
    let most = snap::raw::max_compress_len(bytes.len());
    if most == 0 || i32::try_from(most).is_err() {
        return Err(ParquetError::General(format!(
            "a page of {} bytes: more than a Parquet page holds (2 GiB)",
            bytes.len()
        )));
    }
    let compressed = snappy.compress(bytes)?;
    let page = CompressedPage::new(page(compressed), bytes.len());
    debug_assert!(matches!(
        page.page_type(),
        PageType::DATA_PAGE | PageType::DICTIONARY_PAGE
    ));
    let spec = writer.write_page(page)?;
    Ok((spec.offset, spec.compressed_size, spec.uncompressed_size))
}

/// A data page's levels: repetition levels (a nested leaf), then
/// definition levels (any but a required column), each behind its
/// length in four bytes.
fn levels_of(levels: &Levels, descr: &ColumnDescPtr, out: &mut Vec<u8>) {
    let section = |values: &[u8], max: i16, out: &mut Vec<u8>| {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        let width = width_of(max as u64);
        if values.is_empty() && levels.count > 0 {
            // Every level the maximum: one run.
            repeat(u64::from(max as u8), levels.count, width, out);
        } else {
            encode(values, width, out);
        }
        let len = (out.len() - at - 4) as u32;
        out[at..at + 4].copy_from_slice(&len.to_le_bytes());
    };
    if descr.max_rep_level() > 0 {
        section(&levels.reps, descr.max_rep_level(), out);
    }
    if descr.max_def_level() > 0 {
        section(&levels.defs, descr.max_def_level(), out);
    }
}

/// The size of the values' encoding: PLAIN, or a dictionary's ids (at
/// most four bytes each, mostly far less: an estimate).
fn plain_size(values: &Values) -> usize {
    match values {
        Values::I64(v) => v.len() * 8,
        Values::I32(v) => v.len() * 4,
        Values::Delta(coded) => coded.blocks.len() + 64,
        Values::F64(v) => v.len() * 8,
        Values::Text(bytes) => bytes.len(),
        Values::Dict { ids, .. } => ids.len() / 2,
        Values::Same { .. } => 0,
    }
}

/// Appends the PLAIN encoding of doubles or text (integers are
/// delta-coded, strings dictionary-coded).
fn plain(values: Values, out: &mut Vec<u8>) {
    match values {
        Values::F64(v) => {
            // Room made once and filled eight bytes a value: no length
            // checked and moved per value.
            let at = out.len();
            out.resize(at + 8 * v.len(), 0);
            for (bytes, x) in out[at..].chunks_exact_mut(8).zip(&v) {
                bytes.copy_from_slice(&x.to_le_bytes());
            }
        }
        Values::Text(bytes) => out.extend_from_slice(&bytes),
        Values::I64(_)
        | Values::I32(_)
        | Values::Delta(_)
        | Values::Dict { .. }
        | Values::Same { .. } => {}
    }
}

/// The statistics of a chunk of `nulls` nulls whose values range over
/// `(least, greatest)` (options) with `nans` NaNs (an option), of column
/// `descr`: one statement for every value type (the value trait's bound
/// is not nameable outside the parquet crate).
macro_rules! value_statistics {
    ($range:expr, $nans:expr, $nulls:expr, $descr:expr) => {{
        let (min, max) = $range;
        Statistics::from(
            ValueStatistics::new(min, max, None, Some($nulls as u64), false)
                .with_backwards_compatible_min_max($descr.sort_order().is_signed())
                .with_nan_count($nans),
        )
    }};
}
use value_statistics;

compiled_twice! {
    /// The statistics of a chunk: its values' least and greatest, and its
    /// nulls (levels below the maximum).
    fn statistics_of(values: &Values, nulls: usize, descr: &ColumnDescPtr) -> Statistics
        => statistics_any
}

/// [`statistics_of`] for any processor.
#[inline(always)]
fn statistics_any(values: &Values, nulls: usize, descr: &ColumnDescPtr) -> Statistics {
    macro_rules! of {
        ($range:expr, $nans:expr) => {
            value_statistics!($range, $nans, nulls, descr)
        };
    }
    let bytes = |range: Option<(&[u8], &[u8])>| {
        let (min, max) = range.unzip();
        (min.map(ByteArray::from), max.map(ByteArray::from))
    };
    match values {
        Values::I64(v) => of!(int_range(v).unzip(), None),
        Values::I32(v) => of!(int_range(v).unzip(), None),
        // Found as the values were coded.
        Values::Delta(coded) if coded.narrow => {
            let narrow = |v: i64| v as i32;
            of!(
                coded.range.map(|(lo, hi)| (narrow(lo), narrow(hi))).unzip(),
                None
            )
        }
        Values::Delta(coded) => of!(coded.range.unzip(), None),
        Values::F64(v) => {
            // NaNs are left out of the range and counted: a reader that
            // prunes by the range (DuckDB) would otherwise skip them. A
            // zero least is -0.0 and a zero greatest +0.0, as the format
            // asks.
            let (min, max, nans) = float_range(v);
            let min = min.map(|lo| if lo == 0.0 { -0.0 } else { lo });
            let max = max.map(|hi| if hi == 0.0 { 0.0 } else { hi });
            of!((min, max), Some(nans))
        }
        Values::Dict { page, .. } | Values::Same { page, .. } => {
            let text = bytes(range((0..page.spans.len()).map(|id| page.value(id))));
            of!(text, None)
        }
        Values::Text(plain) => of!(bytes(range(PlainIter(plain))), None),
    }
}

/// The least and greatest of `values` (none if there are none).
fn range<T: Copy + PartialOrd>(values: impl Iterator<Item = T>) -> Option<(T, T)> {
    values.fold(None, |range, v| match range {
        None => Some((v, v)),
        Some((lo, hi)) => Some((if v < lo { v } else { lo }, if v > hi { v } else { hi })),
    })
}

/// The least and greatest of integers (none if there are none), without
/// a branch per value: a column of interleaved series goes up and down at
/// random.
#[inline(always)]
fn int_range<T: Copy + Ord>(values: &[T]) -> Option<(T, T)> {
    let &first = values.first()?;
    Some(
        values
            .iter()
            .fold((first, first), |(lo, hi), &v| (lo.min(v), hi.max(v))),
    )
}

/// The least and greatest of doubles that are not NaN (none if there are
/// none), and how many are NaN, in one pass without a branch per value:
/// a comparison with NaN is false, so a NaN never replaces a bound.
#[inline(always)]
fn float_range(values: &[f64]) -> (Option<f64>, Option<f64>, u64) {
    let (mut lo, mut hi, mut nans) = (f64::INFINITY, f64::NEG_INFINITY, 0u64);
    for &v in values {
        lo = if v < lo { v } else { lo };
        hi = if v > hi { v } else { hi };
        nans += u64::from(v.is_nan());
    }
    if nans as usize == values.len() {
        return (None, None, nans);
    }
    (Some(lo), Some(hi), nans)
}

/// The values of a PLAIN-encoded text buffer.
struct PlainIter<'a>(&'a [u8]);

impl<'a> Iterator for PlainIter<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let (len, rest) = self.0.split_first_chunk::<4>()?;
        let (value, rest) = rest.split_at(u32::from_le_bytes(*len) as usize);
        self.0 = rest;
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ranges_are_the_least_and_greatest() {
        assert_eq!(int_range::<i64>(&[]), None);
        assert_eq!(int_range(&[5i64]), Some((5, 5)));
        let v = [3i64, -7, i64::MAX, 0, i64::MIN, 9];
        assert_eq!(int_range(&v), range(v.iter().copied()));
        let w = [3i32, 8, -1, 8, 2];
        assert_eq!(int_range(&w), Some((-1, 8)));
    }

    #[test]
    fn one_id_repeated_is_written_as_its_values_would_be() {
        for width in [0u8, 1, 3, 8, 13, 17] {
            for count in [1usize, 2, 7, 8, 9, 64, 1000, 65_536] {
                let id = (1u32 << width) - 1;
                let (mut same, mut each) = (Vec::new(), Vec::new());
                same_ids(id, count, width, &mut same);
                encode(&vec![id; count], width, &mut each);
                assert_eq!(same, each, "width {width} count {count}");
            }
        }
    }

    #[test]
    fn double_ranges_leave_nans_out_and_count_them() {
        let nan = f64::NAN;
        assert_eq!(float_range(&[]), (None, None, 0));
        assert_eq!(float_range(&[nan, nan]), (None, None, 2));
        assert_eq!(
            float_range(&[nan, 2.5, -1.0, nan, 7.0]),
            (Some(-1.0), Some(7.0), 2)
        );
        let inf = f64::INFINITY;
        assert_eq!(float_range(&[inf, inf]), (Some(inf), Some(inf), 0));
        assert_eq!(float_range(&[-inf, nan]), (Some(-inf), Some(-inf), 1));
        let (lo, hi, _) = float_range(&[0.0, -0.0, 0.0]);
        assert_eq!((lo, hi), (Some(0.0), Some(0.0)));
    }
}
