//! `fxt trace`: windows opened in running provider processes.
//!
//! ```text
//! cargo test -p fxt-cli --test trace
//! ```
//!
//! The test binary is also the provider (environment variable
//! `FXT_TRACE_ROLE`): it registers with `fxt::register_provider` under the
//! name `FXT_TRACE_NAME` and, until killed, emits one instant `tick` in
//! each of the categories `alpha`, `beta` and `gamma` per round (argument
//! `seq`, the round), printing `seq N` after every round so the test knows
//! how far it got. Every test has its own runtime directory
//! (`XDG_RUNTIME_DIR`), so tests never see each other's providers.
//!
//! Nothing here waits a fixed time: a test waits for a provider's rounds
//! (or a file, or an exit) with a generous bound, then asserts properties
//! of the archive: which providers, which categories, which rounds.

mod cli_support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cli_support::raw_ns;
use fxt::trace_instant;
use fxt_format::decode::{decode_all, ArgValue, EventKind, Record, Thread};

const ROLE: &str = "FXT_TRACE_ROLE";
const NAME: &str = "FXT_TRACE_NAME";
/// A bound for conditions that normally hold within milliseconds.
const PATIENCE: Duration = Duration::from_secs(60);
/// Rounds a provider must emit after a window opened before it closes.
const ROUNDS: u64 = 20;

/// The provider: registers, then emits rounds until killed.
fn provider(role: &str) -> ! {
    let name = std::env::var(NAME).unwrap_or_else(|_| "tp".into());
    let _own = (role == "own").then(|| {
        fxt::start(fxt::Config::new().output("own.fxt").buffer_size(1 << 20)).expect("own session")
    });
    let _provider = fxt::register_provider(&name).expect("register");
    println!("ready");
    if role == "spinner" {
        spin_rounds();
    }
    for seq in 0u64.. {
        trace_instant!("alpha", "tick", "seq" => seq);
        trace_instant!("beta", "tick", "seq" => seq);
        trace_instant!("gamma", "tick", "seq" => seq);
        println!("seq {seq}");
        std::thread::sleep(Duration::from_millis(2));
    }
    unreachable!()
}

/// The spinner provider's rounds, until killed: each burns CPU time in
/// `spin_cpu` inside a span `spin`.
fn spin_rounds() -> ! {
    for seq in 0u64.. {
        {
            let _span = fxt::trace_duration_scope!("alpha", "spin");
            spin_cpu(5_000_000);
        }
        println!("seq {seq}");
    }
    unreachable!()
}

