//! The open window's state: `window` in the caller's runtime directory
//! (private to the user, see `fxt_control::runtime_dir`), so that `fxt
//! trace stop` from another shell, or after the manager that started the
//! window was killed, still finds everything.
//!
//! The file is small text, one `key value` per line after a version line.
//! It is created exclusively with its whole content (written to a private
//! temporary file, then hard-linked to `window`: the link fails if a window
//! is already open, and nobody ever sees a half-written state), and later
//! replaced atomically (rename). Values never hold a newline: every path
//! and option is checked when the window starts.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use fxt_control::Mode;

use crate::recording::timebase::Anchor;

/// The file name of the state in the runtime directory.
const NAME: &str = "window";
const HEADER: &str = "fxt-trace-window 1";

/// The scheduling recorder of a window (`--sched`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Daemon {
    /// Its pid.
    pub pid: u32,
    /// Its start time (`/proc/PID/stat`, clock ticks since boot): a pid
    /// reused by another process is never signalled.
    pub start_time: u64,
}

/// An open window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// Its id, sent to the providers with Start and Stop.
    pub id: u64,
    /// The private spool folder the providers write into.
    pub spool: PathBuf,
    /// The providers that started a session for the window.
    pub providers: Vec<u32>,
    /// Options sent with Start.
    pub categories: Option<String>,
    /// Buffering mode sent with Start.
    pub mode: Option<Mode>,
    /// Buffer size sent with Start.
    pub buffer: Option<u64>,
    /// CPU sampling rate sent with Start.
    pub sample: Option<u32>,
    /// Allocation sampling mean sent with Start.
    pub alloc_sample: Option<u64>,
    /// The time base anchor taken when the window opened.
    pub start: Option<Anchor>,
    /// The scheduling recorder, with `--sched`.
    pub sched: Option<Daemon>,
}

/// Why the state cannot be created or read.
#[derive(Debug)]
pub enum StateError {
    /// A window is already open.
    Open(Box<Window>),
    /// No window is open.
    None,
    /// The file exists but does not parse.
    Damaged(PathBuf, String),
    /// Reading or writing failed.
    Io(PathBuf, io::Error),
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StateError::Open(w) => write!(
                f,
                "a window is already open (window {:016x}, spool {}); end it with `fxt trace stop -o FILE`",
                w.id,
                w.spool.display()
            ),
            StateError::None => f.write_str("no window is open (start one with `fxt trace start`)"),
            StateError::Damaged(p, why) => write!(
                f,
                "{}: not a window state ({why}); remove it to start a new window",
                p.display()
            ),
            StateError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

/// The state file of `runtime`.
pub fn path(runtime: &Path) -> PathBuf {
    runtime.join(NAME)
}

impl Window {
    fn to_text(&self) -> String {
        let mut t = format!("{HEADER}\nid {:016x}\n", self.id);
        t.push_str(&format!("spool {}\n", self.spool.display()));
        let pids: Vec<String> = self.providers.iter().map(u32::to_string).collect();
        t.push_str(&format!("providers {}\n", pids.join(",")));
        if let Some(c) = &self.categories {
            t.push_str(&format!("categories {c}\n"));
        }
        if let Some(m) = self.mode {
            t.push_str(&format!("mode {}\n", m.name()));
        }
        if let Some(b) = self.buffer {
            t.push_str(&format!("buffer {b}\n"));
        }
        if let Some(hz) = self.sample {
            t.push_str(&format!("sample {hz}\n"));
        }
        if let Some(bytes) = self.alloc_sample {
            t.push_str(&format!("alloc_sample {bytes}\n"));
        }
        if let Some(a) = self.start {
            t.push_str(&format!("start_tsc {}\nstart_ns {}\n", a.tsc, a.ns));
        }
        if let Some(d) = self.sched {
            t.push_str(&format!(
                "sched_pid {}\nsched_start {}\n",
                d.pid, d.start_time
            ));
        }
        t
    }

    fn parse(text: &str) -> Result<Window, String> {
        let mut lines = text.lines();
        if lines.next() != Some(HEADER) {
            return Err(format!("the first line is not `{HEADER}`"));
        }
        let fields: Vec<(&str, &str)> = lines.filter_map(|l| l.split_once(' ')).collect();
        let get = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        let num = |key: &str| -> Result<Option<u64>, String> {
            get(key)
                .map(|v| v.parse().map_err(|_| format!("bad {key}: {v}")))
                .transpose()
        };
        let id = get("id")
            .and_then(|v| u64::from_str_radix(v, 16).ok())
            .ok_or("no window id")?;
        let spool = PathBuf::from(get("spool").ok_or("no spool")?);
        let providers = get("providers")
            .unwrap_or("")
            .split(',')
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().map_err(|_| format!("bad pid: {p}")))
            .collect::<Result<Vec<u32>, String>>()?;
        let start = match (num("start_tsc")?, num("start_ns")?) {
            (Some(tsc), Some(ns)) => Some(Anchor { tsc, ns }),
            _ => None,
        };
        let sched = match (num("sched_pid")?, num("sched_start")?) {
            (Some(pid), Some(start_time)) => Some(Daemon {
                pid: u32::try_from(pid).map_err(|_| format!("bad sched_pid: {pid}"))?,
                start_time,
            }),
            _ => None,
        };
        Ok(Window {
            id,
            spool,
            providers,
            categories: get("categories").map(str::to_owned),
            mode: get("mode")
                .map(|m| Mode::from_name(m).ok_or(format!("bad mode: {m}")))
                .transpose()?,
            buffer: num("buffer")?,
            sample: num("sample")?
                .map(|hz| u32::try_from(hz).map_err(|_| format!("bad sample: {hz}")))
                .transpose()?,
            alloc_sample: num("alloc_sample")?,
            start,
            sched,
        })
    }

