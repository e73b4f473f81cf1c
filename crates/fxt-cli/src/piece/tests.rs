use super::*;
use fxt_format::decode::IntArg;

/// Every number of each digit count's edges and 10,000 others.
fn numbers() -> Vec<u64> {
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
    values
}

#[test]
fn lines_in_blocks_print_numbers_as_display_prints_them() {
    let mut buf = [0xff; LINE];
    let mut near = HighDigits::default();
    let mut values = numbers();
    // Runs that share their digits above the last three.
    values.extend((0..3000).map(|i| 4_000_000_000 + i * 3));
    for n in values {
        let mut line = Blocks::new(&mut buf);
        line.text(b"x=").unwrap();
        line.u64(n).unwrap();
        line.text(b";").unwrap();
        for value in [
            IntArg::U64(n),
            IntArg::I64(n as i64),
            IntArg::U32(n as u32),
            IntArg::I32(n as i32),
        ] {
            let parts = IntParts::from(value);
            assert_eq!(parts.uint64, matches!(value, IntArg::U64(_)));
            line.int_parts_near(parts, &mut near).unwrap();
            line.text(b";").unwrap();
        }
        let len = line.len();
        let ints = format!("{n};{};{};{};", n as i64, n as u32, n as i32);
        let expected = format!("x={n};{ints}");
        assert_eq!(&buf[..len], expected.as_bytes());
    }
}

#[test]
fn numbers_near_the_last_print_as_display_prints_them() {
    let mut buf = [0; LINE];
    let mut last = HighDigits::default();
    let mut values = numbers();
    // Runs of numbers with the same digits above the last three (or
    // eight), across 1000 and the changes of their digit count, and
    // numbers that differ only above their last three.
    values.extend((0..300).map(|i| 81_489_443_543_892 + i * 7_919_111));
    values.extend((0..3000).map(|i| 81_489_443_543_892 + i * 7));
    values.extend((0..2500).map(|i| 900 + i * 3));
    values.extend((0..2000).map(|i| 99_990 + i / 2 * 1000 + i % 2));
    values.extend([5_000, 5, 5_005, 1_000, 999, 1_000, 10_000_000, 10_000]);
    for n in values {
        let mut line = Blocks::new(&mut buf);
        line.u64_near(n, &mut last).unwrap();
        let len = line.len();
        assert_eq!(&buf[..len], n.to_string().as_bytes());
    }
}

#[test]
fn a_line_that_does_not_fit_its_blocks_is_refused() {
    let mut buf = [0; LINE];
    let mut line = Blocks::new(&mut buf);
    let mut written = 0;
    while line.u64(u64::MAX).is_some() {
        written += 20;
        assert_eq!(line.len(), written);
    }
    // The last block would have run past the buffer.
    assert!(written + 24 > LINE);
    // A piece longer than a block is appended whole, if it fits.
    let mut long = Piece::default();
    long.set(&[b'a'; BLOCK + 1]);
    let mut line = Blocks::new(&mut buf);
    line.text(b"<").unwrap();
    line.piece(&long).unwrap();
    line.text(b">").unwrap();
    let len = line.len();
    assert_eq!(buf[..len], [&b"<"[..], &[b'a'; BLOCK + 1], b">"].concat());
    let mut line = Blocks::new(&mut buf);
    long.set(&[b'a'; LINE]);
    line.text(b"<").unwrap();
    assert_eq!(line.piece(&long), None);
}

#[test]
fn numbers_print_as_display_prints_them() {
    for n in numbers() {
        let mut out = b"x=".to_vec();
        put_u64(&mut out, n);
        out.push(b';');
        assert_eq!(out, format!("x={n};").into_bytes());
        for i in [n as i64, (n as i64).wrapping_neg(), i64::MIN, i64::MAX] {
            let mut out = b"x=".to_vec();
            put_i64(&mut out, i);
            out.push(b';');
            assert_eq!(out, format!("x={i};").into_bytes());
        }
    }
}

#[test]
fn hex_prints_as_lower_hex_prints_it() {
    let mut buf = [0; LINE];
    let mut values = numbers();
    values.extend((0..64).map(|bit| 1u64 << bit));
    values.extend(0..=17);
    for n in values {
        let mut out = b"x=".to_vec();
        put_hex(&mut out, n);
        assert_eq!(out, format!("x={n:#x}").into_bytes());
        let mut line = Blocks::new(&mut buf);
        line.text(b"x=").unwrap();
        line.hex(n).unwrap();
        line.text(b";").unwrap();
        let len = line.len();
        assert_eq!(&buf[..len], format!("x={n:#x};").as_bytes());
    }
}