/// Burns `ns` of the thread's CPU time: a function of its own, so that a
/// sample taken in it is known to lie inside the span around its call.
#[inline(never)]
fn spin_cpu(ns: u64) {
    let cpu_ns = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is valid for the call.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    };
    let start = cpu_ns();
    let mut x = 1u64;
    while cpu_ns() - start < ns {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

/// A test's scratch folder and runtime directory.
struct Env {
    dir: PathBuf,
    runtime: PathBuf,
    children: Vec<Provider>,
}

/// A provider process and the last round it reported.
struct Provider {
    child: Child,
    seq: Arc<AtomicU64>,
    cwd: PathBuf,
}

impl Provider {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last round it finished (`u64::MAX` before the first).
    fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    /// Waits until it finished `rounds` more rounds than now; returns the
    /// round it had reached.
    fn progress(&self, rounds: u64) -> u64 {
        let from = self.seq();
        wait_for(&format!("pid {} to go on", self.pid()), || {
            self.seq().wrapping_sub(from) >= rounds && self.seq() != u64::MAX
        });
        from
    }

    fn signal(&self, sig: libc::c_int) {
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(self.pid() as i32, sig) };
    }
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !cond() {
        assert!(Instant::now() < deadline, "waited {PATIENCE:?} for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Env {
    fn new(name: &str) -> Env {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("trace-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("xdg")).unwrap();
        Env {
            runtime: dir.join("xdg").join("fxt"),
            dir,
            children: Vec::new(),
        }
    }

    /// Starts a provider named `name` and waits until it registered.
    fn spawn(&mut self, name: &str, role: &str) -> usize {
        let cwd = self.dir.join(format!("cwd-{name}-{}", self.children.len()));
        std::fs::create_dir_all(&cwd).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(ROLE, role)
            .env(NAME, name)
            .env("XDG_RUNTIME_DIR", self.dir.join("xdg"))
            .current_dir(&cwd)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn a provider");
        let seq = Arc::new(AtomicU64::new(u64::MAX));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        assert_eq!(lines.next().unwrap().unwrap(), "ready");
        let s = seq.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if let Some(n) = line.strip_prefix("seq ").and_then(|n| n.parse().ok()) {
                    s.store(n, Ordering::Release);
                }
            }
        });
        self.children.push(Provider { child, seq, cwd });
        self.children.len() - 1
    }

    fn fxt(&self, args: &[&str]) -> Output {
        self.fxt_in(&self.dir, args)
    }

    /// `fxt trace ARGS` run in folder `cwd`.
    fn fxt_in(&self, cwd: &Path, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_fxt"))
            .arg("trace")
            .args(args)
            .env("XDG_RUNTIME_DIR", self.dir.join("xdg"))
            .current_dir(cwd)
            .output()
            .unwrap()
    }

    /// Runs `fxt trace ARGS`, asserts success, returns stderr.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.fxt(args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "fxt trace {args:?}: {stderr}");
        stderr
    }

    fn out(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    /// `fxt trace list`: pid -> (state, name, categories).
    fn list(&self) -> BTreeMap<u32, (String, String, String)> {
        let out = self.fxt(&["list"]);
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        // PID, STATE (may hold one space), NAME, CATEGORIES.
        text.lines()
            .skip(1)
            .map(|l| {
                let cols: Vec<&str> = l.split("  ").filter(|c| !c.trim().is_empty()).collect();
                let pid = cols[0].trim().parse().unwrap();
                let col = |i: usize| cols.get(i).map_or("", |c| c.trim()).to_owned();
                (pid, (col(1), col(2), col(3)))
            })
            .collect()
    }

    fn alive(&mut self, i: usize) -> bool {
        self.children[i].child.try_wait().unwrap().is_none()
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        for p in &mut self.children {
            p.signal(libc::SIGCONT);
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
}

/// A provider of an archive: its name, the pids of its threads, and per
/// category the rounds of its `tick`s with their timestamps.
#[derive(Debug, Default)]
struct Traced {
    name: String,
    pids: BTreeSet<u64>,
    ticks: BTreeMap<String, Vec<(u64, u64)>>,
}

impl Traced {
    fn rounds(&self, category: &str) -> Vec<u64> {
        self.ticks
            .get(category)
            .map(|t| t.iter().map(|&(seq, _)| seq).collect())
            .unwrap_or_default()
    }

    fn pid(&self) -> u32 {
        assert_eq!(self.pids.len(), 1, "one process per provider: {self:?}");
        *self.pids.iter().next().unwrap() as u32
    }
}

/// The providers of an archive that hold events, by pid.
fn archive(path: &str) -> BTreeMap<u32, Traced> {
    let bytes = std::fs::read(path).unwrap();
    let records = decode_all(&bytes).expect("the archive decodes");
    let mut by_id: BTreeMap<u32, Traced> = BTreeMap::new();
    let mut current = 0;
    for r in records {
        match r {
            Record::ProviderInfo { provider_id, name } => {
                by_id.entry(provider_id).or_default().name = name;
                current = provider_id;
            }
            Record::ProviderSection { provider_id } => current = provider_id,
            Record::Initialization { ticks_per_second } => {
                assert_eq!(ticks_per_second, 1_000_000_000, "one time base: ns");
            }
            // The runtime's own instants (a snapshot's mark) have no round.
            Record::Event(e) if e.kind == EventKind::Instant && e.name.as_str() == Some("tick") => {
                let p = by_id.entry(current).or_default();
                let Thread::Known { process, .. } = e.thread else {
                    panic!("undefined thread ref: {e:?}")
                };
                p.pids.insert(process);
                let seq = e
                    .args
                    .iter()
                    .find(|a| a.name == "seq")
                    .map(|a| match a.value {
                        ArgValue::U64(v) => v,
                        ref v => panic!("{v:?}"),
                    });
                let category = e.category.as_str().unwrap_or("").to_owned();
                p.ticks
                    .entry(category)
                    .or_default()
                    .push((seq.unwrap(), e.timestamp));
            }
            _ => {}
        }
    }
    by_id
        .into_values()
        .filter(|p| !p.pids.is_empty())
        .map(|p| (p.pid(), p))
        .collect()
}

/// Every round from the first to the last, once each, in order.
fn contiguous(rounds: &[u64]) -> bool {
    rounds.windows(2).all(|w| w[1] == w[0] + 1)
}

/// Dormant providers are listed and write nothing; a dead provider's
/// socket is removed.
fn list_dormant() {
    let mut env = Env::new("list");
    let a = env.spawn("alpha-server", "provider");
    let b = env.spawn("beta-server", "provider");
    env.children[a].progress(5);
    env.children[b].progress(5);
    // A socket left by a process that no longer exists (no pid is this
    // large).
    std::fs::create_dir_all(&env.runtime).unwrap();
    let stale = env.runtime.join("2147483646.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    let listed = env.list();
    assert_eq!(listed.len(), 2, "{listed:?}");
    for (i, name) in [(a, "alpha-server"), (b, "beta-server")] {
        let (state, n, categories) = &listed[&env.children[i].pid()];
        assert_eq!((state.as_str(), n.as_str()), ("dormant", name));
        // The categories of the call sites that ran, though nothing records.
        assert_eq!(categories, "alpha,beta,gamma");
        // A dormant provider writes no file.
        assert_eq!(std::fs::read_dir(&env.children[i].cwd).unwrap().count(), 0);
    }
    assert!(!stale.exists(), "the stale socket is removed");
    let files: Vec<String> = std::fs::read_dir(&env.runtime)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 2, "only the two sockets: {files:?}");
}

/// A window with --categories: every provider's rounds of the window in
/// exactly the enabled categories, within the window; the providers run
/// on, dormant again; a second window works.
fn window_categories() {
    let mut env = Env::new("categories");
    let ids: Vec<usize> = (0..3)
        .map(|i| env.spawn(&format!("p{i}"), "provider"))
        .collect();
    for round in 0..2 {
        let before = raw_ns();
        let out = env.out(&format!("w{round}.fxt"));
        env.ok(&["start", "--categories", "alpha,beta"]);
        let from: Vec<u64> = ids
            .iter()
            .map(|&i| env.children[i].progress(ROUNDS))
            .collect();
        let stderr = env.ok(&["stop", "-o", &out]);
        let after = raw_ns();
        assert!(stderr.contains("fxt trace: 3 processes, "), "{stderr}");
        let traced = archive(&out);
        assert_eq!(traced.len(), 3, "{traced:#?}");
        for (k, &i) in ids.iter().enumerate() {
            let t = &traced[&env.children[i].pid()];
            assert_eq!(t.name, format!("p{k}"));
            let cats: Vec<&str> = t.ticks.keys().map(String::as_str).collect();
            assert_eq!(cats, ["alpha", "beta"], "only the enabled categories");
            let alpha = t.rounds("alpha");
            // A round writes alpha, then beta: the session may start
            // between the two (beta has the round alpha lacks at the
            // start) or stop between them (alpha has one more at the end).
            let mut beta = t.rounds("beta");
            if matches!((beta.first(), alpha.first()), (Some(b), Some(a)) if b < a) {
                beta.remove(0);
            }
            let mut both = alpha.clone();
            if both.last() > beta.last() {
                both.pop();
            }
            assert_eq!(both, beta, "alpha and beta in the same rounds");
            assert!(contiguous(&alpha), "every round once: {alpha:?}");
            // The rounds run after start returned are all there.
            let first = from[k].wrapping_add(1);
            assert!(alpha.first().is_some_and(|&f| f <= first), "{alpha:?}");
            assert!(alpha.last().is_some_and(|&l| l >= first + ROUNDS - 1));
            for (_, ts) in t.ticks.values().flatten() {
                assert!((before..=after).contains(ts), "{ts} outside the window");
            }
            assert!(env.alive(i), "the provider runs on");
        }
        let listed = env.list();
        assert!(
            listed.values().all(|(s, _, _)| s == "dormant"),
            "{listed:?}"
        );
    }
    assert!(!env.runtime.join("window").exists(), "the state is removed");
}

/// start, snapshot (tracing goes on), stop; a second start while a window
/// is open is an error; a stop without a window too.
fn snapshot_and_second_start() {
    let mut env = Env::new("snapshot");
    let a = env.spawn("snap", "provider");
    env.ok(&["start", "-p", &env.children[a].pid().to_string()]);
    let second = env.fxt(&["start"]);
    assert_eq!(second.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&second.stderr).contains("a window is already open"));
    let from = env.children[a].progress(ROUNDS);
    let snap = env.out("snap.fxt");
    env.ok(&["snapshot", "-o", &snap]);
    let s = archive(&snap);
    let rounds = s[&env.children[a].pid()].rounds("gamma");
    assert!(rounds.contains(&(from + ROUNDS)), "{rounds:?}");
    let later = env.children[a].progress(ROUNDS);
    let out = env.out("all.fxt");
    env.ok(&["stop", "-o", &out]);
    let all = archive(&out);
    let rounds = all[&env.children[a].pid()].rounds("gamma");
    assert!(contiguous(&rounds));
    assert!(
        rounds.contains(&(later + ROUNDS)),
        "tracing went on after the snapshot"
    );
    let none = env.fxt(&["stop", "-o", &out]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no window is open"));
}

/// Relative names typed in another folder than the provider's mean that
/// folder: the spool (`--spool-dir`), the snapshot and the archive land
/// there with the provider's events, nothing in the provider's folder.
fn relative_names() {
    let mut env = Env::new("relative");
    let a = env.spawn("rel", "provider");
    let b = env.dir.join("b");
    std::fs::create_dir_all(b.join("spools")).unwrap();
    let ok = |args: &[&str]| {
        let out = env.fxt_in(&b, args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "fxt trace {args:?}: {stderr}");
    };
    ok(&["start", "--spool-dir", "spools"]);
    let from = env.children[a].progress(ROUNDS);
    ok(&["snapshot", "-o", "now.fxt"]);
    let pid = env.children[a].pid();
    let rounds = archive(&b.join("now.fxt").to_string_lossy())[&pid].rounds("alpha");
    assert!(rounds.contains(&(from + ROUNDS)), "{rounds:?}");
    ok(&["stop", "-o", "all.fxt"]);
    let rounds = archive(&b.join("all.fxt").to_string_lossy())[&pid].rounds("alpha");
    assert!(rounds.contains(&(from + ROUNDS)), "{rounds:?}");
    let cwd = &env.children[a].cwd;
    assert_eq!(std::fs::read_dir(cwd).unwrap().count(), 0, "{cwd:?}");
    assert_eq!(std::fs::read_dir(b.join("spools")).unwrap().count(), 0);
}

/// A stop that gets no provider's trace (the only provider was killed and
/// its trace is gone) fails, says why, writes no archive and closes the
/// window.
fn stop_without_traces() {
    let mut env = Env::new("notrace");
    let a = env.spawn("gone", "provider");
    env.ok(&["start"]);
    let pid = env.children[a].pid();
    env.children[a].child.kill().unwrap();
    env.children[a].child.wait().unwrap();
    let state = std::fs::read_to_string(env.dir.join("xdg/fxt/window")).unwrap();
    let spool = state
        .lines()
        .find_map(|l| l.strip_prefix("spool "))
        .unwrap();
    for e in std::fs::read_dir(spool).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let out = env.out("none.fxt");
    let r = env.fxt(&["stop", "-o", &out]);
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "no provider's trace reached the spool (pid {pid}: ended)"
        )),
        "{stderr}"
    );
    assert!(!Path::new(&out).exists());
    assert!(!Path::new(spool).exists());
    assert!(!env.dir.join("xdg/fxt/window").exists());
}

