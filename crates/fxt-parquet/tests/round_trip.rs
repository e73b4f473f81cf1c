//! Row groups written with fxt's pages, read back by a reader we did not
//! write (Apache's): every value, null and row group as written, the
//! strings of the dictionary pages, the integers and doubles of the plain
//! ones, Snappy-compressed.

use std::fs::File;
use std::sync::Arc;

use fxt_parquet::{write_row_group, NumLeaf, Snappy, StrLeaf, TextLeaf};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::statistics::Statistics;
use parquet::file::writer::SerializedFileWriter;
use parquet::record::Field;
use parquet::schema::parser::parse_message_type;

/// One row: a timestamp, a name or null, a value.
type Row = (i64, Option<String>, f64);

/// The rows of row group `group`: runs of a few names (what a trace's
/// columns hold), nulls, and now and then a name seen once.
fn rows(group: usize) -> Vec<Row> {
    (0..1000 + group * 7)
        .map(|i| {
            let name = match i % 7 {
                0 => None,
                1..=3 => Some("poll".to_string()),
                4 => Some("wake".to_string()),
                5 => Some(format!("task {}", i % 13)),
                _ => Some(format!("once {group} {i}")),
            };
            let ts = (group * 100_000 + i) as i64 * 3 - 50;
            (ts, name, i as f64 / 4.0)
        })
        .collect()
}

#[test]
fn row_groups_read_back_by_apaches_reader() {
    let schema = parse_message_type(
        "message t { required int64 ts; optional binary name (STRING); required double v; }",
    )
    .unwrap();
    let path = std::env::temp_dir().join(format!(
        "fxt-parquet-round-trip-{}.parquet",
        std::process::id()
    ));
    let file = File::create(&path).unwrap();
    let properties = Arc::new(WriterProperties::builder().build());
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), properties).unwrap();
    let mut snappy = Snappy::new();
    let (mut ts, mut name, mut v) = (
        NumLeaf::<i64>::new(0, false),
        StrLeaf::new(1, false),
        NumLeaf::<f64>::new(0, false),
    );
    let mut written = Vec::new();
    for group in 0..3 {
        let rows = rows(group);
        for (t, n, x) in &rows {
            ts.levels.push(0, 0);
            ts.value(*t);
            name.levels.push_top(n.is_some());
            if let Some(n) = n {
                name.value(n);
            }
            v.levels.push(0, 0);
            v.value(*x);
        }
        let leaves = vec![ts.finish(), name.finish(), v.finish()];
        write_row_group(&mut writer, leaves, rows.len(), &[], &mut snappy).unwrap();
        written.extend(rows);
    }
    writer.close().unwrap();

    let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
    assert_eq!(reader.metadata().num_row_groups(), 3);
    // Each row group's range, as Apache's reader reads it from the footer.
    for group in 0..3 {
        let rows = rows(group);
        let meta = reader.metadata().row_group(group);
        let Some(Statistics::Int64(ts)) = meta.column(0).statistics() else {
            panic!("no statistics for ts");
        };
        let least = rows.iter().map(|r| r.0).min();
        let greatest = rows.iter().map(|r| r.0).max();
        assert_eq!(
            (ts.min_opt().copied(), ts.max_opt().copied()),
            (least, greatest)
        );
        let Some(Statistics::Double(v)) = meta.column(2).statistics() else {
            panic!("no statistics for v");
        };
        let greatest = rows.iter().map(|r| r.2).fold(f64::MIN, f64::max);
        assert_eq!((v.min_opt(), v.max_opt()), (Some(&-0.0), Some(&greatest)));
        assert_eq!(
            meta.column(1).statistics().and_then(|s| s.null_count_opt()),
            Some(rows.iter().filter(|r| r.1.is_none()).count() as u64)
        );
    }
    let mut read: Vec<Row> = Vec::new();
    for row in reader.get_row_iter(None).unwrap() {
        let row = row.unwrap();
        let fields: Vec<&Field> = row.get_column_iter().map(|(_, f)| f).collect();
        let (Field::Long(t), Field::Double(x)) = (fields[0], fields[2]) else {
            panic!("types: {fields:?}");
        };
        let n = match fields[1] {
            Field::Null => None,
            Field::Str(s) => Some(s.clone()),
            other => panic!("name: {other:?}"),
        };
        read.push((*t, n, *x));
    }
    std::fs::remove_file(&path).unwrap();
    assert_eq!(read.len(), written.len());
    assert!(read == written, "the rows read differ from those written");
}

