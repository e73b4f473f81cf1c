//! `fxt open`: a trace in Perfetto UI in one command.
//!
//! Serves the file on `127.0.0.1:9001` ([`crate::serve`]), the one local
//! address Perfetto UI's content security policy lets it fetch from, until
//! the UI has fetched it once; prints the link
//! `https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/NAME` and opens
//! it (`xdg-open`, `open`) unless `--no-browser`. On a machine reached over
//! SSH it also prints the port forward that makes the link work from the
//! machine with the browser.
//!
//! Before serving, the trace gets the walk of `fxt check --perfetto`
//! ([`fxt_format::compat::check_perfetto`]): what Perfetto would misread or
//! drop is said in one line, with `fxt convert --perfetto` as the fix;
//! `--convert` serves the converted bytes instead
//! ([`fxt_format::compat::convert_for_viewers`]). CPU samples of a program
//! that did not name them itself are named here, from the trace's modules
//! and the binaries on this machine, and served with their Perfetto
//! packets ([`crate::samples::with_appendix`]). An archive of
//! `fxt record`/`fxt merge` and a snapshot are traces like any other and
//! open the same way.

use std::borrow::Cow;
use std::io;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use fxt_format::compat::{check_perfetto, convert_for_viewers, Report};

use crate::error::Error;
use crate::input::Input;
use crate::samples;
use crate::serve::{self, Served};

/// The port Perfetto UI's content security policy allows (that of
/// `trace_processor_shell --httpd`).
const PERFETTO_PORT: u16 = 9001;

/// Arguments of `fxt open`.
#[derive(clap::Args)]
pub struct Args {
    /// The trace (`-` for stdin): a trace, an archive of `fxt record` or
    /// `fxt merge`, a snapshot.
    file: String,
    /// The Perfetto UI to open it in (a self-hosted one).
    #[arg(long, default_value = "https://ui.perfetto.dev")]
    origin: String,
    /// Print the link only; do not start a browser.
    #[arg(long)]
    no_browser: bool,
    /// The port on 127.0.0.1 (ui.perfetto.dev fetches only from 9001; 0
    /// picks a free one).
    #[arg(long, default_value_t = PERFETTO_PORT)]
    port: u16,
    /// Serve a copy converted as `fxt convert --perfetto` does when
    /// Perfetto would misread or drop part of the trace.
    #[arg(long)]
    convert: bool,
}

/// Runs `fxt open`.
pub fn run(args: Args) -> Result<ExitCode, Error> {
    let listener = serve::bind(args.port).map_err(|e| bind_error(args.port, &e))?;
    let port = listener
        .local_addr()
        .map_err(|e| bind_error(args.port, &e))?
        .port();
    let input = Input::open_trace_bytes(&args.file)?;
    let bytes = input.bytes().unwrap_or_default();
    let body = checked_body(&input.name, &args.file, bytes, args.convert);
    let body = with_sample_names(&input.name, body);

    let name = served_name(&args.file);
    let origin = serve::origin_of(&args.origin);
    let link = link(&args.origin, port, &name);
    eprintln!(
        "fxt: serving {} ({} bytes) at http://127.0.0.1:{port}/{} until it has been fetched once (Ctrl-C stops)",
        input.name,
        body.len(),
        serve::encode_segment(&name)
    );
    if port != PERFETTO_PORT && args.origin == "https://ui.perfetto.dev" {
        eprintln!(
            "fxt: note: ui.perfetto.dev fetches only from port {PERFETTO_PORT}; forward it to {port} (ssh -L {PERFETTO_PORT}:127.0.0.1:{port}) or use --port {PERFETTO_PORT}"
        );
    }
    println!("{link}");
    if let Some(hint) = ssh_hint(port) {
        eprintln!("{hint}");
    }
    if !args.no_browser {
        open_browser(&link);
    }
    let served = Served {
        name: &name,
        body: &body,
        origin: &origin,
    };
    let log = |line: &str| eprintln!("fxt: {line}");
    let peer = serve::serve_until_sent(&listener, &served, &log)
        .map_err(|e| Error::io(&format!("serving on 127.0.0.1:{port}"), e))?;
    eprintln!("fxt: sent {} to {peer}", input.name);
    Ok(ExitCode::SUCCESS)
}

