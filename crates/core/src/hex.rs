//! Bytes as lowercase hexadecimal, for digests that become keys and
//! secrets kept as text — and back.

/// `bytes` as lowercase hex, two digits a byte.
///
/// One `format!("{b:02x}")` a byte cost an allocation each: a keyed call's
/// request digest took 32 of them.
pub fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// The bytes `hex` spells (two hexadecimal digits a byte, either case);
/// `None` when it is not hex, or has an odd number of digits.
pub fn from_hex(hex: &str) -> Option<Vec<u8>> {
    let digit = |d: u8| {
        char::from(d)
            .to_digit(16)
            .and_then(|v| u8::try_from(v).ok())
    };
    let digits = hex.as_bytes();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{from_hex, lower_hex};

    #[test]
    fn two_lowercase_digits_a_byte() {
        assert_eq!(lower_hex(&[]), "");
        assert_eq!(lower_hex(&[0x00, 0x0f, 0xa0, 0xff, 0x5c]), "000fa0ff5c");
    }

    #[test]
    fn what_is_not_hex_reads_as_nothing() {
        assert_eq!(from_hex("0Fa0"), Some(vec![0x0f, 0xa0]));
        for not_hex in ["0", "0g", "é0", "+f", " 0f"] {
            assert_eq!(from_hex(not_hex), None, "{not_hex:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn is_what_format_writes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let formatted: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            proptest::prop_assert_eq!(lower_hex(&bytes), formatted);
        }

        #[test]
        fn reads_back_what_it_wrote(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            proptest::prop_assert_eq!(from_hex(&lower_hex(&bytes)), Some(bytes));
        }
    }
}
