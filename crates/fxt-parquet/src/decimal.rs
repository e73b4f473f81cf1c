//! An integer's decimal text as a PLAIN string (its length, then its
//! digits) written in a fixed-size block: a copy of a length known only
//! at run time is a call to `memmove`, which costs more than the digits
//! themselves for the short numbers arguments hold.

/// The longest PLAIN decimal text of an `i64`: its 4-byte length and
/// `-9223372036854775808`.
pub const BLOCK: usize = 24;

/// Two-digit pairs, `00` to `99`.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The PLAIN string of `v`'s decimal text (what `itoa` writes, after its
/// length) at the start of `block`, and its length in bytes.
#[inline(always)]
pub fn plain(v: i64, block: &mut [u8; BLOCK]) -> usize {
    let negative = v < 0;
    let mut u = v.unsigned_abs();
    let digits = u.checked_ilog10().map_or(1, |log| log as usize + 1);
    let len = digits + usize::from(negative);
    let mut at = 4 + len;
    while u >= 100 {
        let pair = (u % 100) as usize * 2;
        u /= 100;
        at -= 2;
        block[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if u >= 10 {
        let pair = u as usize * 2;
        at -= 2;
        block[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        block[at] = b'0' + u as u8;
    }
    if negative {
        block[4] = b'-';
    }
    block[..4].copy_from_slice(&(len as u32).to_le_bytes());
    4 + len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_reads_as_itoa_writes_it_after_its_length() {
        let mut values = vec![0, 1, -1, 9, 10, 99, 100, -100, 101, i64::MAX, i64::MIN];
        for p in 0..19 {
            let ten = 10i64.pow(p);
            values.extend([ten - 1, ten, ten + 1, -ten, 1 - ten, -ten - 1, 7 * ten]);
        }
        for v in values {
            let mut block = [0xaa; BLOCK];
            let n = plain(v, &mut block);
            let text = itoa::Buffer::new().format(v).to_owned();
            assert_eq!(&block[4..n], text.as_bytes(), "{v}");
            assert_eq!(block[..4], (text.len() as u32).to_le_bytes(), "{v}");
        }
    }
}
