//! The recording contract: the settings a manager gives the sessions it
//! records (`fxt record` to every process of its tree through the
//! environment, `fxt trace start` to providers through a
//! [`StartRequest`]), the names of their environment variables, their
//! limits and the one parser of each. The runtime's `Config::from_env`,
//! the provider's answer to a start request and both commands' options all
//! parse and check with these, so that a value is refused alike wherever
//! it is given, with the same words.

use crate::message::{Mode, StartRequest};

/// The environment variables of the contract, as `fxt record` sets them
/// for its tree and a program's `fxt::start` reads them.
pub mod env {
    /// The spool folder of an `fxt record` (set: the process is recorded).
    pub const RECORD: &str = "FXT_RECORD";
    /// Buffer size ([`super::parse_buffer`]).
    pub const BUFFER: &str = "FXT_BUFFER";
    /// Buffering mode ([`super::parse_mode`]).
    pub const MODE: &str = "FXT_MODE";
    /// Comma-separated categories ([`super::parse_categories`]).
    pub const CATEGORIES: &str = "FXT_CATEGORIES";
    /// CPU samples per second of thread CPU time ([`super::parse_sample_hz`]).
    pub const SAMPLE_HZ: &str = "FXT_SAMPLE_HZ";
    /// Mean bytes between sampled allocations (0: off).
    pub const ALLOC_SAMPLE: &str = "FXT_ALLOC_SAMPLE";
}

/// The smallest buffer a session takes (256 KiB): a smaller one is refused
/// rather than quietly enlarged.
pub const MIN_BUFFER: u64 = 256 << 10;

/// The largest buffer a session may be asked for (16 GiB): a provider
/// refuses more (and any buffer larger than its machine's memory).
pub const MAX_BUFFER: u64 = 16 << 30;

/// The highest CPU sampling rate, in samples per second of a thread's CPU
/// time (kept with the samples' format, which the readers check too).
pub use fxt_format::samples::MAX_SAMPLE_HZ;

/// The largest allocation sampling mean, in bytes (kept with the
/// allocation records' format).
pub use fxt_format::samples::MAX_ALLOC_SAMPLE_BYTES;

/// Parses a byte size, the one grammar of every buffer size a user gives
/// (`FXT_BUFFER`, `fxt record --buffer`, `fxt trace start --buffer`):
/// digits, optionally followed by `K`, `M` or `G` (powers of 1024,
/// case-insensitive, optionally followed by `B` or `iB`).
///
/// ```
/// use fxt_control::parse_size;
/// assert_eq!(parse_size("4096"), Some(4096));
/// assert_eq!(parse_size("64K"), Some(65536));
/// assert_eq!(parse_size("16MiB"), Some(16 << 20));
/// assert_eq!(parse_size("1g"), Some(1 << 30));
/// assert_eq!(parse_size("lots"), None);
/// assert_eq!(parse_size("99999999999999999G"), None);
/// ```
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits == 0 {
        return None;
    }
    let n: u64 = s[..digits].parse().ok()?;
    let suffix = s[digits..].trim().to_ascii_lowercase();
    let shift = match suffix.as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// A buffer size: [`parse_size`]'s grammar, [`check_buffer`]'s range.
///
/// ```
/// use fxt_control::parse_buffer;
/// assert_eq!(parse_buffer("8M"), Ok(8 << 20));
/// assert!(parse_buffer("1K").is_err());
/// assert!(parse_buffer("lots").is_err());
/// ```
pub fn parse_buffer(s: &str) -> Result<u64, String> {
    check_buffer(parse_size(s).ok_or_else(|| not_a_size(s))?)
}

/// A buffer size in bytes, if within [`MIN_BUFFER`] ..= [`MAX_BUFFER`].
pub fn check_buffer(bytes: u64) -> Result<u64, String> {
    if (MIN_BUFFER..=MAX_BUFFER).contains(&bytes) {
        Ok(bytes)
    } else {
        Err(format!(
            "a buffer of {bytes} bytes is outside the limits ({MIN_BUFFER} to {MAX_BUFFER} bytes)"
        ))
    }
}

/// A buffering mode by name (blanks and case ignored).
///
/// ```
/// use fxt_control::{parse_mode, Mode};
/// assert_eq!(parse_mode("Circular"), Ok(Mode::Circular));
/// assert!(parse_mode("sometimes").is_err());
/// ```
pub fn parse_mode(s: &str) -> Result<Mode, String> {
    Mode::from_name(&s.trim().to_ascii_lowercase()).ok_or_else(|| {
        let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
        format!("unknown mode {s:?} (one of {})", names.join(", "))
    })
}

