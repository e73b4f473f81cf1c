//! Appending the short pieces of a printed line kept for reuse (a quoted
//! name kept for its string index) as fixed-size blocks: a copy of a known
//! size is a few moves, where a copy of a variable size is a call to
//! `memcpy`, and `fxt dump` and `fxt json` append several such pieces per
//! event.
//!
//! A block is appended whole and the line cut back to the piece's end, so
//! every byte is still written by safe slice copies.
//!
//! An event's usual line is built in a [`Blocks`] buffer: its position is a
//! register, not a vector's length stored and loaded again around every
//! append, and a number's digit count is found apart from its digits, so
//! that where each piece goes does not wait for the digits before it. The
//! line is then appended to the output in one copy.

use fxt_format::decode::IntParts;

/// Bytes of a [`Piece`] appended as one block.
const BLOCK: usize = 64;

/// Printed bytes kept to be appended often.
#[derive(Clone)]
pub struct Piece {
    /// The bytes if they fit (`len` of them), zeros after.
    block: [u8; BLOCK],
    len: usize,
    /// The bytes if they do not fit.
    long: Vec<u8>,
}

impl Default for Piece {
    fn default() -> Self {
        Self {
            block: [0; BLOCK],
            len: 0,
            long: Vec::new(),
        }
    }
}

impl Piece {
    /// Replaces the bytes.
    pub fn set(&mut self, bytes: &[u8]) {
        self.len = bytes.len();
        self.long.clear();
        match self.block.get_mut(..bytes.len()) {
            Some(block) => block.copy_from_slice(bytes),
            None => self.long.extend_from_slice(bytes),
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        self.block.get(..self.len).unwrap_or(&self.long)
    }

    /// Appends the bytes to `out`.
    #[inline(always)]
    pub fn put(&self, out: &mut Vec<u8>) {
        if self.len <= BLOCK {
            let end = out.len() + self.len;
            out.extend_from_slice(&self.block);
            out.truncate(end);
        } else {
            out.extend_from_slice(&self.long);
        }
    }
}

impl Piece {
    /// The bytes if they fit in one block.
    #[inline(always)]
    fn block(&self) -> Option<(&[u8; BLOCK], usize)> {
        (self.len <= BLOCK).then_some((&self.block, self.len))
    }
}

/// Bytes of a [`Blocks`] buffer: more than the usual line it is used for
/// (a longer line does not fit and is built otherwise).
pub const LINE: usize = 2048;

/// A line being built from blocks of known size in a buffer of [`LINE`]
/// bytes. Every append is checked: `None` if the line would not fit, for
/// the caller to build it otherwise.
pub struct Blocks<'b> {
    buf: &'b mut [u8; LINE],
    /// Bytes of the line so far.
    len: usize,
}

impl<'b> Blocks<'b> {
    /// An empty line in `buf`.
    #[inline(always)]
    pub fn new(buf: &'b mut [u8; LINE]) -> Self {
        Blocks { buf, len: 0 }
    }

    /// Bytes of the line so far.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Drops the line.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Appends the first `len` bytes of `block` (all `N` are written;
    /// `len` is at most `N`, which every caller's table or count keeps,
    /// so that no clamp is paid per append: a larger one would leave
    /// bytes of the room in the line, never write past it).
    #[inline(always)]
    pub fn put<const N: usize>(&mut self, block: &[u8; N], len: usize) -> Option<()> {
        debug_assert!(len <= N);
        self.buf
            .get_mut(self.len..self.len + N)?
            .copy_from_slice(block);
        self.len += len;
        Some(())
    }

    /// Appends `text`.
    #[inline(always)]
    pub fn text<const N: usize>(&mut self, text: &[u8; N]) -> Option<()> {
        self.put(text, N)
    }

    /// Appends a piece: one block, or its bytes if they do not fit one.
    #[inline(always)]
    pub fn piece(&mut self, piece: &Piece) -> Option<()> {
        match piece.block() {
            Some((block, len)) => self.put(block, len),
            None => self.bytes(&piece.long),
        }
    }

