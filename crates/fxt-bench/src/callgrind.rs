//! Instructions counted by valgrind's callgrind: the benchmark binary
//! runs itself again as a child under callgrind, which counts only inside
//! the functions a `--toggle-collect` pattern names. Robust where time is
//! not (a loaded machine, two cores), so the benches print both.

use std::process::Command;

/// What one counted child did.
#[derive(Debug)]
pub struct Counted {
    /// Instructions inside the toggled functions ("Collected :").
    pub instructions: u64,
    /// The child's standard output (for what it reports of its run).
    pub stdout: String,
}

/// Runs this binary with `args` under callgrind, counting inside the
/// functions matching `toggle`; `Err` says why there is no count
/// (no valgrind, the child failed, no count printed).
pub fn count(args: &[&str], toggle: &str) -> Result<Counted, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let out = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            &format!("--toggle-collect={toggle}"),
        ])
        .arg(exe)
        .args(args)
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("the counted child failed ({}): {err}", out.status));
    }
    let instructions = collected(&err).ok_or_else(|| format!("no instruction count in: {err}"))?;
    Ok(Counted {
        instructions,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    })
}

/// [`count`] for a bench that cannot go on without the count.
pub fn expect(args: &[&str], toggle: &str) -> Counted {
    count(args, toggle).unwrap_or_else(|e| panic!("callgrind: {e}"))
}

/// The count in callgrind's summary line `==pid== Collected : N`.
fn collected(stderr: &str) -> Option<u64> {
    stderr
        .lines()
        .find_map(|l| l.split_once("Collected :"))
        .and_then(|(_, n)| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::collected;

    #[test]
    fn the_count_is_read_from_callgrinds_summary() {
        let stderr =
            "==7== Events    : Ir\n==7== Collected : 123456\n==7==\n==7== I   refs:      999\n";
        assert_eq!(collected(stderr), Some(123_456));
        assert_eq!(collected("==7== I   refs: 5\n"), None);
    }
}
