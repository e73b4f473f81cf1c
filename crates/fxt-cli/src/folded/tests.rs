//! A head walk folds what a view walk folds: names found by string index
//! and threads by thread index, forgotten when a string or a thread is
//! defined again or the provider changes.

use fxt_format::decode::SliceReader;
use fxt_format::encode::StringRef::{Empty, Index, Inline};
use fxt_format::encode::{
    encode_into_vec, Arg, ArgValue, Encode, Event, EventKind, Initialization, KernelObject,
    MagicNumber, ProviderInfo, ProviderSection, StringRecord, ThreadRecord, ThreadRef,
    OBJ_TYPE_THREAD,
};

use super::{Collector, Filter, Folded};

/// A trace's words, record by record.
#[derive(Default)]
struct Trace(Vec<u64>);

impl Trace {
    fn put(&mut self, record: &impl Encode) -> &mut Self {
        encode_into_vec(record, &mut self.0).expect("encodes");
        self
    }

    fn string(&mut self, index: u16, value: &str) -> &mut Self {
        self.put(&StringRecord { index, value })
    }

    fn thread(&mut self, index: u8, process: u64, thread: u64) -> &mut Self {
        self.put(&ThreadRecord {
            index,
            process,
            thread,
        })
    }

    fn name(&mut self, koid: u64, name: &str) -> &mut Self {
        self.put(&KernelObject {
            koid,
            object_type: OBJ_TYPE_THREAD,
            name: Inline(name),
            args: &[],
        })
    }

    /// An event of category index 1, its name `name` (an index, or
    /// inline), at `ts`.
    fn event(
        &mut self,
        kind: EventKind,
        ts: u64,
        thread: ThreadRef,
        name: fxt_format::encode::StringRef<'_>,
    ) -> &mut Self {
        let args = [Arg::new(Index(9), ArgValue::U64(ts))];
        self.put(&Event {
            kind,
            timestamp: ts,
            thread,
            category: Index(1),
            name,
            args: &args[..usize::from(ts.is_multiple_of(2))],
        })
    }

    fn bytes(&self) -> Vec<u8> {
        self.0.iter().flat_map(|w| w.to_le_bytes()).collect()
    }
}

/// A trace whose string and thread indices are defined again part way,
/// with events of inline names and inline threads among indexed ones, a
/// second provider (its clock and its category at index 1 its own), and
/// async spans.
fn trace() -> Vec<u8> {
    use EventKind::*;
    let (t1, t2) = (ThreadRef::Index(1), ThreadRef::Index(2));
    let inline = ThreadRef::Inline {
        process: 7,
        thread: 70,
    };
    let mut t = Trace::default();
    t.put(&MagicNumber)
        .put(&ProviderInfo {
            provider_id: 1,
            name: "one",
        })
        .put(&Initialization {
            ticks_per_second: 1_000_000_000,
        })
        .string(1, "app")
        .string(2, "frame")
        .string(3, "draw")
        .string(9, "arg")
        .thread(1, 5, 50)
        .thread(2, 5, 51)
        .name(50, "main")
        .name(51, "worker;1");
    for round in 0..3u64 {
        let ts = round * 1000;
        t.event(DurationBegin, ts, t1, Index(2))
            .event(DurationBegin, ts + 10, t2, Index(3))
            .event(DurationComplete { end: ts + 30 }, ts + 20, t1, Index(3))
            .event(Instant, ts + 25, t1, Index(2))
            .event(DurationEnd, ts + 40, t2, Index(3))
            .event(DurationBegin, ts + 50, inline, Inline("inline name"))
            .event(DurationEnd, ts + 60, inline, Index(2))
            .event(AsyncBegin { id: round }, ts + 65, t2, Index(2))
            .event(DurationEnd, ts + 100, t1, Index(2))
            .event(AsyncEnd { id: round }, ts + 300, t2, Index(2));
        // Index 2 names another text, thread index 1 another thread.
        t.string(2, if round % 2 == 0 { "tick" } else { "frame" })
            .thread(1, 5, 52 + round);
    }
    t.event(DurationEnd, 5000, t1, Index(2));
    t.put(&ProviderSection { provider_id: 2 })
        .put(&Initialization {
            ticks_per_second: 3,
        })
        .string(1, "other")
        .string(2, "other provider")
        .thread(1, 5, 50);
    t.event(DurationBegin, 3, t1, Index(2))
        .event(DurationEnd, 6, t1, Index(2))
        .event(DurationBegin, 9, t1, Empty);
    t.bytes()
}

/// The trace folded by a walk of views or of heads.
fn folded(bytes: &[u8], filter: &Filter, heads: bool) -> Folded {
    let mut collector = Collector::new(filter.clone());
    let mut reader = SliceReader::new(bytes);
    let walked: Result<(), ()> = if heads {
        reader.heads_until(u64::MAX, |item, ctx| {
            collector.head(ctx, item.expect("reads"));
            Ok(())
        })
    } else {
        reader.views_until(u64::MAX, |item, ctx| {
            collector.view(ctx, item.expect("reads"));
            Ok(())
        })
    };
    walked.expect("walks");
    collector.finish()
}

fn lines(f: &Folded) -> Vec<String> {
    f.lines().collect()
}

#[test]
fn heads_fold_as_views_do() {
    let bytes = trace();
    let filters = [
        Filter::default(),
        Filter {
            category: Some("app".into()),
            ..Filter::default()
        },
        Filter {
            category: Some("none".into()),
            ..Filter::default()
        },
        Filter {
            thread: Some("main".into()),
            ..Filter::default()
        },
    ];
    for filter in &filters {
        let (views, heads) = (folded(&bytes, filter, false), folded(&bytes, filter, true));
        assert_eq!(lines(&views), lines(&heads));
        assert_eq!(views.overlaps, heads.overlaps);
        assert_eq!(views.unmatched_ends, heads.unmatched_ends);
        assert_eq!(views.unclosed_begins, heads.unclosed_begins);
    }
    let all = folded(&bytes, &filters[0], true);
    let all = lines(&all);
    // Each round's frame on the thread index 1 named then; the name of
    // index 2 as defined at each event; the second provider's clock.
    for line in [
        "main [50];frame 90",
        "main [50];frame;draw 10",
        "thread 52;tick 90",
        "thread 52;tick;draw 10",
        "thread 53;frame 90",
        "thread 53;frame;draw 10",
        "main [50];other provider 1000000000",
        "worker:1 [51];draw 90",
        "thread 70;inline name 30",
        "async;frame 470",
        "async;tick 235",
    ] {
        assert!(all.iter().any(|l| l == line), "{line} not in {all:#?}");
    }
    assert!(lines(&folded(&bytes, &filters[2], true)).is_empty());
    // The second provider's category is another text at the same index.
    let app = lines(&folded(&bytes, &filters[1], true));
    assert!(app.iter().any(|l| l == "main [50];frame 90"), "{app:#?}");
    assert!(
        !app.iter().any(|l| l.contains("other provider")),
        "{app:#?}"
    );
}