/// A provider killed with SIGKILL mid-window keeps what it published and
/// is named unfinished; a SIGSTOPped one delays stop by a bounded time, is
/// named, and the others are written.
fn killed_and_stopped() {
    let mut env = Env::new("killed");
    let victim = env.spawn("victim", "provider");
    let frozen = env.spawn("frozen", "provider");
    let healthy = env.spawn("healthy", "provider");
    // A small buffer: the unused space of the unfinished files is small.
    env.ok(&["start", "--buffer", "1M"]);
    let from = env.children[victim].progress(ROUNDS);
    env.children[frozen].progress(ROUNDS);
    env.children[victim].child.kill().unwrap();
    env.children[victim].child.wait().unwrap();
    env.children[frozen].signal(libc::SIGSTOP);
    env.children[healthy].progress(ROUNDS);
    // A snapshot without the stopped provider is written, names it and
    // says so in its exit status.
    let snap = env.out("partial.fxt");
    let partial = env.fxt(&["snapshot", "-o", &snap]);
    let stderr = String::from_utf8_lossy(&partial.stderr);
    assert_eq!(partial.status.code(), Some(1), "{stderr}");
    let fp = env.children[frozen].pid();
    assert!(
        stderr.contains(&format!("the snapshot lacks pid {fp} ")),
        "{stderr}"
    );
    assert_eq!(
        archive(&snap).keys().copied().collect::<Vec<_>>(),
        [env.children[healthy].pid()]
    );
    let out = env.out("k.fxt");
    let began = Instant::now();
    let stderr = env.ok(&["stop", "-o", &out]);
    // The provider that does not answer costs its timeout, not forever.
    assert!(began.elapsed() < Duration::from_secs(30), "{stderr}");
    let (vp, fp) = (env.children[victim].pid(), env.children[frozen].pid());
    assert!(
        stderr.contains(&format!("pid {vp} ended during the window")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("pid {fp} did not answer Stop")),
        "{stderr}"
    );
    let traced = archive(&out);
    assert_eq!(traced.len(), 3, "{traced:#?}");
    let v = &traced[&vp];
    assert_eq!(v.name, "victim (unfinished)");
    let rounds = v.rounds("alpha");
    assert!(
        contiguous(&rounds) && rounds.contains(&(from + ROUNDS)),
        "{rounds:?}"
    );
    assert!(!traced[&fp].rounds("alpha").is_empty());
    let h = &traced[&env.children[healthy].pid()];
    assert_eq!(h.name, "healthy");
    assert!(contiguous(&h.rounds("alpha")));

    // Resumed, the stopped provider takes part in the next window (its
    // session of the closed window, if it still runs, is ended first).
    env.children[frozen].signal(libc::SIGCONT);
    env.ok(&["start", "--buffer", "1M"]);
    let from = env.children[frozen].progress(ROUNDS);
    let out = env.out("k2.fxt");
    env.ok(&["stop", "-o", &out]);
    let f = &archive(&out)[&fp];
    assert_eq!(f.name, "frozen");
    assert!(f.rounds("alpha").contains(&(from + ROUNDS)));
}

