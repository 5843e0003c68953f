//! Bytes as lowercase hexadecimal, for digests that become keys.

/// `bytes` as lowercase hex, two digits a byte.
///
/// One `format!("{b:02x}")` a byte cost an allocation each: a keyed call's
/// request digest took 32 of them.
pub(crate) fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::lower_hex;

    #[test]
    fn two_lowercase_digits_a_byte() {
        assert_eq!(lower_hex(&[]), "");
        assert_eq!(lower_hex(&[0x00, 0x0f, 0xa0, 0xff, 0x5c]), "000fa0ff5c");
    }

    proptest::proptest! {
        #[test]
        fn is_what_format_writes(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let formatted: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            proptest::prop_assert_eq!(lower_hex(&bytes), formatted);
        }
    }
}
