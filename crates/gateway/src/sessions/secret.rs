//! The console's secrets: random tokens from the operating system's source
//! (session ids, CSRF tokens), compared in constant time.

use std::fmt;

use subtle::ConstantTimeEq;

/// Random bytes in a token: 256 bits, beyond guessing.
const TOKEN_BYTES: usize = 32;

/// The operating system's random source failed: no token could be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoRandomness;

impl fmt::Display for NoRandomness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the operating system's random source failed")
    }
}

/// A fresh random token: 32 bytes, as 64 lowercase hex digits (safe in a
/// cookie, a form field and a URL-free page alike).
pub(crate) fn random_token() -> Result<String, NoRandomness> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(|_| NoRandomness)?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    bytes
        .iter()
        .flat_map(|b| [DIGITS[usize::from(b >> 4)], DIGITS[usize::from(b & 0xf)]])
        .map(char::from)
        .collect()
}

/// Whether `given` is `expected`, in time that depends on their lengths only.
pub(crate) fn same(expected: &str, given: &str) -> bool {
    expected.len() == given.len() && bool::from(expected.as_bytes().ct_eq(given.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_64_hex_digits_and_never_repeat() {
        let a = random_token().unwrap();
        let b = random_token().unwrap();
        assert_eq!(a.len(), 64);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }

    #[test]
    fn only_the_same_token_is_the_same() {
        let token = random_token().unwrap();
        assert!(same(&token, &token.clone()));
        assert!(!same(&token, &token[..63]));
        assert!(!same(&token, ""));
        assert!(!same(&token, &format!("{token}0")));
        let mut flipped = token.clone().into_bytes();
        flipped[10] = if flipped[10] == b'a' { b'b' } else { b'a' };
        assert!(!same(&token, &String::from_utf8(flipped).unwrap()));
    }
}
