//! The one parser of the `FXT_*` environment variables: each variable's
//! name, what a good value looks like, and how it sets a [`Config`];
//! [`Config::from_env`], and the variables `fxt record` passes on.

use std::path::PathBuf;

use fxt_control::recording::env;

use super::{ClockSource, Config, HelperScheduling, Mode, Prefault};

/// One environment variable [`Config::from_env`] parses: its name, what a
/// good value looks like (for the warning about a bad one), and how it
/// sets a config (`false`: the value does not parse).
pub(crate) struct EnvVar {
    name: &'static str,
    expected: &'static str,
    apply: fn(&mut Config, &str) -> bool,
}

/// The variables `fxt record` passes on over a program's own config.
const RECORDING_ENV_VARS: [&str; 5] = [
    env::BUFFER,
    env::MODE,
    env::CATEGORIES,
    env::SAMPLE_HZ,
    env::ALLOC_SAMPLE,
];

/// The categories of a comma-separated list (blanks trimmed, empty items
/// skipped), as `FXT_CATEGORIES` and a trace manager give them.
pub(crate) fn category_list(v: &str) -> Vec<&str> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// Every variable [`Config::from_env`] parses (`FXT_OUTPUT`, any path, is
/// read beside them).
const ENV_VARS: [EnvVar; 13] = [
    EnvVar {
        name: env::BUFFER,
        expected: "bytes with an optional K/M/G suffix, 256K to 16G",
        apply: |c, v| {
            fxt_control::parse_buffer(v)
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .map(|n| c.buffer_size = n)
                .is_some()
        },
    },
    EnvVar {
        name: env::MODE,
        expected: "oneshot, circular or streaming",
        apply: |c, v| Mode::parse(v).map(|m| c.mode = m).is_some(),
    },
    EnvVar {
        name: env::CATEGORIES,
        expected: "a comma-separated list",
        apply: |c, v| {
            c.set_categories(&category_list(v));
            true
        },
    },
    EnvVar {
        name: "FXT_CLOCK",
        expected: "auto or monotonic",
        apply: |c, v| {
            c.clock = match v.trim().to_ascii_lowercase().as_str() {
                "monotonic" | "mono" | "ns" => ClockSource::Monotonic,
                "auto" | "tsc" | "" => ClockSource::Auto,
                _ => return false,
            };
            true
        },
    },
    EnvVar {
        name: "FXT_PREFAULT",
        expected: "background, start (1) or off (0)",
        apply: |c, v| Prefault::parse(v).map(|p| c.prefault = p).is_some(),
    },
    EnvVar {
        name: "FXT_SNAPSHOT_SIGNAL",
        expected: "USR1, USR2, HUP, QUIT or a number",
        apply: |c, v| {
            parse_signal(v)
                .map(|s| c.snapshot_signal = Some(s))
                .is_some()
        },
    },
    EnvVar {
        name: "FXT_CRASH_SAFE",
        expected: "0 or 1",
        apply: |c, v| parse_flag(v).map(|on| c.crash_safe = on).is_some(),
    },
    EnvVar {
        name: "FXT_LARGE_RECORDS",
        expected: "0 or 1",
        apply: |c, v| parse_flag(v).map(|on| c.large_records = on).is_some(),
    },
    EnvVar {
        name: "FXT_DRAIN",
        expected: "0 or 1",
        apply: |c, v| parse_flag(v).map(|on| c.drain = on).is_some(),
    },
    EnvVar {
        name: "FXT_FILE_LIMIT",
        expected: "bytes with an optional K/M/G suffix",
        apply: |c, v| {
            parse_size(v)
                .map(|n| c.file_limit = Some(n as u64))
                .is_some()
        },
    },
    EnvVar {
        name: "FXT_HELPER_SCHED",
        expected: "normal, inherit, fifo:N or rr:N (N in 1..=99)",
        apply: |c, v| {
            HelperScheduling::parse(v)
                .map(|h| c.helper_scheduling = h)
                .is_some()
        },
    },
    EnvVar {
        name: env::SAMPLE_HZ,
        expected: "a rate in Hz, 0 (off) to 10000",
        apply: |c, v| parse_sample_hz(v).map(|hz| c.sample_hz = hz).is_some(),
    },
    EnvVar {
        name: env::ALLOC_SAMPLE,
        expected: "a mean in bytes with an optional K/M/G suffix, 0 (off) to 1G",
        apply: |c, v| {
            parse_alloc_sample(v)
                .map(|n| c.alloc_sample_bytes = n)
                .is_some()
        },
    },
];

/// The highest allocation sampling mean (kept with the format, which the
/// command line reads too).
pub use fxt_format::samples::MAX_ALLOC_SAMPLE_BYTES;