    /// Appends an integer argument's value (read as its parts,
    /// [`fxt_format::decode::ArgWords::int_parts`]), as `Display` writes
    /// it. Its digits above its last three are likely those of the last
    /// one appended with `last` (an argument of the event before: an id, a
    /// sequence number, a size), and are then copied
    /// ([`Blocks::u64_near`]).
    #[inline(always)]
    pub fn int_parts_near(&mut self, value: IntParts, last: &mut HighDigits) -> Option<()> {
        self.put(b"-", usize::from(value.negative))?;
        self.u64_near(value.magnitude, last)
    }

    /// Appends `n` in decimal, as `Display` writes it.
    #[inline(always)]
    pub fn u64(&mut self, n: u64) -> Option<()> {
        if n < 100_000_000 {
            let (word, len) = short(n as u32);
            self.put(&word.to_le_bytes(), len)
        } else if n < 10_000_000_000_000_000 {
            let (high, len) = short((n / 100_000_000) as u32);
            let low = ascii(digits8((n % 100_000_000) as u32));
            self.put(&high.to_le_bytes(), len)?;
            self.put(&low.to_le_bytes(), 8)
        } else {
            let (top, len) = short((n / 10_000_000_000_000_000) as u32);
            let rest = n % 10_000_000_000_000_000;
            self.put(&top.to_le_bytes(), len)?;
            self.put(
                &ascii(digits8((rest / 100_000_000) as u32)).to_le_bytes(),
                8,
            )?;
            self.put(
                &ascii(digits8((rest % 100_000_000) as u32)).to_le_bytes(),
                8,
            )
        }
    }

    /// [`Blocks::u64`] of a number close to the last one appended with
    /// `last` (a timestamp): the digits above its last three are those of
    /// the last one more often than not, and are then copied, the last
    /// three taken from a table, with no digits made.
    #[inline(always)]
    pub fn u64_near(&mut self, n: u64, last: &mut HighDigits) -> Option<()> {
        if n < 1000 {
            return self.u64(n);
        }
        let high = n / 1000;
        if last.high != high {
            last.set(high);
        }
        self.put(&last.digits, last.len)?;
        self.put(&THREE_DIGITS[(n - high * 1000) as usize], 3)
    }

    /// [`Blocks::u64_near`] followed by the first `tail_len` bytes of
    /// `tail` (a timestamp's fraction), appended with its last three
    /// digits as one block.
    #[inline(always)]
    pub fn u64_near_then(
        &mut self,
        n: u64,
        last: &mut HighDigits,
        tail: [u8; 4],
        tail_len: usize,
    ) -> Option<()> {
        if n < 1000 {
            self.u64(n)?;
            return self.put(&tail, tail_len);
        }
        let high = n / 1000;
        if last.high != high {
            last.set(high);
        }
        self.put(&last.digits, last.len)?;
        // The table's fourth byte is 0: the tail goes in its place.
        let low = u32::from_le_bytes(THREE_DIGITS[(n - high * 1000) as usize]);
        let block = u64::from(low) | (u64::from(u32::from_le_bytes(tail)) << 24);
        self.put(&block.to_le_bytes(), 3 + tail_len)
    }

    /// Appends `x` as [`put_f64`] writes it (`None` where that goes
    /// through `Debug`, as for a line that does not fit).
    #[inline]
    pub fn f64(&mut self, x: f64) -> Option<()> {
        if let Some(halves) = Halves::of(x) {
            return self.halves(halves);
        }
        let mut buffer = zmij::Buffer::new();
        self.bytes(f64_short(&mut buffer, x)?)
    }

    /// Appends a whole or half number as `Debug` and `zmij` write it.
    #[inline(always)]
    pub fn halves(&mut self, x: Halves) -> Option<()> {
        self.put(b"-", usize::from(x.negative))?;
        self.u64(x.whole)?;
        self.text(if x.half { b".5" } else { b".0" })
    }

