//! Reserved bits: clearing them leaves nothing reported and changes
//! nothing the decoder reads.

use fxt_format::decode::SliceReader;
use fxt_format::encode::{encode_to_vec, Initialization, MagicNumber};
use fxt_format::reserved::{clear_reserved_bits, reserved_bits, reserved_bits_in, ReservedBits};
use proptest::prelude::*;

#[test]
fn a_set_reserved_bit_is_found_with_its_word() {
    let mut words = encode_to_vec(&Initialization {
        ticks_per_second: 5,
    })
    .unwrap();
    assert!(reserved_bits(&words).is_empty());
    words[0] |= 1 << 40;
    assert_eq!(
        reserved_bits(&words),
        [ReservedBits {
            word: 0,
            mask: 1 << 40,
            what: "initialization record header"
        }]
    );
    // An event (type 4, size 3, 1 argument, thread 1) whose uint64 argument header has
    // bit 50 set.
    let words = [0x0000_0000_0110_0034u64, 7, (1 << 50) | 0x24];
    assert_eq!(reserved_bits(&words)[0].word, 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any record, after a magic number record (so that a metadata record
    /// is not read as the file's magic): after clearing, nothing is
    /// reported, and it decodes to the same record, or to an error of the
    /// same kind (an error carries the header word, whose reserved bits
    /// the clearing changed).
    #[test]
    fn clearing_changes_nothing_decoded(mut words in prop::collection::vec(any::<u64>(), 1..12), record_type in 0u64..16) {
        let len = words.len() as u64;
        words[0] = (words[0] & !0xffff) | (len << 4) | record_type;
        let decode = |w: &[u64]| {
            let mut bytes = encode_to_vec(&MagicNumber).unwrap();
            bytes.extend_from_slice(w);
            let bytes: Vec<u8> = bytes.iter().flat_map(|w| w.to_le_bytes()).collect();
            SliceReader::new(&bytes)
                .map(|r| r.map_err(|e| std::mem::discriminant(&e)))
                .collect::<Vec<_>>()
        };
        let before = decode(&words);
        clear_reserved_bits(&mut words);
        prop_assert!(reserved_bits(&words).is_empty());
        prop_assert_eq!(before, decode(&words));
    }

    /// Reading a record's words from its bytes finds what reading them
    /// from the words finds.
    #[test]
    fn bytes_and_words_find_the_same(mut words in prop::collection::vec(any::<u64>(), 1..12), record_type in 0u64..16) {
        let len = words.len() as u64;
        words[0] = (words[0] & !0xffff) | (len << 4) | record_type;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        prop_assert_eq!(reserved_bits_in(&bytes), reserved_bits(&words));
    }
}