/// A provider running its own session is listed as such, left alone by
/// start (and named), and in the snapshot through its own session.
fn own_session() {
    let mut env = Env::new("own");
    let own = env.spawn("own", "own");
    let other = env.spawn("other", "provider");
    let op = env.children[own].pid();
    assert_eq!(env.list()[&op].0, "own session");
    let stderr = env.ok(&["start"]);
    assert!(
        stderr.contains(&format!("left alone: pid {op} (own): runs its own session")),
        "{stderr}"
    );
    env.children[own].progress(ROUNDS);
    env.children[other].progress(ROUNDS);
    let snap = env.out("snap.fxt");
    env.ok(&["snapshot", "-o", &snap]);
    let s = archive(&snap);
    assert_eq!(s.len(), 2, "{s:#?}");
    assert!(!s[&op].rounds("beta").is_empty());
    let out = env.out("w.fxt");
    env.ok(&["stop", "-o", &out]);
    let w = archive(&out);
    assert_eq!(
        w.keys().copied().collect::<Vec<_>>(),
        [env.children[other].pid()]
    );
    assert_eq!(env.list()[&op].0, "own session", "its session goes on");
}

/// `record --duration` ends by itself and on SIGINT; a window whose
/// manager was killed is still stopped from another process; -p and
/// --name choose.
fn record_and_orphaned_window() {
    let mut env = Env::new("record");
    let a = env.spawn("a", "provider");
    let b = env.spawn("b", "provider");
    let (ap, bp) = (env.children[a].pid(), env.children[b].pid());
    let out = env.out("r.fxt");
    let stderr = env.ok(&["record", "--duration", "0.2", "--name", "b", "-o", &out]);
    assert!(stderr.contains("fxt trace: 1 processes, "), "{stderr}");
    // Only b was traced (how many of its rounds fall in 0.2 s is up to
    // the machine's load).
    assert!(archive(&out).keys().all(|&p| p == bp));

    // A manager that waits long, killed once the window is open.
    let mut manager = Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args([
            "trace",
            "record",
            "--duration",
            "3600",
            "-p",
            &ap.to_string(),
            "-o",
            &out,
        ])
        .env("XDG_RUNTIME_DIR", env.dir.join("xdg"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the window", || {
        env.list().get(&ap).is_some_and(|s| s.0 == "tracing")
    });
    let from = env.children[a].progress(ROUNDS);
    manager.kill().unwrap();
    manager.wait().unwrap();
    env.ok(&["stop", "-o", &out]);
    let rounds = archive(&out)[&ap].rounds("alpha");
    assert!(rounds.contains(&(from + ROUNDS)), "{rounds:?}");

    // SIGINT ends a long window early, the archive is written.
    std::fs::remove_file(&out).unwrap();
    let manager = Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args(["trace", "record", "--duration", "3600", "-o", &out])
        .env("XDG_RUNTIME_DIR", env.dir.join("xdg"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the window", || {
        env.list().values().all(|s| s.0 == "tracing")
    });
    // Rounds recorded in the window by both, then the early end.
    env.children[a].progress(ROUNDS);
    env.children[b].progress(ROUNDS);
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(manager.id() as i32, libc::SIGINT) };
    let r = manager.wait_with_output().unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(archive(&out).len(), 2);
}

