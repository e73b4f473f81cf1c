//! `fxt open`: the trace served to Perfetto UI as Perfetto's
//! `open_trace_in_ui` serves it, fetched by a real HTTP client.

mod cli_support;
use cli_support::*;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const UI: &str = "https://ui.perfetto.dev";

/// Generous bound for anything a loaded machine may be slow at.
const PATIENCE: Duration = Duration::from_secs(120);

/// A running `fxt open`, killed if a test fails before it exits.
struct Server {
    child: Child,
    /// The link it printed.
    link: String,
    stderr: std::thread::JoinHandle<String>,
}

impl Server {
    /// Starts `fxt open --no-browser --port 0 ARGS...` and reads its link.
    fn start(args: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_fxt"))
            .args(["open", "--no-browser", "--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("fxt runs");
        let mut err = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut link = String::new();
        // Ends at the first line, or at EOF if fxt exits first.
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut link)
            .unwrap();
        Server {
            child,
            link: link.trim().to_owned(),
            stderr,
        }
    }

    /// The file's URL, as the UI gets it from the link: the `url` query
    /// value, percent-decoded once.
    fn url(&self) -> String {
        let (_, value) = self
            .link
            .split_once("/#!/?url=")
            .unwrap_or_else(|| panic!("link {:?} has the UI's url argument", self.link));
        percent_encoding::percent_decode_str(value)
            .decode_utf8()
            .unwrap()
            .into_owned()
    }

    /// `127.0.0.1:PORT` of the server.
    fn addr(&self) -> String {
        let url = self.url();
        let rest = url.strip_prefix("http://").unwrap();
        rest[..rest.find('/').unwrap()].to_owned()
    }

    /// Waits (boundedly) for the server to exit; its status and stderr.
    fn wait(mut self) -> (ExitStatus, String) {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                let stderr = std::mem::replace(&mut self.stderr, std::thread::spawn(String::new));
                return (status, stderr.join().unwrap());
            }
            assert!(start.elapsed() < PATIENCE, "fxt open did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client that reports every status (a 404 is an answer, not an error).
fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(PATIENCE))
        .build()
        .new_agent()
}

/// GETs `url` with `Origin: origin`: status, the CORS header, the body.
fn get(url: &str, origin: &str) -> (u16, Option<String>, Vec<u8>) {
    let mut response = agent()
        .get(url)
        .header("Origin", origin)
        .call()
        .expect("the request is answered");
    let cors = response
        .headers()
        .get("access-control-allow-origin")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response
        .body_mut()
        .with_config()
        .limit(u64::MAX)
        .read_to_vec()
        .unwrap();
    (response.status().as_u16(), cors, body)
}

/// Sends `request` as it is on a fresh connection; the response's head.
fn raw(addr: &str, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s.write_all(request).unwrap();
    let mut response = Vec::new();
    s.read_to_end(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    text.split("\r\n\r\n").next().unwrap().to_owned()
}

/// The status line of a response head.
fn status(head: &str) -> &str {
    head.lines().next().unwrap_or_default()
}

#[test]
fn serves_the_file_once_byte_for_byte_with_cors_and_nothing_else() {
    // A name that needs encoding, as a path segment and in the link.
    let file = golden().file("my trace #1+2.fxt");
    let bytes = std::fs::read(&file).unwrap();
    let server = Server::start(&[p(&file)]);
    let url = server.url();
    assert!(server
        .link
        .starts_with(&format!("{UI}/#!/?url=http://127.0.0.1:")));
    assert!(
        url.ends_with("/my%20trace%20%231%2B2.fxt"),
        "{}",
        server.link
    );
    let addr = server.addr();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");

    // Anything but GET of the file's path: refused, and the server stays.
    for path in [
        "/",
        "/my%20trace%20%231%2B2.fxt/",
        "/../my%20trace%20%231%2B2.fxt",
    ] {
        let head = raw(
            &addr,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes(),
        );
        assert_eq!(status(&head), "HTTP/1.1 404 Not Found", "{path}");
    }
    let (code, _, body) = get(&format!("http://{addr}/etc/passwd"), UI);
    assert_eq!((code, body.len()), (404, 0));
    let head = raw(
        &addr,
        b"POST /my%20trace%20%231%2B2.fxt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(status(&head), "HTTP/1.1 405 Method Not Allowed");
    // Another origin may not make it send the file.
    let (code, _, _) = get(&url, "https://evil.example");
    assert_eq!(code, 403);
    // The CORS preflight, answered as Perfetto's own server answers it.
    let head = raw(
        &addr,
        format!(
            "OPTIONS /my%20trace%20%231%2B2.fxt HTTP/1.1\r\nHost: x\r\nOrigin: {UI}\r\nAccess-Control-Request-Method: GET\r\nAccess-Control-Request-Private-Network: true\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(status(&head), "HTTP/1.1 204 No Content");
    assert!(
        head.contains(&format!("Access-Control-Allow-Origin: {UI}")),
        "{head}"
    );
    assert!(
        head.contains("Access-Control-Allow-Private-Network: true"),
        "{head}"
    );

    // The fetch the UI makes.
    let (code, cors, body) = get(&url, UI);
    assert_eq!(code, 200);
    assert_eq!(cors.as_deref(), Some(UI));
    assert!(body == bytes, "the body is the file byte for byte");

    let (status, stderr) = server.wait();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("sent"), "{stderr}");
}

#[test]
fn content_length_is_the_file_size() {
    let file = golden().file("length.fxt");
    let bytes = std::fs::read(&file).unwrap();
    let server = Server::start(&[p(&file)]);
    let head = raw(
        &server.addr(),
        b"GET /length.fxt HTTP/1.1\r\nHost: x\r\n\r\n",
    );
    assert_eq!(status(&head), "HTTP/1.1 200 OK");
    assert!(
        head.contains(&format!("Content-Length: {}", bytes.len())),
        "{head}"
    );
    assert!(server.wait().0.success());
}

#[test]
fn huge_headers_get_431_and_idle_clients_do_not_hold_it() {
    let file = golden().file("bounded.fxt");
    let server = Server::start(&["--origin", "http://localhost:10000/ui/", p(&file)]);
    assert!(
        server
            .link
            .starts_with("http://localhost:10000/ui/#!/?url="),
        "{}",
        server.link
    );
    let addr = server.addr();
    // 64 KiB of header: refused, not buffered.
    let mut huge = b"GET /bounded.fxt HTTP/1.1\r\nX-Big: ".to_vec();
    huge.resize(64 * 1024, b'a');
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    // The server may close before reading all of it.
    let _ = s.write_all(&huge);
    let mut response = Vec::new();
    let _ = s.read_to_end(&mut response);
    let head = String::from_utf8_lossy(&response).into_owned();
    assert!(
        head.starts_with("HTTP/1.1 431 Request Header Fields Too Large"),
        "{head}"
    );
    // A client that sends half a request and waits: the fetch still gets
    // the file, and the server exits without waiting for the idle one.
    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.write_all(b"GET /bounded.fxt HTTP/1.1\r\n").unwrap();
    let (code, cors, _) = get(
        &format!("http://{addr}/bounded.fxt"),
        "http://localhost:10000",
    );
    assert_eq!(code, 200);
    // --origin with a path: the header names the origin only.
    assert_eq!(cors.as_deref(), Some("http://localhost:10000"));
    assert!(server.wait().0.success());
    drop(idle);
}

#[test]
fn a_client_that_never_finishes_its_headers_gets_408() {
    let file = golden().file("slow.fxt");
    let server = Server::start(&[p(&file)]);
    let head = raw(&server.addr(), b"GET /slow.fxt HTTP/1.1\r\nHost:");
    assert_eq!(status(&head), "HTTP/1.1 408 Request Timeout");
}

#[test]
fn a_port_in_use_is_an_error_naming_it() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let file = golden().file("busy.fxt");
    let out = fxt(&["open", "--no-browser", "--port", &port, p(&file)]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("port {port} on 127.0.0.1 is in use")),
        "{err}"
    );
    assert!(
        stdout(&out).is_empty(),
        "no link for a server that is not there"
    );
}

/// The golden trace with a string index used before its definition, which
/// Perfetto cannot resolve.
fn misread() -> Trace {
    golden()
        .push(&event(
            EventKind::Instant,
            2000,
            ThreadRef::Index(1),
            StringRef::Index(1),
            StringRef::Index(9),
            &[],
        ))
        .push(&StringRecord {
            index: 9,
            value: "defined late",
        })
}

#[test]
fn what_perfetto_would_misread_is_said_and_convert_serves_the_fix() {
    let file = misread().file("misread.fxt");
    let bytes = std::fs::read(&file).unwrap();
    let converted_file = tmp("misread-converted.fxt");
    let out = fxt(&["convert", "--perfetto", p(&file), "-o", p(&converted_file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let converted = std::fs::read(&converted_file).unwrap();
    assert_ne!(converted, bytes);

    // Without --convert: the file as it is, and one line saying how to fix it.
    let server = Server::start(&[p(&file)]);
    let (code, _, body) = get(&server.url(), UI);
    assert_eq!(code, 200);
    assert!(body == bytes);
    let (status, stderr) = server.wait();
    assert!(status.success());
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("Perfetto would misread"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("1 undefined references"), "{stderr}");
    assert!(
        lines[0].contains(&format!("fxt convert --perfetto {}", p(&file))),
        "{stderr}"
    );

    // With --convert: the bytes `fxt convert --perfetto` writes.
    let server = Server::start(&["--convert", p(&file)]);
    let (code, _, body) = get(&server.url(), UI);
    assert_eq!(code, 200);
    assert!(body == converted);
    assert!(fxt_format::compat::check_perfetto(&body).is_clean());
    assert!(server.wait().0.success());

    // A trace Perfetto reads whole: nothing said.
    let file = golden().file("clean.fxt");
    let server = Server::start(&[p(&file)]);
    get(&server.url(), UI);
    let (_, stderr) = server.wait();
    assert!(!stderr.contains("Perfetto would"), "{stderr}");
}

/// Serves `file` and returns what a fetch got.
fn fetch_once(file: &std::path::Path) -> Vec<u8> {
    let server = Server::start(&[p(file)]);
    let (code, cors, body) = get(&server.url(), UI);
    assert_eq!((code, cors.as_deref()), (200, Some(UI)));
    assert!(server.wait().0.success());
    body
}

#[test]
fn an_archive_and_a_snapshot_open_the_same_way() {
    let a = golden().file("a.fxt");
    let b = Trace::with_provider(2, "other", 1_000_000_000).file("b.fxt");
    let archive = tmp("archive.fxt");
    let out = fxt(&["merge", p(&a), p(&b), "-o", p(&archive)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fetch_once(&archive) == std::fs::read(&archive).unwrap());

    let snapshot = tmp("session.snapshot-1.fxt");
    let session = fxt::start(fxt::Config::new().output(tmp("session.fxt"))).unwrap();
    fxt::trace_instant!("app", "before the snapshot");
    session.snapshot_to_path(&snapshot).unwrap();
    session.finish().unwrap();
    let bytes = std::fs::read(&snapshot).unwrap();
    assert!(fetch_once(&snapshot) == bytes);
}

#[test]
fn stdin_is_served_as_trace_fxt() {
    let bytes = golden().bytes();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fxt"))
        .args(["open", "--no-browser", "--port", "0", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let mut link = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut link)
        .unwrap();
    let server = Server {
        child,
        link: link.trim().to_owned(),
        stderr: std::thread::spawn(String::new),
    };
    assert!(server.url().ends_with("/trace.fxt"), "{}", server.link);
    let (code, _, body) = get(&server.url(), UI);
    assert_eq!(code, 200);
    assert!(body == bytes);
    assert!(server.wait().0.success());
}

/// A program built without the symbolizer: what `fxt open` serves names
/// its samples and carries their Perfetto packets (appended here from the
/// trace's modules and the binary), after the trace's own bytes.
#[test]
fn the_samples_of_a_program_built_without_the_symbolizer_are_served_named() {
    use fxt_format::samples::SYMBOLS_NAME;
    let bytes = unsymbolized_program_trace();
    let path = tmp("unsymbolized-open.fxt");
    std::fs::write(&path, &bytes).unwrap();
    let served = fetch_once(&path);
    assert!(served.len() > bytes.len() && served.starts_with(&bytes));
    let scan = fxt_symbols::scan::TraceSamples::read(&served);
    assert!(scan.perfetto_records > 0);
    assert!(scan.is_symbolized());
    let named = scan
        .symbols
        .iter()
        .flat_map(|r| &r.symbols)
        .filter_map(|s| s.frames.last())
        .any(|f| f.function.ends_with("::burn_in_sampled_program"));
    assert!(named, "{:?}", scan.symbols);
    assert!(String::from_utf8_lossy(&served).contains(SYMBOLS_NAME));
}
