//! The `fxt` command on hostile input: every subcommand, on valid traces
//! damaged at random (truncated, bits flipped, size fields of zero, past the
//! end or huge, garbage appended), finishes with a status of its own (0, 1
//! or 2) and never panics or dies from a signal.

mod cli_support;
use cli_support::*;

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One damaged copy of `good`.
fn damage(good: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut bytes = good.to_vec();
    let words = bytes.len() / 8;
    match rng.below(5) {
        0 => bytes.truncate(rng.below(bytes.len() + 1)),
        1 => {
            for _ in 0..1 + rng.below(8) {
                let bit = rng.below(bytes.len() * 8);
                bytes[bit / 8] ^= 1 << (bit % 8);
            }
        }
        2 => {
            // A header-sized field overwritten with an extreme size.
            let w = rng.below(words) * 8;
            let size: u64 = [0, 1, 0xfff, 0xffff_ffff][rng.below(4)];
            let mut header = u64::from_le_bytes(bytes[w..w + 8].try_into().unwrap());
            header = (header & !0xf_ffff_fff0) | (size << 4);
            if rng.below(2) == 0 {
                header = (header & !0xf) | 15; // as a large record
            }
            bytes[w..w + 8].copy_from_slice(&header.to_le_bytes());
        }
        3 => {
            for _ in 0..rng.below(64) {
                bytes.push(rng.next() as u8);
            }
        }
        _ => {
            let w = rng.below(words) * 8;
            bytes[w..w + 8].copy_from_slice(&rng.next().to_le_bytes());
        }
    }
    bytes
}

#[test]
fn no_subcommand_panics_on_damaged_traces() {
    let good = golden().bytes();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let input = tmp("hostile_in.fxt");
    let output = tmp("hostile_out.fxt");
    for case in 0..200 {
        let bytes = damage(&good, &mut rng);
        std::fs::write(&input, &bytes).unwrap();
        for args in [
            vec!["dump", "--offsets", p(&input)],
            vec!["stats", "--json", p(&input)],
            vec!["json", p(&input)],
            vec!["check", p(&input)],
            vec!["recover", p(&input), "-o", p(&output)],
        ] {
            let out = fxt(&args);
            let err = stderr(&out);
            assert!(
                matches!(out.status.code(), Some(0..=2)) && !err.contains("panicked"),
                "case {case}: `fxt {}` ended with {:?}\n{err}\ninput: {bytes:02x?}",
                args.join(" "),
                out.status
            );
        }
    }
}
