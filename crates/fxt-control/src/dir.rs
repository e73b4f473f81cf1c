//! Where providers listen: one socket per process, `PID.sock`, in a
//! per-user runtime directory that only its owner can enter.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The variable that names the runtime directory's parent (the XDG base
/// directory specification's per-user runtime directory).
pub const RUNTIME_ENV: &str = "XDG_RUNTIME_DIR";

/// The per-user directory of provider sockets: `$XDG_RUNTIME_DIR/fxt`
/// when that variable names an absolute path the caller may trust (see
/// below), else `{temp}/fxt-UID`. Created with mode 0700 if missing;
/// refused (`PermissionDenied`) unless it is a real directory (not a
/// symlink) owned by this effective user and closed to group and others:
/// a directory another user controls could hold sockets that impersonate
/// providers.
///
/// Only the caller's own folders are used: `XDG_RUNTIME_DIR` is passed
/// over (for the temp directory) unless it is the caller's own, every
/// folder above it is the caller's or root's, and none is writable by
/// anyone else (or sticky, as `/tmp`). So root given another user's
/// (`sudo -E`) neither creates nor uses anything in it, a user given
/// root's (`su` without `-`, `setpriv`) or a folder shared with others
/// traces in its own temp directory instead of failing, and no one else
/// can swap a folder on the path between the check and a later use. An
/// `fxt` folder there that the caller may not use (another user made
/// it) is passed over the same way. The path returned is resolved (no
/// symlinks). In a setuid, setgid or file-capability process
/// (`AT_SECURE`) the environment is not read.
pub fn runtime_dir() -> io::Result<PathBuf> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    runtime_dir_in(secure_var(RUNTIME_ENV), uid)
}

/// [`runtime_dir`] for a value of [`RUNTIME_ENV`] and a uid: the
/// variable's `fxt` folder if it can be the caller's private one, else
/// the temp directory's.
fn runtime_dir_in(xdg: Option<std::ffi::OsString>, uid: u32) -> io::Result<PathBuf> {
    let dir = dir_for(xdg, uid)?;
    let Err(e) = create_private(&dir, uid) else {
        return Ok(dir);
    };
    // The temp folder is looked at only now: a trusted runtime folder
    // works whatever the temp folder is.
    let temp = temp_dir_for(uid)?;
    if temp == dir {
        return Err(e);
    }
    create_private(&temp, uid)?;
    Ok(temp)
}

/// Whether this process runs with privileges its caller may not have
/// (setuid, setgid, file capabilities: `AT_SECURE`): its environment
/// comes from someone it must not trust, and it is never a provider.
pub fn secure_process() -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: getauxval has no preconditions; it returns 0 for an
        // entry the kernel did not pass.
        (unsafe { libc::getauxval(libc::AT_SECURE) }) != 0
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        // SAFETY: getuid and friends have no preconditions.
        unsafe { libc::getuid() != libc::geteuid() || libc::getgid() != libc::getegid() }
    }
}

/// The variable `name`, unless this is a [`secure_process`] (what glibc's
/// `secure_getenv` does).
fn secure_var(name: &str) -> Option<std::ffi::OsString> {
    if secure_process() {
        return None;
    }
    std::env::var_os(name)
}

/// The runtime directory for a value of [`RUNTIME_ENV`] and a uid: in the
/// variable's folder if the caller may trust it, else in the temp
/// directory (which must be trustworthy itself).
fn dir_for(xdg: Option<std::ffi::OsString>, uid: u32) -> io::Result<PathBuf> {
    if let Some(base) = xdg.map(PathBuf::from).filter(|b| b.is_absolute()) {
        if let Ok(base) = trusted(&base, uid) {
            // The folder itself the caller's (folders above it may be
            // root's, as `/run/user` is).
            if std::fs::metadata(&base).is_ok_and(|m| m.uid() == uid) {
                return Ok(base.join("fxt"));
            }
        }
    }
    temp_dir_for(uid)
}

/// `{temp}/fxt-UID`, in `TMPDIR` (absolute) or `/tmp`, which must be
/// trustworthy itself.
fn temp_dir_for(uid: u32) -> io::Result<PathBuf> {
    let temp = match secure_var("TMPDIR").map(PathBuf::from) {
        Some(t) if t.is_absolute() => t,
        _ => PathBuf::from("/tmp"),
    };
    Ok(trusted(&temp, uid)?.join(format!("fxt-{uid}")))
}

/// `base` resolved, if it and every folder above it are owned by `uid`
/// or root and no one else may rename their entries (not writable by
/// group or others, or sticky).
fn trusted(base: &Path, uid: u32) -> io::Result<PathBuf> {
    let base = std::fs::canonicalize(base)?;
    for dir in base.ancestors() {
        let meta = std::fs::symlink_metadata(dir)?;
        let refuse = |why: String| {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{}: {why}", dir.display()),
            ))
        };
        if !meta.is_dir() {
            return refuse("not a directory".into());
        }
        if meta.uid() != uid && meta.uid() != 0 {
            return refuse(format!("owned by uid {}", meta.uid()));
        }
        if meta.mode() & 0o022 != 0 && meta.mode() & 0o1000 == 0 {
            return refuse("writable by other users".into());
        }
    }
    Ok(base)
}

/// Creates `dir` 0700 unless it exists, then checks it is private.
fn create_private(dir: &Path, uid: u32) -> io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    check_private(dir, uid)
}

/// Refuses `dir` unless it is a directory owned by `uid` with no group or
/// other permission bits.
pub(crate) fn check_private(dir: &Path, uid: u32) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("{}: {why}", dir.display()),
        ))
    };
    if !meta.file_type().is_dir() {
        return refuse("not a directory".into());
    }
    if meta.uid() != uid {
        return refuse(format!("owned by uid {}, not {uid}", meta.uid()));
    }
    if meta.mode() & 0o077 != 0 {
        return refuse(format!(
            "mode {:o} lets other users in (want 0700)",
            meta.mode() & 0o777
        ));
    }
    Ok(())
}