/// `body` with its CPU samples and sampled allocations named and as
/// Perfetto packets (the allocations a heap profile), when the
/// program did not add them itself (built without feature `symbolize`).
fn with_sample_names<'a>(name: &str, body: Cow<'a, [u8]>) -> Cow<'a, [u8]> {
    match samples::with_appendix(&body) {
        Some((named, delivery)) => {
            if let Some(a) = &delivery.appendix {
                eprintln!(
                    "fxt: {name}: {} samples and {} allocation records shown by name ({} of {} addresses named from the binaries here)",
                    a.samples, a.allocs, a.resolved, a.addresses
                );
            }
            if delivery.derived > 0 {
                eprintln!(
                    "fxt: {name}: {} records drawn from the compact ones ({})",
                    delivery.derived,
                    fxt_symbols::derived::WHAT
                );
            }
            Cow::Owned(named)
        }
        None => body,
    }
}

/// The error for a port that cannot be bound, naming it.
fn bind_error(port: u16, e: &io::Error) -> Error {
    if e.kind() == io::ErrorKind::AddrInUse {
        Error::msg(format!(
            "port {port} on 127.0.0.1 is in use (another fxt open, or trace_processor_shell --httpd?): stop it, or choose another port with --port"
        ))
    } else {
        Error::msg(format!("cannot listen on 127.0.0.1:{port}: {e}"))
    }
}

/// The bytes to serve: the trace, after the `fxt check --perfetto` walk
/// (one line on stderr if Perfetto would misread or drop any of it), or
/// with `convert` the copy `fxt convert --perfetto` would write.
fn checked_body<'a>(name: &str, file: &str, bytes: &'a [u8], convert: bool) -> Cow<'a, [u8]> {
    let report = check_perfetto(bytes);
    if report.is_clean() {
        return Cow::Borrowed(bytes);
    }
    if convert {
        let converted = convert_for_viewers(bytes);
        eprintln!(
            "fxt: {name}: {}; serving a copy converted as `fxt convert --perfetto` does ({} records in, {} out)",
            findings(&report),
            converted.summary.records_in,
            converted.summary.records_out
        );
        return Cow::Owned(converted.bytes);
    }
    eprintln!(
        "fxt: {name}: {}: see `fxt check --perfetto {file}`; fix: `fxt convert --perfetto {file} -o for-perfetto.fxt` (or `fxt open --convert {file}`)",
        findings(&report)
    );
    Cow::Borrowed(bytes)
}

/// What Perfetto would get wrong, in a few words.
fn findings(report: &Report) -> String {
    let dropped = report.slices.iter().filter(|s| s.is_dropped()).count();
    format!(
        "Perfetto would misread or drop part of it ({} misframed records, {dropped} slices dropped, {} undefined references)",
        report.framing.len(),
        report.refs.len()
    )
}

/// The name the file is served under: its file name (`trace.fxt` for stdin).
fn served_name(file: &str) -> String {
    match Path::new(file).file_name() {
        Some(n) if file != "-" => n.to_string_lossy().into_owned(),
        _ => "trace.fxt".into(),
    }
}

/// The link that opens the served file in the UI at `ui`.
///
/// The file's URL is a query value of the UI's fragment, which the UI
/// percent-decodes once before fetching it: the name is encoded as a path
/// segment, then that again as a query value, so that any name (spaces,
/// `#`, `&`, `+`) reaches the server as it was.
pub fn link(ui: &str, port: u16, name: &str) -> String {
    let segment = serve::encode_segment(&serve::encode_segment(name));
    format!(
        "{}/#!/?url=http://127.0.0.1:{port}/{segment}",
        ui.trim_end_matches('/')
    )
}

/// The port forward to run on the machine with the browser, when this one
/// was reached over SSH.
fn ssh_hint(port: u16) -> Option<String> {
    let connection = std::env::var("SSH_CONNECTION").ok();
    let client = std::env::var("SSH_CLIENT").ok();
    if connection.is_none() && client.is_none() {
        return None;
    }
    // SSH_CONNECTION: client address, client port, server address, server port.
    let host = connection
        .as_deref()
        .and_then(|c| c.split_whitespace().nth(2))
        .unwrap_or("HOST")
        .to_owned();
    Some(format!(
        "fxt: over SSH: first run `ssh -L {port}:127.0.0.1:{port} {host}` on the machine with the browser, then open the link there"
    ))
}

/// Starts the desktop's browser on `link`, without waiting for it.
fn open_browser(link: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let spawned = Command::new(opener)
        .arg(link)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        // Reaped in the background so that no zombie stays while serving.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => eprintln!("fxt: could not start {opener} ({e}): open the link yourself"),
    }
}