    /// Appends `text`, of any length (a copy of a variable size).
    #[inline]
    pub fn bytes(&mut self, text: &[u8]) -> Option<()> {
        self.buf
            .get_mut(self.len..self.len + text.len())?
            .copy_from_slice(text);
        self.len += text.len();
        Some(())
    }

    /// Appends `n` as [`put_hex`] writes it (`0x`, lowercase digits, no
    /// leading zeros), as one block.
    #[inline(always)]
    pub fn hex(&mut self, n: u64) -> Option<()> {
        if n < 16 {
            // One digit (a counter's or a flow's usual id): no lanes.
            return self.put(&[b'0', b'x', HEX_DIGITS[n as usize], 0], 3);
        }
        self.hex_digits(n)
    }

    /// [`Blocks::hex`] of two digits or more.
    #[inline(never)]
    fn hex_digits(&mut self, n: u64) -> Option<()> {
        let digits = (64 - n.leading_zeros() as usize).div_ceil(4).max(1);
        // The digits from the most significant one.
        let top = n << (64 - 4 * digits);
        let mut block = [0; 18];
        block[..2].copy_from_slice(b"0x");
        block[2..10].copy_from_slice(&hex8((top >> 32) as u32).to_le_bytes());
        block[10..].copy_from_slice(&hex8(top as u32).to_le_bytes());
        self.put(&block, 2 + digits)
    }
}

/// The digits above the last three of the last number appended with
/// [`Blocks::u64_near`].
#[derive(Default)]
pub struct HighDigits {
    /// The number divided by 1000 (0 for none yet: a number below 1000
    /// does not use it).
    high: u64,
    /// Its digits (`len` of them), the most significant first.
    digits: [u8; 24],
    len: usize,
}

impl HighDigits {
    /// Keeps the digits of `high`.
    #[inline(never)]
    fn set(&mut self, high: u64) {
        let mut buffer = itoa::Buffer::new();
        let text = buffer.format(high).as_bytes();
        self.digits[..text.len()].copy_from_slice(text);
        self.len = text.len();
        self.high = high;
    }
}

/// The three digits of each number below 1000, leading zeros kept (a
/// fourth byte for a block of four).
static THREE_DIGITS: [[u8; 4]; 1000] = three_digits();

const fn three_digits() -> [[u8; 4]; 1000] {
    let mut table = [[0; 4]; 1000];
    let mut n = 0;
    while n < 1000 {
        table[n] = [
            b'0' + (n / 100) as u8,
            b'0' + (n / 10 % 10) as u8,
            b'0' + (n % 10) as u8,
            0,
        ];
        n += 1;
    }
    table
}

/// The digits of `n` (below 10^8) without leading zeros ("0" for 0), in
/// the low bytes of a word, and their number, which does not wait for
/// the digits ([`digit_count`]).
#[inline(always)]
fn short(n: u32) -> (u64, usize) {
    if n < 10 {
        // One digit (a count, an index, a flag): no lanes to split.
        return (u64::from(b'0') + u64::from(n), 1);
    }
    let len = digit_count(n);
    if n < 10_000 {
        return (ascii(digits4(n)) >> (8 * (4 - len)), len);
    }
    (ascii(digits8(n)) >> (8 * (8 - len)), len)
}

/// How many digits `n` (below 10^8) has, 1 for 0: a few comparisons.
#[inline(always)]
fn digit_count(n: u32) -> usize {
    if n < 10_000 {
        if n < 100 {
            1 + usize::from(n >= 10)
        } else {
            3 + usize::from(n >= 1_000)
        }
    } else if n < 1_000_000 {
        5 + usize::from(n >= 100_000)
    } else {
        7 + usize::from(n >= 10_000_000)
    }
}

/// Appends `n` in decimal, as `Display` writes it: the digits made eight
/// at a time in a word ([`digits8`]) and appended as a block of 8 or 16
/// bytes cut back to their number, never a copy of a variable size.
#[inline]
pub fn put_u64(out: &mut Vec<u8>, n: u64) {
    let start = out.len();
    if n < 100_000_000 {
        let (word, len) = short(n as u32);
        out.extend_from_slice(&word.to_le_bytes());
        out.truncate(start + len);
    } else if n < 10_000_000_000_000_000 {
        let (high, len) = short((n / 100_000_000) as u32);
        let low = ascii(digits8((n % 100_000_000) as u32));
        out.extend_from_slice(&joined(high, len, low).to_le_bytes());
        out.truncate(start + len + 8);
    } else {
        put_u64_long(out, n);
    }
}

