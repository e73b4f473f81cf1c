//! A raw stack: the registers of a thread at one moment and a copy of its
//! stack from the stack pointer up, for a reader to unwind later with the
//! binaries' unwind tables (as `perf record --call-graph dwarf` does).
//!
//! The program that records it compiles no unwinder; the copy is bounded
//! by its writer. This payload is a building block: `fxt.sample`
//! ([`super::sample`], walk [`super::Walk::RawStack`]) holds one after its
//! fixed words, and other record kinds may append one the same way.
//! Words:
//!
//! | word | content |
//! |---|---|
//! | 0 | bits `[0 .. 7]` the [`Arch`]; `[8 .. 15]` register count R (the arch's); `[16]` zero runs (below); `[17 .. 31]` 0; `[32 .. 63]` stack word count S (at most [`MAX_STACK_WORDS`]) |
//! | 1 | address of the first copied stack word (8-aligned; the copy runs up from there) |
//! | 2 .. 2+R | the registers, in the arch's order (x86-64: pc, sp, bp; AArch64: pc, sp, fp, lr) |
//! | 2+R .. 2+R+S | the stack's words, lowest address first, as read from memory (little-endian) |
//!
//! The stack words are what the thread's stack held: return addresses,
//! saved registers, and whatever the program kept in its locals.
//!
//! With bit 16 set the S stack words are written in *zero runs* instead
//! (a stack holds long runs of zeros: unused locals, a thread's
//! thread-locals above its frames): a sequence of runs, each a run word —
//! bits `[0 .. 31]` Z, `[32 .. 63]` L, Z + L at least 1 — then L words:
//! Z zero words followed by those L words. The runs cover the S words
//! exactly; the record's size says where they end. A reader gets the same
//! S words either way.

use super::payload::PayloadReader;
use super::SamplesError;
use crate::encode::{EncodeError, WordWriter};

pub use super::MAX_STACK_WORDS;

/// Words of a raw stack before its registers.
const HEAD_WORDS: usize = 2;

/// The head bit of a stack written in zero runs.
const ZERO_RUNS: u64 = 1 << 16;

/// A run of a stack written in zero runs (see the module docs): `zeros`
/// zero words, then `literals` words as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Run {
    /// Zero words first.
    pub zeros: u32,
    /// Then words written as they are.
    pub literals: u32,
}

impl Run {
    /// The run's word.
    pub const fn word(self) -> u64 {
        self.zeros as u64 | ((self.literals as u64) << 32)
    }
}

/// Most registers an [`Arch`] has.
pub const MAX_REGISTERS: usize = 4;

/// Which machine the registers and stack come from, and so which registers
/// are recorded, in which order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// x86-64: pc (`rip`), sp (`rsp`), bp (`rbp`).
    X86_64,
    /// AArch64: pc, sp, fp (`x29`), lr (`x30`).
    Aarch64,
}

impl Arch {
    /// The 8-bit value of the field.
    pub const fn value(self) -> u8 {
        match self {
            Self::X86_64 => 1,
            Self::Aarch64 => 2,
        }
    }

    /// The arch for a field value.
    pub const fn from_value(value: u8) -> Option<Self> {
        match value {
            1 => Some(Self::X86_64),
            2 => Some(Self::Aarch64),
            _ => None,
        }
    }

    /// How many registers it records.
    pub const fn register_count(self) -> usize {
        match self {
            Self::X86_64 => 3,
            Self::Aarch64 => 4,
        }
    }
}

/// A raw stack, borrowed for encoding: allocation-free and panic-free (a
/// signal handler writes one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawStack<'a> {
    /// The machine, and so the registers' meaning.
    pub arch: Arch,
    /// The registers ([`Arch::register_count`] of them, in its order).
    pub registers: &'a [u64],
    /// Address of `stack[0]`.
    pub stack_address: u64,
    /// The stack's words, lowest address first (at most
    /// [`MAX_STACK_WORDS`]).
    pub stack: &'a [u64],
}

