//! Who is on the other end of a connection, as the kernel says
//! (`SO_PEERCRED`): the only check that file modes cannot get around.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// The effective uid of the process that connected `s` (at `connect`
/// time), from `SO_PEERCRED`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn peer_uid(s: &UnixStream) -> io::Result<u32> {
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
    Ok(cred.uid)
}

/// The effective uid of the process that connected `s`, from
/// `getpeereid`.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub fn peer_uid(s: &UnixStream) -> io::Result<u32> {
    let mut uid: libc::uid_t = 0;
    let mut gid: libc::gid_t = 0;
    // SAFETY: both out-pointers are valid for writes; the descriptor is
    // owned by `s` for this call.
    let rc = unsafe { libc::getpeereid(s.as_raw_fd(), &mut uid, &mut gid) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(uid)
}

/// Whether a peer with uid `peer` may control a process whose effective
/// uid is `own`: the same user, or root.
pub fn peer_allowed(peer: u32, own: u32) -> bool {
    peer == own || peer == 0
}
