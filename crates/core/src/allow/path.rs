//! A target's path in one spelling: what the allowlist and the manifest's
//! entries are matched against, and what is sent — so the tool receives
//! exactly the path that was matched.
//!
//! ```
//! use recourse_core::allow::normalize_path;
//!
//! for variant in ["/api/pay", "//api/pay", "/api/pay/", "/api/%70ay", "/api/./x/../pay", "/api/%2e/pay"] {
//!     assert_eq!(normalize_path(variant), "/api/pay", "{variant}");
//! }
//! // A reserved character stays encoded, its hex in upper case.
//! assert_eq!(normalize_path("/files/a%2fb"), "/files/a%2Fb");
//! assert_eq!(normalize_path("/"), "/");
//! ```

use std::borrow::Cow;

/// `path` (an http(s) URL's path, as the URL parser serialises it) with
/// percent-encoded unreserved characters (`A–Z a–z 0–9 - . _ ~`) decoded,
/// other percent-encodings in upper case, a `%` that starts none encoded
/// (`%25`), repeated slashes made one, `.`
/// and `..` segments resolved (never above the root), and no trailing
/// slash (but for the root itself). Total: any text gives a path.
pub fn normalize_path(path: &str) -> Cow<'_, str> {
    if is_normal(path) {
        return Cow::Borrowed(path);
    }
    let decoded = decode_unreserved(path);
    let mut segments: Vec<&str> = Vec::new();
    for segment in decoded.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            other => segments.push(other),
        }
    }
    let mut out = String::with_capacity(decoded.len());
    for segment in &segments {
        out.push('/');
        out.push_str(segment);
    }
    if out.is_empty() {
        out.push('/');
    }
    Cow::Owned(out)
}

/// Whether `path` is normal already: the common case, checked without
/// allocating.
fn is_normal(path: &str) -> bool {
    if path == "/" {
        return true;
    }
    path.starts_with('/')
        && !path.ends_with('/')
        && !path.contains('%')
        && !path.contains("//")
        && path[1..]
            .split('/')
            .all(|segment| segment != "." && segment != "..")
}

/// `path` with `%XX` of an unreserved character decoded, and every other
/// `%XX` in upper case.
fn decode_unreserved(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            let byte = hi << 4 | lo;
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(byte));
            } else {
                out.push('%');
                out.push(char::from(bytes[i + 1].to_ascii_uppercase()));
                out.push(char::from(bytes[i + 2].to_ascii_uppercase()));
            }
            i += 3;
            continue;
        }
        if bytes[i] == b'%' {
            // A `%` that starts no escape is itself encoded, so that what
            // follows it can never be read as one later.
            out.push_str("%25");
            i += 1;
            continue;
        }
        // Copy up to the next `%` whole: `path` is UTF-8, and `%` is ASCII.
        let next = path[i..].find('%').map_or(path.len(), |at| i + at);
        out.push_str(&path[i..next]);
        i = next;
    }
    out
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_spelling_of_a_path_is_one() {
        let cases = [
            ("/a/b", "/a/b"),
            ("/a//b///c", "/a/b/c"),
            ("/a/b/", "/a/b"),
            ("/../../a", "/a"),
            ("/a/%2E%2E/b", "/b"),
            ("/%7Euser/%41", "/~user/A"),
            ("/a%20b", "/a%20b"),
            ("/a%e2%82%acb", "/a%E2%82%ACb"),
            ("/a%zz", "/a%25zz"),
            ("/a%2", "/a%252"),
            ("/%7Bkey%7D", "/%7Bkey%7D"),
            ("//", "/"),
            ("", "/"),
            ("/é/x", "/é/x"),
        ];
        for (path, normal) in cases {
            assert_eq!(normalize_path(path), normal, "{path}");
        }
    }

    proptest! {
        #[test]
        fn normalising_twice_changes_nothing(path in "(/|%2[eEfF]|%7[0eE]|%41|\\.|\\.\\.|a|é|%|~){0,24}") {
            let once = normalize_path(&path).into_owned();
            prop_assert_eq!(normalize_path(&once), once.as_str());
            prop_assert!(once.starts_with('/'));
        }
    }
}
