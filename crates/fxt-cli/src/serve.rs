//! Serving one file over HTTP/1.1 on `127.0.0.1` until it has been fetched
//! once, as Perfetto's `tools/open_trace_in_ui` does for Perfetto UI.
//!
//! * Only `GET /NAME` (the path percent-decoded; a query is ignored) gets
//!   the file, with `Content-Length` and `Access-Control-Allow-Origin` set
//!   to the one origin allowed; `OPTIONS /NAME` gets the CORS preflight
//!   answer Perfetto's own HTTP server gives (including
//!   `Access-Control-Allow-Private-Network`, which Chrome asks of a public
//!   page reaching a loopback address). Any other path is 404 (no listing,
//!   no other file), another method on the path 405, a request from
//!   another origin 403. Every response closes its connection.
//! * A request that cannot be answered in bounded memory and time is
//!   refused: headers over [`MAX_HEADER_BYTES`] get 431, headers not
//!   complete within [`HEADER_DEADLINE`] get 408, a client that takes no
//!   bytes for [`WRITE_TIMEOUT`] is dropped. Each connection has its own
//!   thread (a browser may hold idle connections open beside the one it
//!   fetches with), at most [`MAX_CONNECTIONS`] at a time; more are closed
//!   at once.
//! * [`serve_until_sent`] returns once a `GET` has been answered with the
//!   whole file; connections still open then are shut down.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// The most bytes of request line and headers read from one connection.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// How long a client may take to send its request line and headers.
pub const HEADER_DEADLINE: Duration = Duration::from_secs(10);
/// How long a client may leave the response unread before it is dropped.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The most connections handled at once.
pub const MAX_CONNECTIONS: usize = 16;
/// How long, and how many bytes, a refused request's rest is read.
const LINGER: Duration = Duration::from_secs(2);
const MAX_LINGER_BYTES: usize = 1 << 20;
/// The most headers one request may have.
const MAX_HEADERS: usize = 64;
/// How often the accept loop looks whether the file has been sent.
const POLL: Duration = Duration::from_millis(20);

/// Characters kept as they are in a URL path segment (RFC 3986's
/// unreserved characters); everything else is percent-encoded.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `name` percent-encoded as one path segment.
pub fn encode_segment(name: &str) -> String {
    utf8_percent_encode(name, SEGMENT).to_string()
}

/// The origin of `url` (`scheme://host[:port]`, no path), which is what a
/// browser sends in `Origin` and expects in `Access-Control-Allow-Origin`.
pub fn origin_of(url: &str) -> String {
    let rest_at = url.find("://").map_or(0, |i| i + 3);
    let end = url[rest_at..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| rest_at + i);
    url[..end].to_owned()
}

/// The one file served.
pub struct Served<'a> {
    /// The file name, served at `/` + its percent-encoding.
    pub name: &'a str,
    /// Its bytes.
    pub body: &'a [u8],
    /// The origin allowed to read it (`Access-Control-Allow-Origin`).
    pub origin: &'a str,
}

/// Binds `127.0.0.1:port` (0: any free port).
pub fn bind(port: u16) -> io::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port))
}

/// Serves `file` on `listener` until one `GET` has been answered with all
/// its bytes; returns the client's address. `log` gets one line per request.
pub fn serve_until_sent(
    listener: &TcpListener,
    file: &Served<'_>,
    log: &(dyn Fn(&str) + Sync),
) -> io::Result<SocketAddr> {
    listener.set_nonblocking(true)?;
    let sent_to: Mutex<Option<SocketAddr>> = Mutex::new(None);
    let done = AtomicBool::new(false);
    let active = AtomicUsize::new(0);
    // The connections being handled, by number, to shut down at the end.
    let open: Mutex<HashMap<u64, TcpStream>> = Mutex::new(HashMap::new());
    let mut next = 0u64;
    std::thread::scope(|scope| -> io::Result<()> {
        // `done` is stored (Release) after `sent_to` is set; this Acquire
        // load pairs with it.
        while !done.load(Ordering::Acquire) {
            let (stream, peer) = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(POLL);
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            // Counts connections only: no other memory is ordered by it.
            if active.fetch_add(1, Ordering::Relaxed) >= MAX_CONNECTIONS {
                active.fetch_sub(1, Ordering::Relaxed);
                drop(stream);
                continue;
            }
            next += 1;
            let id = next;
            if let Ok(clone) = stream.try_clone() {
                lock(&open).insert(id, clone);
            }
            let (done, active, sent_to, open) = (&done, &active, &sent_to, &open);
            scope.spawn(move || {
                if let Ok(true) = handle(stream, peer, file, log) {
                    *lock(sent_to) = Some(peer);
                    done.store(true, Ordering::Release);
                }
                lock(open).remove(&id);
                active.fetch_sub(1, Ordering::Relaxed);
            });
        }
        // Idle connections a browser keeps would otherwise hold the scope
        // until their timeouts.
        for (_, s) in lock(&open).drain() {
            let _ = s.shutdown(Shutdown::Both);
        }
        Ok(())
    })?;
    let peer = lock(&sent_to).take();
    peer.ok_or_else(|| io::Error::other("the server stopped before the file was sent"))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A request's method, path and `Origin`.
struct Request {
    method: String,
    path: String,
    origin: Option<String>,
}

/// Why no request was read.
enum NoRequest {
    /// The client closed the connection or it failed: nothing to answer.
    Gone,
    /// A request this server refuses, with the status line to answer.
    Refused(&'static str),
}

/// Reads the request line and headers within the bounds above.
fn read_request(stream: &mut TcpStream) -> Result<Request, NoRequest> {
    let deadline = Instant::now() + HEADER_DEADLINE;
    let mut buf = vec![0u8; MAX_HEADER_BYTES];
    let mut len = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return Err(NoRequest::Refused("408 Request Timeout"));
        }
        let n = match stream.read(&mut buf[len..]) {
            Ok(0) => return Err(NoRequest::Gone),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(NoRequest::Refused("408 Request Timeout"))
            }
            Err(_) => return Err(NoRequest::Gone),
        };
        len += n;
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&buf[..len]) {
            Ok(httparse::Status::Complete(_)) => {
                let origin = req
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("origin"))
                    .map(|h| String::from_utf8_lossy(h.value).into_owned());
                return Ok(Request {
                    method: req.method.unwrap_or_default().to_owned(),
                    path: req.path.unwrap_or_default().to_owned(),
                    origin,
                });
            }
            Ok(httparse::Status::Partial) if len < buf.len() => {}
            Ok(httparse::Status::Partial) | Err(httparse::Error::TooManyHeaders) => {
                return Err(NoRequest::Refused("431 Request Header Fields Too Large"))
            }
            Err(_) => return Err(NoRequest::Refused("400 Bad Request")),
        }
    }
}

