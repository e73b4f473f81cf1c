//! How fast the reading commands go: generates traces of 0.1 and 1 GB (10
//! GB with `--with-10g`; disk space is the limit), then runs each of
//! `fxt stats`, `check`, `flame --folded`, `dump`, `json` and `export
//! parquet` on each, in its own process, on one core (`taskset -c 0`, or
//! the CPU `--cpu N` names, away from another build's core) and on all, and prints per command the CPU seconds, wall seconds, MB/s,
//! peak memory and the ratio to `cat FILE > /dev/null` measured in the same
//! run; Perfetto's `trace_processor_shell` importing the trace and
//! answering `select count(*) from slice` stands beside them when built.
//! The ratio to `cat` is the median of [`ROUNDS`] rounds, each `cat` then
//! the command on the same core: a host whose speed moves from minute to
//! minute moves both of a round alike, where one `cat` at the start
//! against a command minutes later does not.
//! `--trace FILE` measures a trace of one's own as well (issue 33's was
//! written by `stress --threads 4 --events 10000000 --buffer 3G`). Each
//! command's CPU seconds are the least of its runs, as `cat`'s. The
//! tables go to `docs/PERFORMANCE.md` (region `reading`).
//!
//! ```text
//! cargo build --release -p fxt-cli --bin fxt
//! cargo run --release -p fxt-bench --bin read-table -- [--sizes 0.1,1] [--with-10g]
//!     [--trace FILE]... [--fxt target/release/fxt] [--dir /tmp] [--perfetto PATH] [--stdout]
//!     [--cpu N]
//! cargo run --release -p fxt-bench --bin read-table -- --generate FILE GB
//! ```
//!
//! Every command reads one file on every core (`stats`, `check`, `flame`,
//! `dump` and `json` cut it into ranges; `export` encodes its tables on a
//! core of their own), so each runs on one core and on all.

use std::io::{Read, Seek};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fxt_bench::reading::{generate, run, Usage};
use fxt_bench::report;

/// The reading commands, by the name shown, their arguments (`{}` is the
/// trace, `{out}` a scratch folder) and whether they read one file on
/// several cores (the others are run on one core only).
const COMMANDS: [(&str, &[&str], bool); 6] = [
    ("stats", &["stats", "{}"], true),
    ("check", &["check", "{}"], true),
    ("flame --folded", &["flame", "--folded", "{}"], true),
    ("dump", &["dump", "{}"], true),
    ("json", &["json", "{}"], true),
    (
        "export parquet",
        &["export", "parquet", "{}", "-o", "{out}", "--host", "bench"],
        true,
    ),
];

struct Options {
    sizes_gb: Vec<f64>,
    traces: Vec<PathBuf>,
    fxt: PathBuf,
    dir: PathBuf,
    perfetto: PathBuf,
    stdout: bool,
    out: PathBuf,
    /// The CPU a one-core run is pinned to.
    cpu: u32,
}

