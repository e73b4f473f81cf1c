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
    if u < 100_000_000 {
        return short(u as u32, negative, block);
    }
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

/// [`plain`] of a number below 10^8 (`negative`: of its negative), its
/// eight digits made at once in the bytes of one word (no digit waits
/// for the one before it) and stored whole, its leading zeros shifted
/// out.
#[inline(always)]
fn short(u: u32, negative: bool, block: &mut [u8; BLOCK]) -> usize {
    let digits = eight_digits(u);
    // The most significant digit is the lowest byte: leading zeros are
    // the word's low zero bytes (all but the last digit of zero).
    let zeros = (digits.trailing_zeros() / 8).min(7);
    let text = (digits | 0x3030_3030_3030_3030) >> (8 * zeros);
    let sign = usize::from(negative);
    let len = 8 - zeros as usize + sign;
    let at = 4 + sign;
    block[at..at + 8].copy_from_slice(&text.to_le_bytes());
    if negative {
        block[4] = b'-';
    }
    block[..4].copy_from_slice(&(len as u32).to_le_bytes());
    4 + len
}

/// The eight decimal digits of `u` (below 10^8, leading zeros
/// included), one a byte, the most significant in the lowest byte: the
/// halves of four digits in 32-bit lanes, their pairs in 16-bit lanes,
/// then the digits, each split by a multiplication that divides every
/// lane at once (exact for the lanes' ranges: `* 10486 >> 20` is `/ 100`
/// below 10^4, `* 103 >> 10` is `/ 10` below 100).
#[inline(always)]
fn eight_digits(u: u32) -> u64 {
    let halves = u64::from(u / 10_000) | u64::from(u % 10_000) << 32;
    let hundreds = ((halves * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = hundreds | (halves - hundreds * 100) << 16;
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    tens | (pairs - tens * 10) << 8
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
        let mut next = crate::test_rng::xorshift(0x3c6e_f372_fe94_f82bu64);
        for _ in 0..200_000 {
            let r = next();
            // Every length, both signs.
            let v = (r >> 8) as i64 % 10i64.pow((r % 19) as u32);
            values.extend([v, -v]);
        }
        values.extend(99_999_990..100_000_010);
        values.extend(-100_000_010..-99_999_990);
        for v in values {
            let mut block = [0xaa; BLOCK];
            let n = plain(v, &mut block);
            let text = itoa::Buffer::new().format(v).to_owned();
            assert_eq!(&block[4..n], text.as_bytes(), "{v}");
            assert_eq!(block[..4], (text.len() as u32).to_le_bytes(), "{v}");
        }
    }
}