/// Row `i`'s list: none, empty, or a few integers, some negative.
fn list(i: usize) -> Option<Vec<i64>> {
    match i % 5 {
        0 => None,
        1 => Some(Vec::new()),
        n => Some((0..n as i64).map(|k| (k - 1) * (i as i64) * 977).collect()),
    }
}

#[test]
fn lists_added_as_blocks_read_back_by_apaches_reader() {
    let schema = parse_message_type(
        "message t {
            optional group ints (LIST) { repeated group list { optional int64 element; } }
            optional group texts (LIST) { repeated group list { optional binary element (STRING); } }
        }",
    )
    .unwrap();
    let path = std::env::temp_dir().join(format!(
        "fxt-parquet-round-trip-lists-{}.parquet",
        std::process::id()
    ));
    let file = File::create(&path).unwrap();
    let properties = Arc::new(WriterProperties::builder().build());
    let mut writer = SerializedFileWriter::new(file, Arc::new(schema), properties).unwrap();
    let mut snappy = Snappy::new();
    let (mut ints, mut texts) = (NumLeaf::<i64>::new(3, true), TextLeaf::new(3, true));
    let mut written = Vec::new();
    for group in 0..2 {
        let rows: Vec<Option<Vec<i64>>> = (group * 1000..group * 1000 + 999).map(list).collect();
        // A list's levels: null 0, empty 1, an item 3; items after a
        // list's first repeat.
        let (mut defs, mut reps, mut values) = (Vec::new(), Vec::new(), Vec::new());
        for row in &rows {
            match row {
                None => {
                    defs.push(0);
                    reps.push(0);
                }
                Some(items) if items.is_empty() => {
                    defs.push(1);
                    reps.push(0);
                }
                Some(items) => {
                    defs.extend(items.iter().map(|_| 3));
                    reps.extend((0..items.len()).map(|k| u8::from(k > 0)));
                    values.extend(items);
                }
            }
        }
        // In two blocks each, to add to levels already there.
        let half = reps.iter().rposition(|&r| r == 0).unwrap();
        let before = values.len() / 2;
        for leaf in [&mut ints.levels, &mut texts.levels] {
            leaf.extend(Some(&defs[..half]), &reps[..half], half);
            let rest = reps.len() - half;
            leaf.extend(Some(&defs[half..]), &reps[half..], rest);
        }
        ints.extend(&values[..before]);
        ints.extend(&values[before..]);
        // The second group's texts in fixed-size blocks.
        match group {
            0 => values.iter().for_each(|&v| texts.int(v)),
            _ => values.iter().for_each(|&v| texts.i64(v)),
        }
        let leaves = vec![ints.finish(), texts.finish()];
        write_row_group(&mut writer, leaves, rows.len(), &[], &mut snappy).unwrap();
        written.extend(rows);
    }
    writer.close().unwrap();

    let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
    let mut read = Vec::new();
    for row in reader.get_row_iter(None).unwrap() {
        let row = row.unwrap();
        let fields: Vec<&Field> = row.get_column_iter().map(|(_, f)| f).collect();
        let (ints, texts) = match (fields[0], fields[1]) {
            (Field::Null, Field::Null) => (None, None),
            (Field::ListInternal(a), Field::ListInternal(b)) => {
                let a: Vec<i64> = a
                    .elements()
                    .iter()
                    .map(|f| match f {
                        Field::Long(v) => *v,
                        other => panic!("item: {other:?}"),
                    })
                    .collect();
                let b: Vec<String> = b.elements().iter().map(|f| f.to_string()).collect();
                (Some(a), Some(b))
            }
            other => panic!("row: {other:?}"),
        };
        let texts_of = |v: &Vec<i64>| v.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>();
        assert_eq!(texts, ints.as_ref().map(texts_of));
        read.push(ints);
    }
    std::fs::remove_file(&path).unwrap();
    assert!(read == written, "the lists read differ from those written");
}