/// [`put_u64`] of 17 to 20 digits: up to 4, then 16.
#[cold]
fn put_u64_long(out: &mut Vec<u8>, n: u64) {
    let start = out.len();
    let (top, len) = short((n / 10_000_000_000_000_000) as u32);
    let rest = n % 10_000_000_000_000_000;
    let high = ascii(digits8((rest / 100_000_000) as u32));
    let low = ascii(digits8((rest % 100_000_000) as u32));
    out.extend_from_slice(&(top as u32).to_le_bytes());
    out.truncate(start + len);
    out.extend_from_slice(&(u128::from(high) | (u128::from(low) << 64)).to_le_bytes());
}

/// Appends `n` in decimal, as `Display` writes it.
#[inline(always)]
pub fn put_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    put_u64(out, n.unsigned_abs());
}

/// Appends `x` as `{x:?}` writes it: the shortest digits that read back
/// as `x`, in decimal notation with at least one fractional digit from
/// 1e-4 to 1e16 (exclusive), in exponent notation outside. `zmij` finds
/// the shortest digits several times faster than the formatting
/// machinery and writes the same decimal notation in that range; its
/// text is taken as it is when it has at most 15 significant digits, where
/// the shortest digits are one number (15-digit numbers are further apart
/// than a double's rounding interval is wide), so both write the same.
/// Longer ones (where a tie may be broken otherwise: `zmij` rounds
/// 2201368721681872.25 to even, `Debug` up), zero, exponents, NaN and
/// infinities go through `Debug`.
#[inline]
pub fn put_f64(out: &mut Vec<u8>, x: f64) {
    if let Some(halves) = Halves::of(x) {
        return halves.put(out);
    }
    let mut buffer = zmij::Buffer::new();
    match f64_short(&mut buffer, x) {
        Some(text) => out.extend_from_slice(text),
        None => put_f64_debug(out, x),
    }
}

/// A float that is a whole or half number below 2^41 (a counter's usual
/// value), which `Debug` and `zmij` both write as its integer part and
/// `.0` or `.5`, with no search for its shortest digits: its rounding
/// interval (a double's spacing there is at most 2^-12) holds no other
/// number of as few fractional digits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Halves {
    negative: bool,
    /// The integer part of the magnitude.
    whole: u64,
    /// Whether the magnitude has `.5` after it.
    half: bool,
}

impl Halves {
    /// `x` as a whole or half number, if it is one below 2^41 (not -0.0,
    /// which is written with its sign).
    #[inline(always)]
    pub fn of(x: f64) -> Option<Self> {
        // Exact: a doubling only changes the exponent.
        let twice = x * 2.0;
        if twice.is_nan() || twice.abs() >= (1u64 << 42) as f64 {
            return None;
        }
        let n = twice as i64;
        if n as f64 != twice || (n == 0 && x.is_sign_negative()) {
            return None;
        }
        let magnitude = n.unsigned_abs();
        Some(Halves {
            negative: n < 0,
            whole: magnitude >> 1,
            half: magnitude & 1 == 1,
        })
    }

    /// Appends the number as `Debug` and `zmij` write it.
    #[inline(always)]
    pub fn put(self, out: &mut Vec<u8>) {
        if self.negative {
            out.push(b'-');
        }
        put_u64(out, self.whole);
        out.extend_from_slice(if self.half { b".5" } else { b".0" });
    }
}

/// The text [`put_f64`] writes for `x` if `zmij` writes it (in
/// `buffer`); `None` where `Debug` does.
#[inline]
fn f64_short(buffer: &mut zmij::Buffer, x: f64) -> Option<&[u8]> {
    if !(1e-4..1e16).contains(&x.abs()) {
        return None;
    }
    let text = buffer.format_finite(x).as_bytes();
    (short_decimal(text)? <= 15).then_some(text)
}

