//! Unit tests of the messages, frames, peer credentials and the client.

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

use super::*;

fn requests() -> Vec<Request> {
    vec![
        Request::Status,
        Request::Start(StartRequest {
            window: 7,
            categories: Some("io,net".into()),
            mode: Some(Mode::Circular),
            buffer: Some(1 << 20),
            sample_hz: Some(1000),
            alloc_sample: Some(512 << 10),
        }),
        Request::Start(StartRequest::default()),
        Request::Stop { window: u64::MAX },
        Request::Snapshot,
    ]
}

fn responses() -> Vec<Response> {
    vec![
        Response::Status(ProviderStatus {
            pid: 4242,
            name: "server".into(),
            state: ProviderState::Dormant,
            categories: vec![],
        }),
        Response::Status(ProviderStatus {
            pid: 1,
            name: String::new(),
            state: ProviderState::Tracing { window: 9 },
            categories: vec!["io".into(), "".into(), "日本".into()],
        }),
        Response::Status(ProviderStatus {
            pid: u32::MAX,
            name: "own".into(),
            state: ProviderState::OwnSession,
            categories: vec!["a".into()],
        }),
        Response::Started,
        Response::Stopped {
            records_written: 10,
            records_dropped: 2,
            output: PathBuf::from("/s/1.fxt"),
        },
        Response::SnapshotWritten { bytes: 123 },
        Response::Error("runs its own session".into()),
    ]
}

#[test]
fn every_message_round_trips() {
    for r in requests() {
        assert_eq!(decode_request(&encode_request(&r)), Ok(r));
    }
    for r in responses() {
        assert_eq!(decode_response(&encode_response(&r)), Ok(r));
    }
}