#[test]
fn floats_print_as_debug_prints_them() {
    let mut values = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        0.1,
        0.2,
        0.3,
        1e-4,
        9.999e-5,
        1e-5,
        1e15,
        1e16,
        9_999_999_999_999_998.0,
        1e16 - 2.0,
        123456789.125,
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        std::f64::consts::PI,
        5e-324,
        // A tie at 17 digits, which zmij breaks to even.
        f64::from_bits(0x431f_4888_62b3_b741),
        0.000123,
        -98765.4321,
    ];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..1_000_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Any bits; values around the decimal range's edges; short
        // decimals (counters' usual values).
        values.push(f64::from_bits(x));
        let exponent = (x % 48) as i32 - 12;
        values.push((x >> 11) as f64 * 2f64.powi(-53) * 10f64.powi(exponent));
        values.push((i as f64) / 8.0 - 1000.0);
        values.push((x % 100_000) as f64 / 100.0);
        // Integers and quarters around 2^51..2^53, where ties are.
        values.push(((x >> 12) | (1 << 51)) as f64 / 4.0);
    }
    let mut out = Vec::new();
    let mut buf = [0; LINE];
    let mut in_blocks = 0;
    for v in values {
        out.clear();
        put_f64(&mut out, v);
        assert_eq!(out, format!("{v:?}").into_bytes(), "{:#x}", v.to_bits());
        // In a line of blocks: the same text, or refused (for the
        // line to be written otherwise).
        let mut line = Blocks::new(&mut buf);
        line.text(b"x=").unwrap();
        if line.f64(v).is_some() {
            let len = line.len();
            assert_eq!(buf[..len], [b"x=", &out[..]].concat(), "{:#x}", v.to_bits());
            in_blocks += 1;
        }
    }
    // The usual values are not refused.
    assert!(in_blocks > 1_500_000, "{in_blocks}");
    let mut line = Blocks::new(&mut buf);
    assert_eq!(line.f64(0.5), Some(()));
    assert_eq!(&buf[..3], b"0.5");
}

#[test]
fn whole_and_half_numbers_print_as_debug_and_zmij_print_them() {
    let mut values = vec![0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, 1e12, 1e12 + 0.5];
    for bit in 0..=44 {
        let p = (1u64 << bit) as f64;
        values.extend([p, p - 0.5, p + 0.5, p - 1.0, p + 1.0, p + 0.25, p / 3.0]);
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = (x >> (x % 64)) as i64;
        values.extend([
            n as f64 / 2.0,
            -(n as f64) / 2.0,
            (n % 100_000) as f64 / 2.0,
        ]);
    }
    let mut halves = 0;
    let mut buf = [0; LINE];
    for v in values.into_iter().flat_map(|v| [v, -v]) {
        let debug = format!("{v:?}");
        let zmij = zmij::Buffer::new().format_finite(v).to_string();
        match Halves::of(v) {
            Some(h) => {
                halves += 1;
                assert!(v.abs() < (1u64 << 41) as f64 && v.fract().abs() % 0.5 == 0.0);
                let mut out = Vec::new();
                h.put(&mut out);
                assert_eq!(String::from_utf8(out).unwrap(), debug, "{v}");
                assert_eq!(debug, zmij, "{v}");
                let mut line = Blocks::new(&mut buf);
                line.halves(h).unwrap();
                let len = line.len();
                assert_eq!(&buf[..len], debug.as_bytes());
            }
            // Not a whole or half number below 2^41, or -0.0.
            None => assert!(
                v.abs() >= (1u64 << 41) as f64
                    || (v * 2.0).fract() != 0.0
                    || (v == 0.0 && v.is_sign_negative()),
                "{v}"
            ),
        }
        let mut out = Vec::new();
        put_f64(&mut out, v);
        assert_eq!(String::from_utf8(out).unwrap(), debug, "{v}");
    }
    assert!(halves > 500_000, "{halves}");
}

#[test]
fn short_decimals_count_their_significant_digits() {
    for (text, digits) in [
        (&b"0.5"[..], Some(1)),
        (b"-0.000123", Some(3)),
        (b"100.0", Some(4)),
        (b"1234567890123456.0", Some(17)),
        (b"0.30000000000000004", Some(17)),
        (b"1000", None),
        (b"1e20", None),
        (b"1.5e-7", None),
    ] {
        assert_eq!(
            short_decimal(text),
            digits,
            "{}",
            String::from_utf8_lossy(text)
        );
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