/// What a request gets.
enum Answer {
    /// The file (`200 OK`).
    File,
    /// The CORS preflight answer (`204 No Content`).
    Preflight,
    /// Another method on the file's path.
    MethodNotAllowed,
    /// Any other path (404), or another origin (403).
    Refused(&'static str),
}

fn answer(req: &Request, file: &Served<'_>) -> Answer {
    let path = req.path.split('?').next().unwrap_or_default();
    let decoded = percent_decode_str(path).decode_utf8_lossy();
    if decoded.strip_prefix('/') != Some(file.name) {
        Answer::Refused("404 Not Found")
    } else if req.origin.as_deref().is_some_and(|o| o != file.origin) {
        Answer::Refused("403 Forbidden")
    } else if req.method == "OPTIONS" {
        Answer::Preflight
    } else if req.method != "GET" {
        Answer::MethodNotAllowed
    } else {
        Answer::File
    }
}

/// Answers one connection's request; `Ok(true)` when it got the whole file.
fn handle(
    mut stream: TcpStream,
    peer: SocketAddr,
    file: &Served<'_>,
    log: &(dyn Fn(&str) + Sync),
) -> io::Result<bool> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let req = match read_request(&mut stream) {
        Ok(r) => r,
        Err(NoRequest::Gone) => return Ok(false),
        Err(NoRequest::Refused(status)) => {
            log(&format!("{peer}: {status}"));
            respond(&mut stream, status, &[], Some(&[]))?;
            linger(&mut stream);
            return Ok(false);
        }
    };
    let allow_origin = format!("Access-Control-Allow-Origin: {}", file.origin);
    let (status, headers, body) = match answer(&req, file) {
        Answer::File => (
            "200 OK",
            vec![
                allow_origin.as_str(),
                "Content-Type: application/octet-stream",
                "Cache-Control: no-cache",
            ],
            Some(file.body),
        ),
        Answer::Preflight => (
            "204 No Content",
            vec![
                allow_origin.as_str(),
                "Access-Control-Allow-Methods: GET, OPTIONS",
                "Access-Control-Allow-Headers: *",
                "Access-Control-Allow-Private-Network: true",
                "Access-Control-Max-Age: 86400",
            ],
            None,
        ),
        Answer::MethodNotAllowed => (
            "405 Method Not Allowed",
            vec!["Allow: GET, OPTIONS"],
            Some(&[][..]),
        ),
        Answer::Refused(status) => (status, vec![], Some(&[][..])),
    };
    log(&format!("{peer}: {} {} -> {status}", req.method, req.path));
    respond(&mut stream, status, &headers, body)?;
    if status == "200 OK" {
        return Ok(true);
    }
    linger(&mut stream);
    Ok(false)
}

/// Reads what the client still sends after an answer that did not read
/// its whole request (a body, headers past the limit), boundedly: closing
/// a socket with unread bytes makes the kernel reset the connection, and
/// the client may then lose the answer before reading it.
fn linger(stream: &mut TcpStream) {
    let deadline = Instant::now() + LINGER;
    let mut sink = [0u8; 4096];
    let mut read = 0;
    while read < MAX_LINGER_BYTES {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => read += n,
        }
    }
}

/// Writes a response that closes the connection: `body` `None` for a
/// response that has none (204, which carries no `Content-Length`).
fn respond(
    stream: &mut TcpStream,
    status: &str,
    headers: &[&str],
    body: Option<&[u8]>,
) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {status}\r\n");
    for h in headers {
        head.push_str(h);
        head.push_str("\r\n");
    }
    if let Some(body) = body {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("Connection: close\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.unwrap_or_default())?;
    stream.flush()?;
    stream.shutdown(Shutdown::Write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_is_scheme_host_and_port() {
        assert_eq!(
            origin_of("https://ui.perfetto.dev"),
            "https://ui.perfetto.dev"
        );
        assert_eq!(
            origin_of("https://ui.perfetto.dev/"),
            "https://ui.perfetto.dev"
        );
        assert_eq!(
            origin_of("http://localhost:10000/ui/#!/x?y"),
            "http://localhost:10000"
        );
        assert_eq!(origin_of("http://h:1?q"), "http://h:1");
    }

    #[test]
    fn a_segment_keeps_unreserved_characters_only() {
        assert_eq!(encode_segment("trace-1_a.b~c.fxt"), "trace-1_a.b~c.fxt");
        assert_eq!(encode_segment("a b#c/d+é"), "a%20b%23c%2Fd%2B%C3%A9");
        let encoded = encode_segment("../x y");
        assert_eq!(percent_decode_str(&encoded).decode_utf8_lossy(), "../x y");
    }
}