#[test]
fn exact_bytes() {
    assert_eq!(encode_request(&Request::Status), [3, 0x01]);
    assert_eq!(
        encode_request(&Request::Stop { window: 0x0102 }),
        [3, 0x03, 0x02, 0x01, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(
        encode_request(&Request::Start(StartRequest {
            window: 1,
            categories: Some("a".into()),
            mode: Some(Mode::Streaming),
            buffer: None,
            sample_hz: None,
            alloc_sample: None,
        })),
        [3, 0x02, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, b'a', 1, 2, 0, 0, 0]
    );
    assert_eq!(encode_request(&Request::Snapshot), [3, 0x04]);
    assert_eq!(
        encode_response(&Response::Error("no".into())),
        [3, 0x85, 2, 0, 0, 0, b'n', b'o']
    );
    // The crate docs' example frame.
    let mut v = Vec::new();
    write_frame(&mut v, &encode_request(&Request::Status)).unwrap();
    assert_eq!(v, [2, 0, 0, 0, 3, 1]);
    for m in Mode::ALL {
        assert_eq!(Mode::from_name(m.name()), Some(m));
    }
    assert_eq!(Mode::from_name("Circular"), None);
}

#[test]
fn every_prefix_is_an_error() {
    for r in requests() {
        let b = encode_request(&r);
        for n in 0..b.len() {
            let e = decode_request(&b[..n]).unwrap_err();
            let want = if n == 0 {
                DecodeError::Empty
            } else {
                DecodeError::Truncated
            };
            assert_eq!(e, want, "{r:?} cut at {n}");
        }
    }
    for r in responses() {
        let b = encode_response(&r);
        for n in 1..b.len() {
            assert_eq!(
                decode_response(&b[..n]),
                Err(DecodeError::Truncated),
                "{r:?} cut at {n}"
            );
        }
    }
}

#[test]
fn malformed_payloads_are_typed_errors() {
    // Another version.
    assert_eq!(
        decode_request(&[1, 0x01]),
        Err(DecodeError::Version { got: 1 })
    );
    assert_eq!(
        decode_response(&[0, 0x82]),
        Err(DecodeError::Version { got: 0 })
    );
    // A response where a request is expected, and the reverse.
    assert_eq!(
        decode_request(&encode_response(&Response::Started)),
        Err(DecodeError::UnknownKind(0x82))
    );
    assert_eq!(
        decode_response(&encode_request(&Request::Status)),
        Err(DecodeError::UnknownKind(0x01))
    );
    // Trailing bytes.
    let mut b = encode_request(&Request::Status);
    b.push(0);
    assert_eq!(decode_request(&b), Err(DecodeError::TrailingBytes(1)));
    // Not UTF-8.
    assert_eq!(
        decode_response(&[3, 0x85, 1, 0, 0, 0, 0xff]),
        Err(DecodeError::BadUtf8)
    );
    // Bad option, mode and state tags.
    let mut start = encode_request(&Request::Start(StartRequest::default()));
    // version, kind, window (8): the categories tag.
    start[10] = 7;
    assert_eq!(decode_request(&start), Err(DecodeError::BadTag(7)));
    let start = [3, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 3, 0, 0];
    assert_eq!(decode_request(&start), Err(DecodeError::BadTag(3)));
    assert_eq!(
        decode_response(&[3, 0x81, 0, 0, 0, 0, 0, 0, 0, 0, 9]),
        Err(DecodeError::BadTag(9))
    );
    // A string length far past the payload; a category count that could
    // not fit: truncated, nothing allocated for them.
    assert_eq!(
        decode_response(&[3, 0x85, 0xff, 0xff, 0xff, 0xff]),
        Err(DecodeError::Truncated)
    );
    assert_eq!(
        decode_response(&[3, 0x81, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
        Err(DecodeError::Truncated)
    );
}

#[test]
fn frames_round_trip_and_bad_frames_are_typed() {
    let mut v = Vec::new();
    write_frame(&mut v, b"hello").unwrap();
    write_frame(&mut v, b"").unwrap();
    let mut r = &v[..];
    assert_eq!(read_frame(&mut r).unwrap(), b"hello");
    assert_eq!(read_frame(&mut r).unwrap(), b"");
    assert!(matches!(read_frame(&mut r), Err(FrameError::Closed)));

    // Oversized, by length: refused before reading the payload.
    let big = ((MAX_MESSAGE + 1) as u32).to_le_bytes();
    assert!(matches!(
        read_frame(&mut &big[..]),
        Err(FrameError::TooLarge(n)) if n as usize == MAX_MESSAGE + 1
    ));
    let huge = u32::MAX.to_le_bytes();
    assert!(matches!(
        read_frame(&mut &huge[..]),
        Err(FrameError::TooLarge(_))
    ));
    // The largest allowed payload passes; one more byte is refused on write.
    let mut v = Vec::new();
    write_frame(&mut v, &vec![7u8; MAX_MESSAGE]).unwrap();
    assert_eq!(read_frame(&mut &v[..]).unwrap().len(), MAX_MESSAGE);
    let e = write_frame(&mut Vec::new(), &vec![0u8; MAX_MESSAGE + 1]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);

    // Truncated in the length and in the payload.
    assert!(matches!(
        read_frame(&mut &[5u8, 0][..]),
        Err(FrameError::Truncated {
            expected: 4,
            got: 2
        })
    ));
    assert!(matches!(
        read_frame(&mut &[5u8, 0, 0, 0, 1, 2][..]),
        Err(FrameError::Truncated {
            expected: 9,
            got: 6
        })
    ));
}

#[test]
fn a_partial_frame_completes_piece_by_piece() {
    let (mut a, mut b) = UnixStream::pair().unwrap();
    b.set_nonblocking(true).unwrap();
    let mut f = PartialFrame::new();
    assert!(f.read_from(&mut b).unwrap().is_none());
    let mut frame = Vec::new();
    write_frame(&mut frame, b"abcdef").unwrap();
    for byte in &frame[..frame.len() - 1] {
        a.write_all(&[*byte]).unwrap();
        assert!(f.read_from(&mut b).unwrap().is_none());
    }
    // The last byte, then the start of another frame that must not be read.
    a.write_all(&[frame[frame.len() - 1], 9, 9]).unwrap();
    assert_eq!(f.read_from(&mut b).unwrap().unwrap(), b"abcdef");
    let mut rest = [0u8; 2];
    b.read_exact(&mut rest).unwrap();
    assert_eq!(rest, [9, 9]);

    // Oversized and truncated.
    let mut f = PartialFrame::new();
    a.write_all(&u32::MAX.to_le_bytes()).unwrap();
    assert!(matches!(f.read_from(&mut b), Err(FrameError::TooLarge(_))));
    let mut f = PartialFrame::new();
    a.write_all(&[3, 0, 0, 0, 1]).unwrap();
    drop(a);
    assert!(matches!(
        f.read_from(&mut b),
        Err(FrameError::Truncated {
            expected: 7,
            got: 5
        })
    ));
}

#[test]
fn peer_uid_is_this_process_user() {
    let (a, _b) = UnixStream::pair().unwrap();
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    assert_eq!(peer_uid(&a).unwrap(), me);
    assert!(peer_allowed(me, me));
    assert!(peer_allowed(0, 1000));
    assert!(!peer_allowed(1001, 1000));
}

fn socket_in_temp(tag: &str) -> (PathBuf, UnixListener) {
    let dir = std::env::temp_dir().join(format!("fxt-control-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = socket_path(&dir, std::process::id());
    let l = UnixListener::bind(&path).unwrap();
    (path, l)
}

#[test]
fn call_sends_one_request_and_reads_the_response() {
    let (path, l) = socket_in_temp("call");
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let req = decode_request(&read_frame(&mut s).unwrap()).unwrap();
        write_frame(
            &mut s,
            &encode_response(&Response::Error(format!("{req:?}"))),
        )
        .unwrap();
    });
    let r = call(
        &path,
        &Request::Stop { window: 3 },
        None,
        Duration::from_secs(30),
    )
    .unwrap();
    assert_eq!(r, Response::Error("Stop { window: 3 }".into()));
    server.join().unwrap();
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn call_errors_are_typed() {
    let (path, l) = socket_in_temp("callerr");
    // A server that never answers: the call ends at its timeout.
    let e = call(&path, &Request::Status, None, Duration::from_millis(50)).unwrap_err();
    assert!(
        matches!(&e, CallError::Receive(f) if f.is_timeout()),
        "{e:?}"
    );
    // A server that answers garbage.
    let server = std::thread::spawn(move || {
        // The timed-out connection is first in the backlog: drop it.
        drop(l.accept().unwrap());
        let (mut s, _) = l.accept().unwrap();
        let _ = read_frame(&mut s);
        write_frame(&mut s, &[9, 9, 9]).unwrap();
        l
    });
    let e = call(&path, &Request::Status, None, Duration::from_secs(30)).unwrap_err();
    assert!(
        matches!(e, CallError::Decode(DecodeError::Version { got: 9 })),
        "{e:?}"
    );
    drop(server.join().unwrap());
    // No listener: stale.
    std::fs::remove_file(&path).unwrap();
    let e = call(&path, &Request::Status, None, Duration::from_secs(1)).unwrap_err();
    assert!(e.is_stale(), "{e:?}");
    // A socket file whose listener is gone.
    drop(UnixListener::bind(&path).unwrap());
    let e = call(&path, &Request::Status, None, Duration::from_secs(1)).unwrap_err();
    assert!(e.is_stale(), "{e:?}");
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

mod random {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Any bytes: a message or a typed error, never a panic; what
        /// decodes re-encodes to the same bytes.
        #[test]
        fn any_bytes_decode_or_fail(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(r) = decode_request(&b) {
                prop_assert_eq!(encode_request(&r), b.clone());
            }
            if let Ok(r) = decode_response(&b) {
                prop_assert_eq!(encode_response(&r), b.clone());
            }
            let _ = read_frame(&mut &b[..]);
        }

        /// Valid messages with random bytes flipped.
        #[test]
        fn mutated_messages_decode_or_fail(i in 0usize..12, at in any::<usize>(), v in any::<u8>()) {
            let n = requests().len();
            let mut b = if i < n {
                encode_request(&requests()[i])
            } else {
                encode_response(&responses()[(i - n) % responses().len()])
            };
            let at = at % b.len();
            b[at] = v;
            if let Ok(r) = decode_request(&b) {
                prop_assert_eq!(encode_request(&r), b.clone());
            }
            if let Ok(r) = decode_response(&b) {
                prop_assert_eq!(encode_response(&r), b.clone());
            }
        }
    }
}

#[test]
fn a_folder_travels_with_its_frame() {
    let (a, b) = UnixStream::pair().unwrap();
    let dir = std::env::temp_dir().join(format!("fxt-control-fd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let folder = std::fs::File::open(&dir).unwrap();
    send_frame(&a, b"start", Some(folder.as_fd())).unwrap();
    send_frame(&a, b"plain", None).unwrap();
    b.set_nonblocking(true).unwrap();
    let mut f = PartialFrame::new();
    assert_eq!(f.receive(&b).unwrap().unwrap(), b"start");
    let got = f.take_folder().expect("a descriptor");
    // The same directory, reached through the descriptor even after its
    // name is gone.
    std::fs::rename(&dir, dir.with_extension("moved")).unwrap();
    let moved = std::fs::metadata(dir.with_extension("moved")).unwrap();
    let st = rustix::fs::fstat(&got).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (st.st_dev as u64, st.st_ino as u64),
        (moved.dev(), moved.ino())
    );
    let mut f = PartialFrame::new();
    assert_eq!(f.receive(&b).unwrap().unwrap(), b"plain");
    assert!(f.take_folder().is_none());
    // Two descriptors with one frame: refused.
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    let fds = [folder.as_fd(), folder.as_fd()];
    assert!(control.push(rustix::net::SendAncillaryMessage::ScmRights(&fds)));
    let mut frame = Vec::new();
    write_frame(&mut frame, b"x").unwrap();
    rustix::net::sendmsg(
        &a,
        &[std::io::IoSlice::new(&frame)],
        &mut control,
        rustix::net::SendFlags::empty(),
    )
    .unwrap();
    let mut f = PartialFrame::new();
    assert!(matches!(f.receive(&b), Err(FrameError::Io(_))));
    std::fs::remove_dir_all(dir.with_extension("moved")).unwrap();
}

#[test]
fn the_deadline_covers_the_whole_answer() {
    // A server that sends a valid answer one byte every 20 ms: each read
    // gets a byte well within any per-read timeout, the whole answer
    // takes longer than the call's.
    let (path, l) = socket_in_temp("trickle");
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let _ = read_frame(&mut s);
        let mut frame = Vec::new();
        write_frame(
            &mut frame,
            &encode_response(&Response::Error("x".repeat(40))),
        )
        .unwrap();
        for b in frame {
            if s.write_all(&[b]).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let e = call(&path, &Request::Status, None, Duration::from_millis(200)).unwrap_err();
    assert!(
        matches!(&e, CallError::Receive(f) if f.is_timeout()),
        "{e:?}"
    );
    server.join().unwrap();
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_socket_of_another_pid_is_not_called() {
    // Listening under the name of pid 1: the kernel says it is this
    // process, so nothing is sent.
    let dir = std::env::temp_dir().join(format!("fxt-control-pid-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = socket_path(&dir, 1);
    let _l = UnixListener::bind(&path).unwrap();
    let e = call(&path, &Request::Status, None, Duration::from_secs(30)).unwrap_err();
    assert!(
        matches!(&e, CallError::Peer(why) if why.contains("pid")),
        "{e:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