/// `--sched`: the window's archive holds the providers' scheduling (when
/// this machine lets us capture it).
fn sched() {
    let mut env = Env::new("sched");
    let a = env.spawn("napper", "provider");
    let stderr = env.ok(&["start", "--sched"]);
    if let Some(why) = stderr.lines().find(|l| l.contains("--sched:")) {
        println!("skipped: {why}");
        env.ok(&["stop", "-o", &env.out("none.fxt")]);
        return;
    }
    env.children[a].progress(ROUNDS);
    let out = env.out("s.fxt");
    let stderr = env.ok(&["stop", "-o", &out]);
    assert!(stderr.contains("fxt trace: scheduling: "), "{stderr}");
    let pid = u64::from(env.children[a].pid());
    let records = decode_all(&std::fs::read(&out).unwrap()).unwrap();
    let mut provider = String::new();
    let (mut named, mut switched) = (false, 0);
    for r in &records {
        match r {
            Record::ProviderInfo { name, .. } => provider = name.clone(),
            Record::KernelObject(o) if o.koid == pid && provider == "kernel scheduler" => {
                named = true
            }
            Record::ContextSwitch(c) => {
                assert_eq!(provider, "kernel scheduler");
                if c.outgoing_thread == pid {
                    switched += 1;
                }
            }
            _ => {}
        }
    }
    assert!(named, "the scheduler names the provider's process");
    // Each round sleeps: the provider's main thread was switched out at
    // least once per round it ran in the window.
    assert!(switched >= ROUNDS, "{switched} context switches");
    assert!(!env.dir.join("xdg/fxt/window").exists());
}