/// A CPU sampling rate in Hz: 0 (off) to [`MAX_SAMPLE_HZ`].
///
/// ```
/// use fxt_control::parse_sample_hz;
/// assert_eq!(parse_sample_hz("1000"), Ok(1000));
/// assert!(parse_sample_hz("20000").is_err());
/// assert!(parse_sample_hz("fast").is_err());
/// ```
pub fn parse_sample_hz(s: &str) -> Result<u32, String> {
    let hz = s
        .trim()
        .parse::<u64>()
        .map_err(|_| format!("not a rate in Hz: {s:?}"))?;
    u32::try_from(hz)
        .map_err(|_| ())
        .and_then(|hz| check_sample_hz(hz).map_err(|_| ()))
        .map_err(|()| sample_hz_error(hz))
}

/// A sampling rate in Hz, if at most [`MAX_SAMPLE_HZ`].
pub fn check_sample_hz(hz: u32) -> Result<u32, String> {
    if hz <= MAX_SAMPLE_HZ {
        Ok(hz)
    } else {
        Err(sample_hz_error(u64::from(hz)))
    }
}

/// An allocation sampling mean: [`parse_size`]'s grammar, 0 (off) to
/// [`MAX_ALLOC_SAMPLE_BYTES`].
///
/// ```
/// use fxt_control::parse_alloc_sample;
/// assert_eq!(parse_alloc_sample("512K"), Ok(512 << 10));
/// assert_eq!(parse_alloc_sample("0"), Ok(0));
/// assert!(parse_alloc_sample("2G").is_err());
/// assert!(parse_alloc_sample("lots").is_err());
/// ```
pub fn parse_alloc_sample(s: &str) -> Result<u64, String> {
    check_alloc_sample(parse_size(s).ok_or_else(|| not_a_size(s))?)
}

/// An allocation sampling mean in bytes, if at most
/// [`MAX_ALLOC_SAMPLE_BYTES`].
pub fn check_alloc_sample(bytes: u64) -> Result<u64, String> {
    if bytes <= MAX_ALLOC_SAMPLE_BYTES {
        Ok(bytes)
    } else {
        Err(format!(
            "an allocation sampling mean of {bytes} bytes is outside the limits \
             (0, off, to {MAX_ALLOC_SAMPLE_BYTES} bytes)"
        ))
    }
}

/// What [`parse_size`] refused, said once for every size option.
fn not_a_size(s: &str) -> String {
    format!("not a size: {s:?} (digits, then K, M or G, optionally with B or iB)")
}

fn sample_hz_error(hz: u64) -> String {
    format!("a sampling rate of {hz} Hz is outside the limits (0, off, to {MAX_SAMPLE_HZ} Hz)")
}

/// A comma-separated category list as given (a line break is refused: the
/// window's state holds the list on one line).
pub fn parse_categories(s: &str) -> Result<String, String> {
    if s.contains(['\n', '\r']) {
        Err("a line break is not a category".to_string())
    } else {
        Ok(s.to_string())
    }
}

/// The settings of a recording, each checked by its parser above: what
/// `fxt record` and `fxt trace start` both take. `None` leaves a setting
/// to the program (its own `Config`, or its environment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordingOptions {
    /// Buffer size in bytes.
    pub buffer: Option<u64>,
    /// Buffering mode.
    pub mode: Option<Mode>,
    /// Comma-separated categories.
    pub categories: Option<String>,
    /// CPU samples per second of each thread's CPU time.
    pub sample_hz: Option<u32>,
    /// Mean bytes allocated between sampled allocations.
    pub alloc_sample: Option<u64>,
}

impl RecordingOptions {
    /// The environment variables that give these settings to the processes
    /// of an `fxt record` tree ([`env`](mod@env)).
    ///
    /// ```
    /// use fxt_control::{RecordingOptions, Mode};
    /// let o = RecordingOptions { mode: Some(Mode::Streaming), sample_hz: Some(99), ..Default::default() };
    /// assert_eq!(o.env(), [("FXT_MODE", "streaming".to_string()), ("FXT_SAMPLE_HZ", "99".to_string())]);
    /// ```
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(b) = self.buffer {
            out.push((env::BUFFER, b.to_string()));
        }
        if let Some(m) = self.mode {
            out.push((env::MODE, m.name().to_string()));
        }
        if let Some(c) = &self.categories {
            out.push((env::CATEGORIES, c.clone()));
        }
        if let Some(hz) = self.sample_hz {
            out.push((env::SAMPLE_HZ, hz.to_string()));
        }
        if let Some(bytes) = self.alloc_sample {
            out.push((env::ALLOC_SAMPLE, bytes.to_string()));
        }
        out
    }

    /// The start request of window `window` that gives these settings to
    /// a provider.
    pub fn start_request(&self, window: u64) -> StartRequest {
        StartRequest {
            window,
            categories: self.categories.clone(),
            mode: self.mode,
            buffer: self.buffer,
            sample_hz: self.sample_hz,
            alloc_sample: self.alloc_sample,
        }
    }
}
