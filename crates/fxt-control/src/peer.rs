//! Who is on the other end of a connection, as the kernel says
//! (`SO_PEERCRED`): the only check that file modes cannot get around.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// What the kernel says of the process at the other end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    /// Its effective uid.
    pub uid: u32,
    /// Its pid, where the system tells (Linux).
    pub pid: Option<u32>,
}

/// The effective uid of the process at the other end of `s`.
pub fn peer_uid(s: &UnixStream) -> io::Result<u32> {
    peer_cred(s).map(|c| c.uid)
}

/// The credentials of the process at the other end of `s`, as they were
/// when it connected (or, for a listening peer, called `listen`), from
/// `SO_PEERCRED`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn peer_cred(s: &UnixStream) -> io::Result<PeerCred> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes and `len` holds the
    // size of `cred`; the descriptor is owned by `s` for this call.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if len as usize != std::mem::size_of::<libc::ucred>() {
        return Err(io::Error::other("SO_PEERCRED returned a short answer"));
    }
    Ok(PeerCred {
        uid: cred.uid,
        pid: u32::try_from(cred.pid).ok().filter(|&p| p != 0),
    })
}

/// The effective uid of the process at the other end of `s`, from
/// `getpeereid` (no pid).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn peer_cred(s: &UnixStream) -> io::Result<PeerCred> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: both out-pointers are valid for writes; the descriptor is
    // owned by `s` for this call.
    let rc = unsafe { libc::getpeereid(s.as_raw_fd(), &mut uid, &mut gid) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(PeerCred { uid, pid: None })
}

/// Whether a peer with uid `peer` may control a process whose effective
/// uid is `own`: the same user, or root.
pub fn peer_allowed(peer: u32, own: u32) -> bool {
    peer == own || peer == 0
}