/// The significant digits of a number in decimal notation (a sign,
/// digits, one `.`), leading zeros left out and trailing ones counted (at
/// least the shortest digits' count); `None` if the text is not in that
/// notation (no `.`, or an exponent). One pass: three scans of the text
/// were most of the time of a float.
#[inline]
fn short_decimal(text: &[u8]) -> Option<usize> {
    let mut dot = false;
    let mut digits = 0;
    for &b in text {
        match b {
            b'.' => dot = true,
            // A zero before any other digit is a leading one.
            b'0' if digits == 0 => {}
            b'0'..=b'9' => digits += 1,
            b'-' => {}
            _ => return None,
        }
    }
    dot.then_some(digits)
}

/// [`put_f64`] through `Debug`.
#[cold]
fn put_f64_debug(out: &mut Vec<u8>, x: f64) {
    use std::io::Write as _;
    let _ = write!(out, "{x:?}");
}

/// Appends `n` as `{n:#x}` writes it (`0x`, lowercase digits, no leading
/// zeros).
#[inline]
pub fn put_hex(out: &mut Vec<u8>, n: u64) {
    let digits = (64 - n.leading_zeros() as usize).div_ceil(4).max(1);
    out.extend_from_slice(b"0x");
    for i in (0..digits).rev() {
        out.push(HEX_DIGITS[((n >> (4 * i)) & 0xf) as usize]);
    }
}

/// Lowercase hexadecimal digits.
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The eight decimal digits of `n` (below 10^8) as the values 0 to 9 in
/// the bytes of a word, the most significant first in memory (little
/// endian): split in halves, quarters and digits in the lanes of one
/// word, each division by a multiplication and a shift that is exact for
/// the lane's range (x / 100 = x * 10486 >> 20 for x < 10^4, x / 10 =
/// x * 103 >> 10 for x < 100).
#[inline(always)]
fn digits8(n: u32) -> u64 {
    let n = u64::from(n);
    let halves = (n / 10_000) | ((n % 10_000) << 32);
    let hundreds = ((halves * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let quarters = hundreds | ((halves - hundreds * 100) << 16);
    let tens = ((quarters * 103) >> 10) & 0x000f_000f_000f_000f;
    tens | ((quarters - tens * 10) << 8)
}

/// [`digits8`] of `n` below 10^4: its four digits in the low bytes.
#[inline(always)]
fn digits4(n: u32) -> u64 {
    let n = u64::from(n);
    let hundreds = (n * 10_486) >> 20;
    let quarters = hundreds | ((n - hundreds * 100) << 16);
    let tens = ((quarters * 103) >> 10) & 0x000f_000f;
    tens | ((quarters - tens * 10) << 8)
}

/// The eight hexadecimal digits of `n` in lowercase ASCII in the bytes of
/// a word, the most significant first in memory (little endian): each
/// nibble spread to a byte of its own, and the letters told apart from
/// the digits in every lane at once (a lane of 10 or more carries into
/// its fifth bit once 6 is added), with no table and no loop.
#[inline(always)]
fn hex8(n: u32) -> u64 {
    let mut x = u64::from(n);
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    // Byte i holds nibble i, the least significant first: reversed.
    let x = x.swap_bytes();
    let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
    x + 0x3030_3030_3030_3030 + letters * u64::from(b'a' - b'0' - 10)
}

/// Digit values (0 to 9 per byte) as ASCII.
#[inline(always)]
fn ascii(digits: u64) -> u64 {
    digits + 0x3030_3030_3030_3030
}

/// The first `len` bytes of `high` followed by the eight of `low`.
#[inline(always)]
fn joined(high: u64, len: usize, low: u64) -> u128 {
    (u128::from(high) & ((1u128 << (len * 8)) - 1)) | (u128::from(low) << (len * 8))
}

#[cfg(test)]
mod tests;