impl RawStack<'_> {
    /// Words of a raw stack of `arch` with `stack_words` stack words.
    pub const fn word_len_for(arch: Arch, stack_words: usize) -> usize {
        HEAD_WORDS + arch.register_count() + stack_words
    }

    /// Words this raw stack encodes to; an error if the register count is
    /// not its arch's or the stack is longer than [`MAX_STACK_WORDS`].
    pub fn word_len(&self) -> Result<usize, EncodeError> {
        if self.registers.len() != self.arch.register_count() {
            return Err(EncodeError::FieldOverflow("raw stack register count"));
        }
        if self.stack.len() > MAX_STACK_WORDS {
            return Err(EncodeError::FieldOverflow("raw stack word count"));
        }
        Ok(Self::word_len_for(self.arch, self.stack.len()))
    }

    /// Writes the raw stack into `out` (at least [`Self::word_len`] words);
    /// returns the words written.
    pub fn encode_words(&self, out: &mut [u64]) -> Result<usize, EncodeError> {
        let words = self.word_len()?;
        let mut w = WordWriter::new(out, words)?;
        self.write(&mut w)?;
        Ok(words)
    }

    /// Appends the raw stack to `w` (inside a record being encoded).
    pub fn write(&self, w: &mut WordWriter<'_>) -> Result<(), EncodeError> {
        self.write_head(w, self.stack.len(), false)?;
        for &s in self.stack {
            w.word(s)?;
        }
        Ok(())
    }

    /// Appends the raw stack's words before its stack words to `w`, for a
    /// stack of `stack_words` words that the caller stores right after
    /// them, as they are or in zero runs (`runs`; see the module docs): a
    /// writer that copies the stack straight to where the record goes.
    /// `self.stack` is not written.
    pub fn write_head(
        &self,
        w: &mut WordWriter<'_>,
        stack_words: usize,
        runs: bool,
    ) -> Result<(), EncodeError> {
        if self.registers.len() != self.arch.register_count() {
            return Err(EncodeError::FieldOverflow("raw stack register count"));
        }
        if stack_words > MAX_STACK_WORDS {
            return Err(EncodeError::FieldOverflow("raw stack word count"));
        }
        w.word(
            u64::from(self.arch.value())
                | ((self.registers.len() as u64) << 8)
                | if runs { ZERO_RUNS } else { 0 }
                | ((stack_words as u64) << 32),
        )?;
        w.word(self.stack_address)?;
        for &r in self.registers {
            w.word(r)?;
        }
        Ok(())
    }
}

/// A decoded raw stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RawStackRecord {
    /// The machine.
    pub arch: Arch,
    /// The registers, in the arch's order.
    pub registers: Vec<u64>,
    /// Address of `stack[0]`.
    pub stack_address: u64,
    /// The stack's words, lowest address first.
    pub stack: Vec<u64>,
}

impl RawStackRecord {
    /// Decodes a raw stack at the start of `payload`; returns it and the
    /// bytes it took (what follows belongs to the enclosing record).
    pub fn decode(payload: &[u8]) -> Result<(Self, usize), SamplesError> {
        let mut r = PayloadReader::new(payload);
        let raw = Self::read(&mut r)?;
        Ok((raw, r.position()))
    }

    pub(crate) fn read(r: &mut PayloadReader<'_>) -> Result<Self, SamplesError> {
        let offset = r.position();
        let head = r.word("raw stack head")?;
        if (head >> 16) & 0xffff & !(ZERO_RUNS >> 16) != 0 {
            return Err(SamplesError::ReservedBits {
                field: "raw stack head",
                offset,
                word: head,
            });
        }
        let value = head as u8;
        let arch = Arch::from_value(value).ok_or(SamplesError::UnknownArch(value))?;
        let count = ((head >> 8) & 0xff) as usize;
        if count != arch.register_count() {
            return Err(SamplesError::RegisterCount {
                arch: arch.value(),
                count,
            });
        }
        let words = (head >> 32) as usize;
        if words > MAX_STACK_WORDS {
            return Err(SamplesError::StackTooLarge { words });
        }
        let stack_address = r.word("raw stack address")?;
        let mut registers = Vec::with_capacity(count);
        for _ in 0..count {
            registers.push(r.word("raw stack register")?);
        }
        let stack = if head & ZERO_RUNS != 0 {
            read_runs(r, words)?
        } else {
            // Checked before allocating: the count is the payload's claim.
            let needed = words * 8;
            if r.remaining() < needed {
                return Err(SamplesError::Truncated {
                    field: "raw stack words",
                    offset: r.position(),
                    needed,
                    available: r.remaining(),
                });
            }
            let mut stack = Vec::with_capacity(words);
            for _ in 0..words {
                stack.push(r.word("raw stack words")?);
            }
            stack
        };
        Ok(Self {
            arch,
            registers,
            stack_address,
            stack,
        })
    }

