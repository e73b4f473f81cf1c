//! Appending the short pieces of a printed line kept for reuse (a quoted
//! name kept for its string index) as fixed-size blocks: a copy of a known
//! size is a few moves, where a copy of a variable size is a call to
//! `memcpy`, and `fxt dump` and `fxt json` append several such pieces per
//! event.
//!
//! A block is appended whole and the line cut back to the piece's end, so
//! every byte is still written by safe slice copies.

/// Bytes of a [`Piece`] appended as one block.
const BLOCK: usize = 48;

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
    #[cfg(test)]
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

/// Appends `n` in decimal, as `Display` writes it.
#[inline]
pub fn put_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_display_prints_them() {
        let mut values = vec![0, 1, 9, 10, 11, 99, 100, 101, u64::MAX, u64::MAX - 1];
        for power in 1..20 {
            let p = 10u64.pow(power);
            values.extend([p - 1, p, p + 1, p.saturating_mul(3).saturating_add(7)]);
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for n in values {
            let mut out = b"x=".to_vec();
            put_u64(&mut out, n);
            assert_eq!(out, format!("x={n}").into_bytes());
        }
    }

    #[test]
    fn pieces_append_their_bytes_whatever_their_length() {
        for len in 0..3 * BLOCK {
            let bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let mut piece = Piece::default();
            piece.set(b"something longer than the block, to be replaced by what follows");
            piece.set(&bytes);
            assert_eq!(piece.bytes(), bytes);
            let mut out = b"<".to_vec();
            piece.put(&mut out);
            out.push(b'>');
            assert_eq!(out, [b"<", &bytes[..], b">"].concat());
        }
    }
}
