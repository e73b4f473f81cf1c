//! The guide's walkthrough of `docs/guide/running-service.md`, as a newcomer
//! types it: the provider example (`examples/provider.rs`) serving in one
//! terminal, `fxt trace list`, `start`, `snapshot -o now.fxt`,
//! `stop -o t.fxt` and `fxt stats t.fxt` in another, each terminal in a
//! folder of its own, with relative names: the traces land in the second
//! terminal's folder, nothing in the server's.
//!
//! ```text
//! cargo test -p fxt-cli --test provider_example
//! ```
//!
//! The test binary is also the example (environment variable
//! `FXT_EXAMPLE_ROLE`): it runs the example's own `serve` (the example's
//! file is compiled into this test, so nothing else is built) after
//! registering as the example's `main` does, printing `handled N` as
//! requests are answered, until killed. A runtime directory of its own
//! (`XDG_RUNTIME_DIR`) keeps other tests' providers out of sight.

#[allow(dead_code)]
#[path = "../../../examples/provider.rs"]
mod example;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fxt_format::decode::{decode_all, ArgValue, EventKind, Record};

const ROLE: &str = "FXT_EXAMPLE_ROLE";
/// A bound for conditions that normally hold within milliseconds.
const PATIENCE: Duration = Duration::from_secs(60);
/// Requests answered inside a window before it is closed.
const REQUESTS: u64 = 50;

/// The example, as its `main` runs it, reporting its progress.
fn serve() -> ! {
    let _provider = fxt::register_provider("provider-example").expect("register");
    println!("ready");
    let forever = AtomicBool::new(false);
    example::serve(&forever, |n| println!("handled {n}"));
    unreachable!("the server stops only when killed")
}

/// The folder both "terminals" work in, and the server.
struct Walkthrough {
    dir: PathBuf,
    server: Child,
    handled: Arc<AtomicU64>,
}

impl Walkthrough {
    fn start() -> Walkthrough {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("provider-example");
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["xdg", "server", "client"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let mut server = Command::new(std::env::current_exe().unwrap())
            .env(ROLE, "server")
            .env("XDG_RUNTIME_DIR", dir.join("xdg"))
            .current_dir(dir.join("server"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the example");
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        let handled = Arc::new(AtomicU64::new(0));
        let h = handled.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("handled ").and_then(|n| n.parse().ok()) {
                    h.store(n, Ordering::Release);
                }
            }
        });
        Walkthrough {
            dir,
            server,
            handled,
        }
    }

    /// Runs `fxt ARGS` in the second terminal's folder.
    fn fxt(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_fxt"))
            .args(args)
            .env("XDG_RUNTIME_DIR", self.dir.join("xdg"))
            .current_dir(self.dir.join("client"))
            .output()
            .unwrap()
    }

    /// Runs `fxt ARGS`, asserts success, returns stdout and stderr.
    fn ok(&self, args: &[&str]) -> (String, String) {
        let out = self.fxt(args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "fxt {args:?}: {stderr}");
        (stdout, stderr)
    }

    /// Waits until the server answered `n` more requests; returns how many
    /// it had answered before.
    fn answer(&self, n: u64) -> u64 {
        let from = self.handled.load(Ordering::Acquire);
        let deadline = Instant::now() + PATIENCE;
        while self.handled.load(Ordering::Acquire) < from + n {
            assert!(Instant::now() < deadline, "the server stalled");
            std::thread::sleep(Duration::from_millis(5));
        }
        from
    }
}

impl Drop for Walkthrough {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// The `id`s of the `handle` slices of a trace, whose one provider must be
/// the example.
fn handled_ids(path: &Path) -> Vec<u64> {
    let records = decode_all(&std::fs::read(path).unwrap()).expect("a clean trace");
    let providers: Vec<&str> = records
        .iter()
        .filter_map(|r| match r {
            Record::ProviderInfo { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(providers, ["provider-example"], "{}", path.display());
    records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e)
                if e.name == "handle" && matches!(e.kind, EventKind::DurationComplete { .. }) =>
            {
                e.args.iter().find_map(|a| match a.value {
                    ArgValue::U64(id) if a.name == "id" => Some(id),
                    _ => None,
                })
            }
            _ => None,
        })
        .collect()
}

fn walkthrough() {
    let w = Walkthrough::start();
    // Terminal 2.
    let (list, _) = w.ok(&["trace", "list"]);
    let pid = w.server.id().to_string();
    assert!(
        list.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == [pid.as_str(), "dormant", "provider-example", "server"]),
        "{list}"
    );
    w.ok(&["trace", "start"]);
    // Every request answered after `start` returned is in the window.
    // (read before each command: a request answered while it runs may or
    // may not be in its trace).
    let opened = w.answer(REQUESTS);
    let snapped = w.handled.load(Ordering::Acquire);
    w.ok(&["trace", "snapshot", "-o", "now.fxt"]);
    w.answer(REQUESTS);
    let stopped_after = w.handled.load(Ordering::Acquire);
    w.ok(&["trace", "stop", "-o", "t.fxt"]);

    let now = handled_ids(&w.dir.join("client/now.fxt"));
    let all = handled_ids(&w.dir.join("client/t.fxt"));
    // A worker's request in hand when the window opened may be cut off.
    let in_hand = example::WORKERS;
    assert!(now.len() as u64 + in_hand >= snapped - opened, "{now:?}");
    assert!(all.len() as u64 + in_hand >= stopped_after - opened);
    assert!(now.len() < all.len(), "tracing went on after the snapshot");
    let mut ids = all.clone();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), all.len(), "each request once");

    let (stats, _) = w.ok(&["stats", "t.fxt"]);
    assert!(
        stats.contains("provider      #1 \"provider-example\""),
        "{stats}"
    );
    for name in ["handle", "parse", "compute", "respond", "load"] {
        assert!(
            stats.lines().any(|l| l
                .trim_end()
                .ends_with(&format!("server                {name}"))),
            "{name} in {stats}"
        );
    }
    // The traces are where terminal 2 named them; nothing of the window
    // is left anywhere else.
    let files = |sub: &str| -> Vec<String> {
        let mut files: Vec<String> = std::fs::read_dir(w.dir.join(sub))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        files
    };
    assert_eq!(files("client"), ["now.fxt", "t.fxt"]);
    assert_eq!(files("server"), Vec::<String>::new());
}

fn main() {
    if std::env::var(ROLE).is_ok() {
        serve();
    }
    walkthrough();
    println!("test the guide's walkthrough of the provider example ... ok");
}