    /// Writes the state to a fresh private file beside `target` and returns
    /// its path.
    fn write_temp(&self, target: &Path) -> io::Result<PathBuf> {
        let tmp = target.with_file_name(format!(".{NAME}.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(self.to_text().as_bytes())?;
        f.sync_all()?;
        Ok(tmp)
    }

    /// Opens the window in `runtime`: fails with [`StateError::Open`] if
    /// one is open already.
    pub fn create(&self, runtime: &Path) -> Result<(), StateError> {
        let target = path(runtime);
        let io_err = |e| StateError::Io(target.clone(), e);
        let tmp = self.write_temp(&target).map_err(io_err)?;
        let linked = std::fs::hard_link(&tmp, &target);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match load(runtime) {
                Ok(w) => Err(StateError::Open(Box::new(w))),
                Err(e) => Err(e),
            },
            Err(e) => Err(io_err(e)),
        }
    }

    /// Replaces the state of the open window in `runtime`.
    pub fn update(&self, runtime: &Path) -> Result<(), StateError> {
        let target = path(runtime);
        let io_err = |e| StateError::Io(target.clone(), e);
        let tmp = self.write_temp(&target).map_err(io_err)?;
        std::fs::rename(&tmp, &target).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_err(e)
        })
    }
}

/// The open window of `runtime`.
pub fn load(runtime: &Path) -> Result<Window, StateError> {
    let target = path(runtime);
    match target.symlink_metadata() {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(StateError::Damaged(target, "not a regular file".into())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(StateError::None),
        Err(e) => return Err(StateError::Io(target, e)),
    }
    let text = std::fs::read_to_string(&target).map_err(|e| StateError::Io(target.clone(), e))?;
    Window::parse(&text).map_err(|why| StateError::Damaged(target, why))
}

/// Closes the window of `runtime`.
pub fn remove(runtime: &Path) -> io::Result<()> {
    match std::fs::remove_file(path(runtime)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> Window {
        Window {
            id: 0xfeed_beef_0000_0001,
            spool: PathBuf::from("/tmp/.fxt-record.Ab12Cd"),
            providers: vec![12, 345],
            categories: Some("net,db".into()),
            mode: Some(Mode::Circular),
            buffer: Some(1 << 20),
            sample: Some(1000),
            alloc_sample: Some(4096),
            start: Some(Anchor { tsc: 7, ns: 9 }),
            sched: Some(Daemon {
                pid: 77,
                start_time: 123,
            }),
        }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("fxt-state-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn round_trip_and_one_window_at_a_time() {
        let d = dir("once");
        assert!(matches!(load(&d), Err(StateError::None)));
        let w = window();
        w.create(&d).unwrap();
        assert_eq!(load(&d).unwrap(), w);
        let mut other = window();
        other.id = 2;
        match other.create(&d) {
            Err(StateError::Open(open)) => assert_eq!(*open, w),
            r => panic!("{r:?}"),
        }
        // Nothing but the state is left behind.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
        let mut started = w.clone();
        started.providers.push(9);
        started.update(&d).unwrap();
        assert_eq!(load(&d).unwrap(), started);
        remove(&d).unwrap();
        assert!(matches!(load(&d), Err(StateError::None)));
        other.create(&d).unwrap();
        assert_eq!(load(&d).unwrap().id, 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn minimal_and_damaged_states() {
        let mut w = window();
        (w.categories, w.mode, w.buffer, w.start, w.sched) = (None, None, None, None, None);
        w.sample = None;
        w.alloc_sample = None;
        w.providers.clear();
        assert_eq!(Window::parse(&w.to_text()).unwrap(), w);
        assert!(Window::parse("").is_err());
        assert!(Window::parse("fxt-trace-window 1\nspool /x\n").is_err());
        assert!(Window::parse("fxt-trace-window 1\nid 1\nspool /x\nproviders 1,x\n").is_err());
        let d = dir("damaged");
        std::fs::write(path(&d), "garbage").unwrap();
        assert!(matches!(load(&d), Err(StateError::Damaged(..))));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