    /// Borrowed, to encode again.
    pub fn as_raw_stack(&self) -> RawStack<'_> {
        RawStack {
            arch: self.arch,
            registers: &self.registers,
            stack_address: self.stack_address,
            stack: &self.stack,
        }
    }

    /// The interrupted instruction pointer (the first register of every
    /// arch).
    pub fn pc(&self) -> Option<u64> {
        self.registers.first().copied()
    }

    /// The stack word at `address`, if the copy holds it (8-aligned).
    pub fn word_at(&self, address: u64) -> Option<u64> {
        let offset = address.checked_sub(self.stack_address)?;
        if offset % 8 != 0 {
            return None;
        }
        self.stack.get(usize::try_from(offset / 8).ok()?).copied()
    }
}

/// The `words` stack words of a raw stack in zero runs (at most
/// [`MAX_STACK_WORDS`]: the allocation is bounded whatever the runs say).
fn read_runs(r: &mut PayloadReader<'_>, words: usize) -> Result<Vec<u64>, SamplesError> {
    let mut stack = Vec::with_capacity(words);
    while stack.len() < words {
        let offset = r.position();
        let word = r.word("raw stack run")?;
        let zeros = (word & 0xffff_ffff) as usize;
        let literals = (word >> 32) as usize;
        if zeros + literals == 0 || zeros + literals > words - stack.len() {
            return Err(SamplesError::BadRun { offset, word });
        }
        stack.resize(stack.len() + zeros, 0);
        for _ in 0..literals {
            stack.push(r.word("raw stack words")?);
        }
    }
    Ok(stack)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words of a raw stack, field by field against the layout table.
    #[test]
    fn raw_stack_words_follow_the_layout() {
        let regs = [0x5555_0000_1234, 0x7ffc_0000_1000, 0x7ffc_0000_1040];
        let stack = [11, 22, 33];
        let raw = RawStack {
            arch: Arch::X86_64,
            registers: &regs,
            stack_address: 0x7ffc_0000_0f80,
            stack: &stack,
        };
        let mut out = [0u64; 8];
        assert_eq!(raw.encode_words(&mut out), Ok(8));
        assert_eq!(
            out,
            [
                1 | (3 << 8) | (3 << 32),
                0x7ffc_0000_0f80,
                0x5555_0000_1234,
                0x7ffc_0000_1000,
                0x7ffc_0000_1040,
                11,
                22,
                33
            ]
        );
        let bytes: Vec<u8> = out.iter().flat_map(|w| w.to_le_bytes()).collect();
        let (back, used) = RawStackRecord::decode(&bytes).unwrap();
        assert_eq!(used, 64);
        assert_eq!(back.as_raw_stack(), raw);
        assert_eq!(back.pc(), Some(0x5555_0000_1234));
        assert_eq!(back.word_at(0x7ffc_0000_0f88), Some(22));
        assert_eq!(back.word_at(0x7ffc_0000_0f8c), None, "unaligned");
        assert_eq!(back.word_at(0x7ffc_0000_0f98), None, "past the copy");
        assert_eq!(back.word_at(0x7ffc_0000_0f78), None, "below the copy");
    }

    /// Bad raw stacks: a typed error, never a panic or an allocation of
    /// the claimed size.
    #[test]
    fn malformed_raw_stacks_are_typed_errors() {
        let regs = [1, 2];
        let raw = RawStack {
            arch: Arch::X86_64,
            registers: &regs,
            stack_address: 0,
            stack: &[],
        };
        assert!(raw.encode_words(&mut [0; 8]).is_err(), "two registers");
        let word = |w: u64| w.to_le_bytes().to_vec();
        let decode = |bytes: &[u8]| RawStackRecord::decode(bytes).map(|_| ());
        assert_eq!(
            decode(&word(9 | (3 << 8))),
            Err(SamplesError::UnknownArch(9))
        );
        assert_eq!(
            decode(&word(1 | (4 << 8))),
            Err(SamplesError::RegisterCount {
                arch: Arch::X86_64.value(),
                count: 4
            })
        );
        assert!(matches!(
            decode(&word(1 | (3 << 8) | (1 << 20))),
            Err(SamplesError::ReservedBits { .. })
        ));
        assert_eq!(
            decode(&word(1 | (3 << 8) | (4001 << 32))),
            Err(SamplesError::StackTooLarge { words: 4001 })
        );
        let mut claims = word(1 | (3 << 8) | (4000 << 32));
        for w in [0u64, 1, 2, 3, 4] {
            claims.extend(word(w));
        }
        assert!(matches!(
            decode(&claims),
            Err(SamplesError::Truncated {
                field: "raw stack words",
                ..
            })
        ));
    }
}