/// The allocation sampling mean `fxt record --alloc-sample` and the
/// documentation suggest: one sample per 512 KiB allocated. A sample costs
/// a copy of the thread's stack and one record, so a thread allocating a
/// gigabyte per second takes about 2000 a second; a site that allocates
/// 100 MB gets about 200 samples, a relative error near 7%. The guide
/// (`docs/guide/memory.md`) gives what each mean costs and how close its
/// estimates come.
pub const DEFAULT_ALLOC_SAMPLE_BYTES: u64 = 512 << 10;

/// Parses `FXT_ALLOC_SAMPLE`: bytes with an optional K/M/G suffix, 0 to
/// [`MAX_ALLOC_SAMPLE_BYTES`].
pub(crate) fn parse_alloc_sample(v: &str) -> Option<u64> {
    fxt_control::parse_alloc_sample(v).ok()
}

/// The highest sampling rate (kept with the samples' format, which the
/// command line reads too).
pub use fxt_format::samples::MAX_SAMPLE_HZ;

/// Parses `FXT_SAMPLE_HZ`: 0 to [`MAX_SAMPLE_HZ`]
/// ([`fxt_control::parse_sample_hz`]).
pub(crate) fn parse_sample_hz(v: &str) -> Option<u32> {
    fxt_control::parse_sample_hz(v).ok()
}

/// `FXT_HELPER_SCHED` (parsed and reported as [`Config::from_env`] does),
/// else the default: for fxt's threads that belong to no session (a
/// provider's listener).
pub(crate) fn helper_scheduling_from_env() -> HelperScheduling {
    Config::new()
        .apply_env(ENV_VARS.iter().filter(|v| v.name == "FXT_HELPER_SCHED"))
        .helper_scheduling
}

/// Parses an on/off variable: `1`/`true`/`yes`/`on`, `0`/`false`/`no`/`off`
/// or empty.
fn parse_flag(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

impl Config {
    /// The defaults of [`Config::new`], overridden by the `FXT_*`
    /// environment variables: the table of the repository's README
    /// (section "Configuration") lists each with its values and default. A value that does not parse
    /// is reported on stderr and ignored.
    pub fn from_env() -> Config {
        let mut c = Config::new();
        if let Some(v) = std::env::var_os("FXT_OUTPUT") {
            if !v.is_empty() {
                c.output = PathBuf::from(v);
            }
        }
        c.apply_env(ENV_VARS.iter())
    }

    /// `config` with `FXT_BUFFER`, `FXT_MODE` and `FXT_CATEGORIES` applied
    /// where set (parsed and reported as [`Config::from_env`] does): what
    /// `fxt record` passes on to every session it records, over the
    /// program's own config (see `crate::output`).
    pub(crate) fn with_recording_env(self) -> Config {
        self.apply_env(
            ENV_VARS
                .iter()
                .filter(|v| RECORDING_ENV_VARS.contains(&v.name)),
        )
    }

    /// Applies each of `vars` that is set; a value that does not parse is
    /// reported on stderr and ignored.
    fn apply_env<'a>(self, vars: impl Iterator<Item = &'a EnvVar>) -> Config {
        self.apply_vars(vars, |name| std::env::var(name), |w| eprintln!("fxt: {w}"))
    }

    /// [`Config::apply_env`] with the values from `lookup` and the warnings
    /// about bad ones to `warn`.
    fn apply_vars<'a>(
        mut self,
        vars: impl Iterator<Item = &'a EnvVar>,
        lookup: impl Fn(&str) -> Result<String, std::env::VarError>,
        mut warn: impl FnMut(String),
    ) -> Config {
        for var in vars {
            let bad = match lookup(var.name) {
                Ok(v) if (var.apply)(&mut self, &v) => continue,
                Ok(v) => format!("{v:?}"),
                Err(std::env::VarError::NotUnicode(v)) => format!("{v:?}"),
                Err(std::env::VarError::NotPresent) => continue,
            };
            warn(format!(
                "ignoring {}={bad}: expected {}",
                var.name, var.expected
            ));
        }
        self
    }
}

/// Parses a byte size: digits, optionally followed by `K`, `M` or `G`
/// (powers of 1024, case-insensitive, optionally followed by `B` or `iB`):
/// [`fxt_control::parse_size`], the grammar `fxt trace start --buffer`
/// takes too, for a size this machine can address.
///
/// ```
/// use fxt_runtime::parse_size;
/// assert_eq!(parse_size("64K"), Some(65536));
/// assert_eq!(parse_size("lots"), None);
/// ```
pub fn parse_size(s: &str) -> Option<usize> {
    fxt_control::parse_size(s).and_then(|n| usize::try_from(n).ok())
}