fn options() -> Result<Options, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut o = Options {
        sizes_gb: vec![0.1, 1.0],
        traces: Vec::new(),
        fxt: exe.with_file_name("fxt"),
        dir: std::env::temp_dir(),
        perfetto: "/tmp/perfetto-src/out/tp/trace_processor_shell".into(),
        stdout: false,
        out: report::default_path(),
        cpu: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--sizes" => {
                o.sizes_gb = value()?
                    .split(',')
                    .map(|s| s.parse().map_err(|e| format!("--sizes: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--with-10g" => o.sizes_gb.push(10.0),
            "--trace" => o.traces.push(value()?.into()),
            "--fxt" => o.fxt = value()?.into(),
            "--dir" => o.dir = value()?.into(),
            "--perfetto" => o.perfetto = value()?.into(),
            "--stdout" => o.stdout = true,
            "--out" => o.out = value()?.into(),
            "--cpu" => o.cpu = value()?.parse().map_err(|e| format!("--cpu: {e}"))?,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(o)
}

/// A command line on one core (`Some(cpu)`: pinned to it with taskset)
/// or on all (`None`).
fn command(program: &Path, args: &[String], one_core: Option<u32>) -> Command {
    let mut c = if let Some(cpu) = one_core {
        let mut c = Command::new("taskset");
        c.arg("-c").arg(cpu.to_string()).arg(program);
        c
    } else {
        Command::new(program)
    };
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Rounds of `cat` then the command, on one core, for the ratio.
const ROUNDS: usize = 5;

/// The least CPU of three runs (the page cache warm).
fn best_of_three(make: impl Fn() -> Command) -> Usage {
    let mut best: Option<Usage> = None;
    for _ in 0..3 {
        let u = run(make()).unwrap_or_default();
        if best.is_none_or(|b| u.cpu < b.cpu) {
            best = Some(u);
        }
    }
    best.unwrap_or_default()
}

/// [`ROUNDS`] rounds of `cat` then the command (each run a fresh
/// command from `make`): the command's least-CPU run, `cat`'s, and the
/// median of the rounds' ratios.
fn paired(cat: impl Fn() -> Command, make: impl Fn() -> Command) -> (Usage, Usage, f64) {
    let mut best: Option<Usage> = None;
    let mut best_cat: Option<Usage> = None;
    let mut ratios = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let c = run(cat()).unwrap_or_default();
        let u = run(make()).unwrap_or_default();
        ratios.push(u.cpu / c.cpu.max(1e-3));
        if best_cat.is_none_or(|b| c.cpu < b.cpu) {
            best_cat = Some(c);
        }
        if best.is_none_or(|b| u.cpu < b.cpu) {
            best = Some(u);
        }
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ROUNDS / 2];
    (
        best.unwrap_or_default(),
        best_cat.unwrap_or_default(),
        median,
    )
}

/// One row: what a command costs on one core and on all.
struct Row {
    name: String,
    one: Usage,
    /// The median of the rounds' ratios of the command's CPU to `cat`'s.
    ratio: f64,
    /// `None` for a command that reads on one thread.
    all: Option<Usage>,
}

/// The table of a generated trace of `gb` GB (deleted once measured).
fn measure_size(o: &Options, gb: f64) -> Result<String, String> {
    let path = o.dir.join(format!("read-table-{gb}g.fxt"));
    let bytes = (gb * 1e9) as u64;
    let records = generate(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let title = format!("{gb} GB trace");
    let table = measure_file(o, &path, &title, records);
    let _ = std::fs::remove_file(&path);
    table
}

/// The table of the trace at `path`, of `records` records.
fn measure_file(o: &Options, path: &Path, title: &str, records: u64) -> Result<String, String> {
    let scratch = o.dir.join("read-table-tables");
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let file = path.to_string_lossy().into_owned();
    let cat_command = || command(Path::new("cat"), std::slice::from_ref(&file), Some(o.cpu));
    let mut cat = best_of_three(cat_command);
    let mut rows = Vec::new();
    for (name, args, parallel) in COMMANDS {
        let args: Vec<String> = args
            .iter()
            .map(|a| match *a {
                "{}" => file.clone(),
                "{out}" => scratch.to_string_lossy().into_owned(),
                a => a.to_owned(),
            })
            .collect();
        let fresh = |one_core: Option<u32>| {
            let _ = std::fs::remove_dir_all(&scratch);
            command(&o.fxt, &args, one_core)
        };
        let (one, cat_here, ratio) = paired(cat_command, || fresh(Some(o.cpu)));
        if cat_here.cpu < cat.cpu {
            cat = cat_here;
        }
        let all = parallel.then(|| best_of_three(|| fresh(None)));
        let _ = std::fs::remove_dir_all(&scratch);
        eprintln!("read-table: {title} {name}: {one:?} ({ratio:.1}x cat) / all cores {all:?}");
        rows.push(Row {
            name: format!("`fxt {name}`"),
            one,
            ratio,
            all,
        });
    }
    let measured = o.perfetto.exists();
    if measured {
        rows.push(perfetto_row(o, &file));
    }
    let mut t = table(title, size, records, cat, &rows);
    if !measured {
        // A table without the row must not read as if Perfetto had been
        // measured: say why it is not there.
        t.push_str(&format!(
            "\nPerfetto's row is left out: no `trace_processor_shell` at `{}` \
             (`--perfetto PATH`; `shared/tools/perfetto-build.sh` builds one).\n",
            o.perfetto.display()
        ));
    }
    Ok(t)
}

/// Perfetto's trace processor importing the trace and counting its slices.
fn perfetto_row(o: &Options, file: &str) -> Row {
    let query = o.dir.join("read-table-query.sql");
    let _ = std::fs::write(&query, "select count(*) from slice;\n");
    let args = vec![
        "-q".to_owned(),
        query.to_string_lossy().into_owned(),
        file.to_owned(),
    ];
    let cat = run(command(Path::new("cat"), &[file.to_owned()], Some(o.cpu))).unwrap_or_default();
    let one = run(command(&o.perfetto, &args, Some(o.cpu))).unwrap_or_default();
    let all = run(command(&o.perfetto, &args, None)).ok();
    let _ = std::fs::remove_file(&query);
    Row {
        name: "Perfetto `trace_processor_shell` import + `select count(*) from slice`".into(),
        one,
        // One round: an import takes minutes.
        ratio: one.cpu / cat.cpu.max(1e-3),
        all,
    }
}

fn table(title: &str, size: u64, records: u64, cat: Usage, rows: &[Row]) -> String {
    let mb = size as f64 / 1e6;
    let mut t = format!(
        "### {title} ({mb:.0} MB, {records} records)\n\n\
         `cat FILE > /dev/null` (page cache, one core): {:.3} CPU s, {:.0} MB/s. \
         × `cat`: the median of {ROUNDS} rounds of `cat` then the command on one core.\n\n\
         | command | CPU s, 1 core | wall s, 1 core | wall s, all cores | MB/s (1 core, CPU) | peak MB | × `cat` (CPU) |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        cat.cpu,
        mb / cat.cpu.max(1e-3),
    );
    for r in rows {
        let failed = if r.one.ok && r.all.is_none_or(|a| a.ok) {
            ""
        } else {
            " (failed)"
        };
        let all = r.all.map_or("–".into(), |a| format!("{:.2}", a.wall));
        t.push_str(&format!(
            "| {}{failed} | {:.2} | {:.2} | {all} | {:.0} | {:.0} | {:.1} |\n",
            r.name,
            r.one.cpu,
            r.one.wall,
            mb / r.one.cpu.max(1e-3),
            r.one.max_rss as f64 / 1e6,
            r.ratio,
        ));
    }
    t
}

/// The records of the trace at `path` (every step of the decoder, damage
/// included), read as a stream: a copy of the file in this process would
/// be counted in its children's peak memory. A file that does not begin
/// with the magic number record is not a trace.
fn count_records(path: &Path) -> Result<u64, String> {
    let shown = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut file = std::fs::File::open(path).map_err(shown)?;
    let mut head = [0u8; 8];
    let magic = fxt_format::encode::header::MAGIC_RECORD.to_le_bytes();
    if file.read_exact(&mut head).is_err() || head != magic {
        return Err(format!("{}: not an FXT trace", path.display()));
    }
    file.rewind().map_err(shown)?;
    Ok(fxt_format::decode::StreamReader::new(file).count() as u64)
}

fn main() -> std::process::ExitCode {
    // `read-table --generate FILE GB`: only write the trace (for profiling).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, file, gb] = &args[..] {
        if flag == "--generate" {
            let bytes = (gb.parse::<f64>().unwrap_or(0.1) * 1e9) as u64;
            return match generate(Path::new(file), bytes) {
                Ok(records) => {
                    eprintln!("read-table: wrote {file}: {records} records");
                    std::process::ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("read-table: {file}: {e}");
                    std::process::ExitCode::FAILURE
                }
            };
        }
    }
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("read-table: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // Every trace named is looked at before anything is measured.
    let mut traces = Vec::new();
    for path in &o.traces {
        match count_records(path) {
            Ok(records) => traces.push((path, records)),
            Err(e) => {
                eprintln!("read-table: {e}");
                return std::process::ExitCode::from(2);
            }
        }
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut text = format!(
        "Command: `cargo run --release -p fxt-bench --bin read-table --{}{}` \
         (fxt built with `cargo build --release -p fxt-cli`). {} logical cores; \
         load average at the start: {}.\n\n",
        if args.is_empty() { "" } else { " " },
        args.join(" "),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        fxt_bench::host::load_average(),
    );
    for &gb in &o.sizes_gb {
        match measure_size(&o, gb) {
            Ok(t) => text.push_str(&t),
            Err(e) => {
                eprintln!("read-table: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
        text.push('\n');
    }
    for (path, records) in traces {
        let title = format!("`{}`", path.display());
        match measure_file(&o, path, &title, records) {
            Ok(t) => text.push_str(&t),
            Err(e) => {
                eprintln!("read-table: {e}");
                return std::process::ExitCode::FAILURE;
            }
        }
        text.push('\n');
    }
    text.push_str(&format!(
        "Load average at the end: {}.\n",
        fxt_bench::host::load_average()
    ));
    if o.stdout {
        println!("{text}");
    } else if let Err(e) = report::write_sections(&o.out, &[("reading", text)]) {
        eprintln!("read-table: {}: {e}", o.out.display());
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