/// `start --sample`, snapshot, stop: in both archives every sample taken
/// in `spin_cpu` lies inside a `spin` slice on its thread, and Perfetto's
/// packets place every sample where the `fxt.sample` records do.
fn samples_where_taken() {
    let mut env = Env::new("samples");
    let a = env.spawn("spin", "spinner");
    let pid = env.children[a].pid().to_string();
    env.ok(&["start", "--sample", "1000", "-p", &pid]);
    env.children[a].progress(ROUNDS);
    let snap = env.out("snap.fxt");
    env.ok(&["snapshot", "-o", &snap]);
    assert_samples_where_taken(&snap);
    env.children[a].progress(ROUNDS);
    let out = env.out("all.fxt");
    env.ok(&["stop", "-o", &out]);
    assert_samples_where_taken(&out);
}

/// `start --sample` over the runtime's limit is refused at the command
/// line (exit status 2): no window opens.
fn sample_rate_out_of_range() {
    let mut env = Env::new("sample-range");
    let a = env.spawn("range", "provider");
    let pid = env.children[a].pid().to_string();
    let over = (fxt_format::samples::MAX_SAMPLE_HZ + 1).to_string();
    let out = env.fxt(&["start", "--sample", &over, "-p", &pid]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--sample"), "{stderr}");
    assert!(!env.dir.join("xdg/fxt/window").exists(), "a window opened");
    assert_eq!(env.list()[&env.children[a].pid()].0, "dormant");
}

fn assert_samples_where_taken(archive: &str) {
    let bytes = std::fs::read(archive).unwrap();
    let (between, inside) = cli_support::samples_between_slices(&bytes, "trace::spin_cpu", "spin");
    // Rounds of 5 ms of CPU time in the function: at the kernel's tick
    // (100 Hz or more) some of its samples unwind through it whatever
    // the source.
    assert!(between >= 3, "{archive}: {between} samples in spin_cpu");
    assert_eq!(inside, between, "{archive}: samples outside their span");
    let (fxt, perfetto) = cli_support::fxt_and_perfetto_samples(&bytes);
    assert_eq!(perfetto, fxt, "{archive}: Perfetto's samples differ");
    cli_support::perfetto::assert_perfetto_places_samples(std::path::Path::new(archive), "spin");
}

fn main() {
    if let Ok(r) = std::env::var(ROLE) {
        provider(&r);
    }
    let tests: [(&str, fn()); 11] = [
        ("list: dormant providers, stale sockets", list_dormant),
        ("a window with --categories, twice", window_categories),
        (
            "start, snapshot, stop; second start",
            snapshot_and_second_start,
        ),
        ("relative names from another folder", relative_names),
        ("a stop that gets no trace", stop_without_traces),
        ("a killed and a stopped provider", killed_and_stopped),
        ("a provider with its own session", own_session),
        (
            "record, and a window whose manager died",
            record_and_orphaned_window,
        ),
        ("--sched", sched),
        ("--sample: samples inside their slices", samples_where_taken),
        ("--sample over the limit", sample_rate_out_of_range),
    ];
    let only = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    for (name, test) in tests {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        test();
        println!("test {name} ... ok");
    }
}