/// Parses a signal for `FXT_SNAPSHOT_SIGNAL`: `USR1`, `SIGUSR2`, … or a
/// number.
pub(crate) fn parse_signal(s: &str) -> Option<i32> {
    let s = s.trim().to_ascii_uppercase();
    let s = s.strip_prefix("SIG").unwrap_or(&s);
    match s {
        "USR1" => Some(libc::SIGUSR1),
        "USR2" => Some(libc::SIGUSR2),
        "HUP" => Some(libc::SIGHUP),
        "QUIT" => Some(libc::SIGQUIT),
        n => n.parse().ok().filter(|&n: &i32| n > 0 && n < 65),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DEFAULT_BUFFER_SIZE;
    use std::env::VarError;

    /// Applies `vars` from `env` (name, value pairs); returns the config
    /// and the warnings.
    fn apply(config: Config, recording: bool, env: &[(&str, &str)]) -> (Config, Vec<String>) {
        let lookup = |name: &str| {
            env.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
                .ok_or(VarError::NotPresent)
        };
        let mut warnings = Vec::new();
        let vars = ENV_VARS
            .iter()
            .filter(|v| !recording || RECORDING_ENV_VARS.contains(&v.name));
        let c = config.apply_vars(vars, lookup, |w| warnings.push(w));
        (c, warnings)
    }

    #[test]
    fn recording_applies_only_its_variables_and_warns_on_bad_ones() {
        let env = [
            ("FXT_BUFFER", "2M"),
            ("FXT_MODE", "sideways"),
            ("FXT_CATEGORIES", "a, b,,"),
            ("FXT_CLOCK", "monotonic"),
            ("FXT_DRAIN", "0"),
        ];
        let own = Config::new().mode(Mode::Circular);
        let (c, warnings) = apply(own, true, &env);
        assert_eq!(c.buffer_size, 2 << 20);
        assert_eq!(c.mode, Mode::Circular, "a bad mode keeps the program's");
        assert_eq!(c.categories, Some(vec!["a".to_string(), "b".to_string()]));
        assert_eq!(c.clock, ClockSource::Auto, "not a recording variable");
        assert!(c.drain, "not a recording variable");
        assert_eq!(
            warnings,
            ["ignoring FXT_MODE=\"sideways\": expected oneshot, circular or streaming"]
        );
    }

    #[test]
    fn from_env_parses_every_variable_with_the_same_rules() {
        let env = [
            ("FXT_BUFFER", "lots"),
            ("FXT_MODE", " Streaming "),
            ("FXT_CATEGORIES", "*"),
            ("FXT_CLOCK", "mono"),
            ("FXT_PREFAULT", "start"),
            ("FXT_SNAPSHOT_SIGNAL", "SIGUSR2"),
            ("FXT_CRASH_SAFE", "yes"),
            ("FXT_LARGE_RECORDS", "maybe"),
            ("FXT_DRAIN", "off"),
        ];
        let (c, warnings) = apply(Config::new().categories(&["x"]), false, &env);
        assert_eq!(c.buffer_size, DEFAULT_BUFFER_SIZE);
        assert_eq!(c.mode, Mode::Streaming);
        assert_eq!(c.categories, None);
        assert_eq!(c.clock, ClockSource::Monotonic);
        assert_eq!(c.prefault, Prefault::AtStart);
        assert_eq!(c.snapshot_signal, Some(libc::SIGUSR2));
        assert!(c.crash_safe);
        assert!(!c.large_records);
        assert!(!c.drain);
        assert_eq!(
            warnings,
            [
                "ignoring FXT_BUFFER=\"lots\": expected bytes with an optional K/M/G suffix, 256K to 16G",
                "ignoring FXT_LARGE_RECORDS=\"maybe\": expected 0 or 1",
            ]
        );
    }

    #[test]
    fn the_recording_contracts_limits_hold_in_the_environment() {
        // fxt_control::recording's limits: what `fxt record` and `fxt
        // trace start` refuse at their command line, a program refuses in
        // its environment (with a warning, keeping its own setting).
        let over = [
            ("FXT_BUFFER", "128K"),
            ("FXT_SAMPLE_HZ", "10001"),
            ("FXT_MODE", "sometimes"),
        ];
        let (c, warnings) = apply(Config::new(), true, &over);
        assert_eq!(c.buffer_size, DEFAULT_BUFFER_SIZE);
        assert_eq!(c.sample_hz, 0);
        assert_eq!(c.mode, Mode::Oneshot);
        assert_eq!(warnings.len(), 3, "{warnings:?}");
        let at = [
            ("FXT_BUFFER", "256K"),
            ("FXT_SAMPLE_HZ", "10000"),
            ("FXT_MODE", "Circular"),
        ];
        let (c, warnings) = apply(Config::new(), true, &at);
        assert_eq!(c.buffer_size, fxt_control::MIN_BUFFER as usize);
        assert_eq!(c.sample_hz, MAX_SAMPLE_HZ);
        assert_eq!(c.mode, Mode::Circular);
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
