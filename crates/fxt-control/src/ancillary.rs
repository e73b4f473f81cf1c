//! A descriptor passed with a message's bytes (`SCM_RIGHTS`), over
//! `libc`'s `sendmsg` and `recvmsg`. Every program that traces links this
//! crate (its providers receive the folder they write into this way), and
//! the two calls did not justify compiling a whole system-call crate into
//! each of them; the tests pass descriptors to it with `rustix`, an
//! implementation of the same calls written by others.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

/// Room for the control message of one descriptor, aligned for
/// `cmsghdr`.
#[repr(C)]
union Space {
    header: MaybeUninit<libc::cmsghdr>,
    bytes: [MaybeUninit<u8>; SPACE],
}

/// `CMSG_SPACE(sizeof(int))` on every Linux ABI: a header and one `int`,
/// each rounded to the size of `long`.
const SPACE: usize = size_of::<libc::cmsghdr>() + size_of::<libc::c_long>();

// What `CMSG_SPACE` says, checked where the crate is built.
// SAFETY: `CMSG_SPACE` only computes with its argument.
const _: () = assert!(unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as usize <= SPACE);

/// Sends `bytes` (or the first part the socket takes) with `fd`; the
/// number of bytes sent. No `SIGPIPE` for a peer that went away, where
/// the system allows it per call.
pub(crate) fn send_with_fd(s: &UnixStream, bytes: &[u8], fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut space = Space {
        bytes: [MaybeUninit::new(0); SPACE],
    };
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    // SAFETY: an all-zero `msghdr` is a valid empty one.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = (&mut space as *mut Space).cast();
    // SAFETY: `CMSG_SPACE` only computes with its argument.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<RawFd>() as u32) } as _;
    // SAFETY: `msg_control` points to `msg_controllen` zeroed bytes aligned
    // for a `cmsghdr` (the union), room for one header and one descriptor:
    // `CMSG_FIRSTHDR` gives that header, `CMSG_DATA` the bytes after it.
    unsafe {
        let header = libc::CMSG_FIRSTHDR(&msg);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<RawFd>() as u32) as _;
        libc::CMSG_DATA(header)
            .cast::<RawFd>()
            .write_unaligned(fd.as_raw_fd());
    }
    loop {
        // SAFETY: `msg` points to `iov` (the caller's bytes, read only) and
        // to `space`, all alive for the call.
        let n = unsafe { libc::sendmsg(s.as_raw_fd(), &msg, send_flags()) };
        match usize::try_from(n) {
            Ok(n) => return Ok(n),
            Err(_) if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(io::Error::last_os_error()),
        }
    }
}

fn send_flags() -> libc::c_int {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return libc::MSG_NOSIGNAL;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    return 0;
}

/// What [`recv_with_fds`] got.
pub(crate) struct Received {
    /// Bytes read into the buffer.
    pub(crate) bytes: usize,
    /// Descriptors that came with them (close-on-exec).
    pub(crate) fds: Vec<OwnedFd>,
    /// More descriptors came than there was room for (the kernel closed
    /// those).
    pub(crate) truncated: bool,
}

/// Reads into `buf`, taking the descriptors sent with the bytes (at most
/// one fits; more are reported as `truncated`).
pub(crate) fn recv_with_fds(s: &UnixStream, buf: &mut [u8]) -> io::Result<Received> {
    let mut space = Space {
        bytes: [MaybeUninit::new(0); SPACE],
    };
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: an all-zero `msghdr` is a valid empty one.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = (&mut space as *mut Space).cast();
    msg.msg_controllen = SPACE as _;
    let bytes = loop {
        // SAFETY: `msg` points to `iov` (the caller's buffer, writable)
        // and to `space`, all alive for the call; the kernel writes at
        // most their lengths.
        let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        match usize::try_from(n) {
            Ok(n) => break n,
            Err(_) if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(io::Error::last_os_error()),
        }
    };
    let mut fds = Vec::new();
    // SAFETY: the kernel wrote `msg_controllen` bytes of well-formed
    // control messages into `space`; `CMSG_FIRSTHDR`/`CMSG_NXTHDR` walk
    // them within that length, and an `SCM_RIGHTS` message's data holds
    // `(cmsg_len - CMSG_LEN(0)) / sizeof(int)` descriptors now owned by
    // this process (each taken once, into an `OwnedFd`).
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&msg);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header).cast::<RawFd>();
                let len = (*header).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                for i in 0..len / size_of::<RawFd>() {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            header = libc::CMSG_NXTHDR(&msg, header);
        }
    }
    Ok(Received {
        bytes,
        fds,
        truncated: msg.msg_flags & libc::MSG_CTRUNC != 0,
    })
}