/// The socket of process `pid` in `dir`: `dir/PID.sock`.
pub fn socket_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.sock"))
}

/// A provider socket found by [`discover`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderEntry {
    /// The process id in its name.
    pub pid: u32,
    /// The socket's path.
    pub socket: PathBuf,
}

/// The provider sockets in `dir`, by pid: every socket named `PID.sock`
/// (decimal digits only; other names and other file types are skipped).
/// A listed socket may be stale (its process died); connecting tells.
pub fn discover(dir: &Path) -> io::Result<Vec<ProviderEntry>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(parse_name) else {
            continue;
        };
        if !entry.file_type().is_ok_and(|t| t.is_socket()) {
            continue;
        }
        out.push(ProviderEntry {
            pid,
            socket: entry.path(),
        });
    }
    out.sort_by_key(|e| e.pid);
    Ok(out)
}

/// The pid of a socket name `PID.sock`.
pub(crate) fn parse_name(name: &str) -> Option<u32> {
    let digits = name.strip_suffix(".sock")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        let base = std::env::temp_dir().join(format!("fxt-control-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        let dir = dir_for(Some(base.clone().into()), uid).unwrap();
        assert_eq!(dir, base.join("fxt"));
        create_private(&dir, uid).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        // Existing and private: accepted again.
        create_private(&dir, uid).unwrap();
        // Opened to others: refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = create_private(&dir, uid).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        // Owned by someone else: refused.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let e = check_private(&dir, uid.wrapping_add(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        // A symlink to a private directory: refused (not followed).
        let link = base.join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let e = create_private(&link, uid).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        // A relative or missing variable: the temp dir.
        let temp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
        assert_eq!(
            dir_for(Some("rel".into()), uid).unwrap(),
            temp.join(format!("fxt-{uid}"))
        );
        assert_eq!(dir_for(None, uid).unwrap(), temp.join(format!("fxt-{uid}")));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_runtime_folder_others_could_change_is_not_used() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions.
        let uid = unsafe { libc::geteuid() };
        let temp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
        let fallback = temp.join(format!("fxt-{uid}"));
        let base = temp.join(format!("fxt-control-trust-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let xdg = base.join("xdg");
        std::fs::create_dir_all(&xdg).unwrap();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(
            dir_for(Some(xdg.clone().into()), uid).unwrap(),
            xdg.join("fxt")
        );
        // A folder above it that anyone may rename entries of: passed over.
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(dir_for(Some(xdg.clone().into()), uid).unwrap(), fallback);
        // Sticky (as /tmp): trusted again.
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(
            dir_for(Some(xdg.clone().into()), uid).unwrap(),
            xdg.join("fxt")
        );
        // A symlink to it resolves to the folder itself.
        let link = base.join("link");
        std::os::unix::fs::symlink(&xdg, &link).unwrap();
        assert_eq!(dir_for(Some(link.into()), uid).unwrap(), xdg.join("fxt"));

        // Another user's folder (root can make one: `chown`); under CI,
        // which runs as root, this part must run.
        if uid != 0 {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run this test as root (to give a folder to another user)"
            );
            std::fs::remove_dir_all(&base).unwrap();
            return;
        }
        let theirs = base.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(dir_for(Some(theirs.clone().into()), uid).unwrap(), fallback);
        // Root's folder given to another user (`su` without `-`), or one
        // root shares with everyone (sticky): that user's temp folder.
        let nobody = temp.join("fxt-65534");
        assert_eq!(dir_for(Some(xdg.clone().into()), 65534).unwrap(), nobody);
        let shared = base.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(dir_for(Some(shared.into()), 65534).unwrap(), nobody);
        // Its own folder with an `fxt` in it that another user made: the
        // temp folder too, not an error.
        let mine = base.join("mine");
        std::fs::create_dir(&mine).unwrap();
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir(mine.join("fxt")).unwrap();
        std::os::unix::fs::chown(mine.join("fxt"), Some(65534), Some(65534)).unwrap();
        assert_eq!(runtime_dir_in(Some(mine.into()), uid).unwrap(), fallback);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn discover_lists_provider_sockets_only() {
        let dir = std::env::temp_dir().join(format!("fxt-control-disc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let _a = std::os::unix::net::UnixListener::bind(dir.join("20.sock")).unwrap();
        let _b = std::os::unix::net::UnixListener::bind(dir.join("3.sock")).unwrap();
        let _c = std::os::unix::net::UnixListener::bind(dir.join("x3.sock")).unwrap();
        std::fs::write(dir.join("4.sock"), b"not a socket").unwrap();
        std::fs::write(dir.join("5.txt"), b"").unwrap();
        let found = discover(&dir).unwrap();
        assert_eq!(
            found,
            vec![
                ProviderEntry {
                    pid: 3,
                    socket: dir.join("3.sock")
                },
                ProviderEntry {
                    pid: 20,
                    socket: dir.join("20.sock")
                },
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn socket_names() {
        assert_eq!(parse_name("123.sock"), Some(123));
        assert_eq!(parse_name(".sock"), None);
        assert_eq!(parse_name("+1.sock"), None);
        assert_eq!(parse_name("12a.sock"), None);
        assert_eq!(parse_name("99999999999.sock"), None);
        assert_eq!(parse_name("12.sock.tmp"), None);
        assert_eq!(socket_path(Path::new("/r"), 7), PathBuf::from("/r/7.sock"));
    }
}
