//! Reading traces with Perfetto's own importer: `trace_processor_shell`.

use std::path::{Path, PathBuf};

use super::{p, tmp};

/// Perfetto's trace_processor_shell at `$FXT_TRACE_PROCESSOR`, or where
/// `shared/tools/perfetto-build.sh` builds it; `None` (the test then says
/// so and passes) where there is none: CI does not build Perfetto.
pub fn trace_processor() -> Option<PathBuf> {
    let path = std::env::var_os("FXT_TRACE_PROCESSOR")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/tmp/perfetto-src/out/tp/trace_processor_shell".into());
    path.is_file().then_some(path)
}

/// One row of numbers from trace_processor_shell's answer to `query`.
pub fn perfetto_row(shell: &Path, trace: &Path, query: &str) -> Vec<i64> {
    let file = tmp(&format!(
        "perfetto_query_{}.sql",
        trace.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&file, query).unwrap();
    let out = std::process::Command::new(shell)
        .args(["-q", p(&file), p(trace)])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    last.split(',')
        .map(|v| {
            v.trim()
                .trim_matches('"')
                .parse()
                .unwrap_or_else(|_| panic!("{text}"))
        })
        .collect()
}

/// Where Perfetto's importer is present: it reads every CPU sample of
/// `archive` (an archive of `fxt record`, `fxt trace` or `fxt merge`), puts
/// as many inside the slices named `span` of their thread as `fxt flame
/// --samples --inside` does, and reports no import error. Says so and
/// returns where it is absent.
pub fn assert_perfetto_places_samples(archive: &Path, span: &str) {
    let Some(shell) = trace_processor() else {
        eprintln!("Perfetto check skipped: no trace_processor_shell (set FXT_TRACE_PROCESSOR)");
        return;
    };
    let count = |args: &[&str]| -> i64 {
        let total: u64 = super::folded_samples(archive, args).values().sum();
        total as i64
    };
    let query = format!(
        "select (select count(*) from perf_sample), \
         (select count(distinct ps.id) from perf_sample ps \
          join thread_track tt on tt.utid = ps.utid join slice s on s.track_id = tt.id \
          where s.name = '{span}' and ps.ts between s.ts and s.ts + s.dur), \
         (select count(*) from stats where severity in ('error', 'data_loss') and value > 0);"
    );
    let row = perfetto_row(&shell, archive, &query);
    assert!(
        row[1] > 0,
        "{}: no sample inside '{span}'",
        archive.display()
    );
    assert_eq!(
        row,
        [count(&[]), count(&["--inside", span]), 0],
        "{}: Perfetto's samples, those inside '{span}', import errors",
        archive.display()
    );
}
