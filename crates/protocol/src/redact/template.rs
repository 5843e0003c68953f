//! Templates at rest: the placeholders kept, secrets in the text around them hidden.
//!
//! # Why a template is not redacted as text
//!
//! A journal keeps what a settler needs to settle a call later: a lookup
//! template (`http://tool/api/lookup?key={key}`) and a read-back's arguments
//! (`{"token": "{{payload.session}}"}`). Redacted as text, `key={key}` reads
//! as a credential in a query parameter and is stored `key=[REDACTED]`; the
//! placeholder is gone, and the call can never be looked up. A placeholder
//! is a name the settler fills in — never a secret — so it is kept, whatever
//! the parameter or field around it is called. The rest of the template is
//! redacted as any text is: a real `?api_key=sk-…` next to a placeholder is
//! still hidden (the settler is given credentials by its configuration).
//!
//! # How
//!
//! Each placeholder is swapped for a marker — its braces around private-use
//! characters, so the text on either side reads as it did — the text
//! redacted, and the markers swapped back. A value that is exactly a marker
//! is not a secret to the redactor (it holds nothing but the marker); a value
//! with a marker and more (`?token=abc{key}`) is hidden whole, marker and
//! all, since the literal part may be a credential. A template that already
//! holds the marker characters is redacted piece by piece instead.

use serde_json::Value;

use super::keys::is_secret_key;
use super::{REDACTED, redact};

/// Opens a marker standing for a placeholder (a private-use character).
const OPEN: char = '\u{E000}';
/// Closes a marker.
const CLOSE: char = '\u{E001}';
/// The longest `{{…}}` placeholder kept: a path into a payload is short.
const MAX_PLACEHOLDER: usize = 256;

/// `template` with the credentials in its literal text hidden ([`redact`])
/// and every placeholder kept as written: `{key}`, `{operation_id}` and
/// `{{root.path}}` references.
///
/// ```
/// use recourse_protocol::redact_template;
///
/// let lookup = "http://tool/api/lookup?key={key}";
/// assert_eq!(redact_template(lookup), lookup);
/// assert_eq!(
///     redact_template("http://tool/x/{operation_id}?api_key=sk-live-0123456789abcdef"),
///     "http://tool/x/{operation_id}?api_key=[REDACTED]"
/// );
/// ```
pub fn redact_template(template: &str) -> String {
    let pieces = pieces(template);
    if !pieces.iter().any(|p| matches!(p, Piece::Placeholder(_))) {
        return redact(template);
    }
    if template.contains([OPEN, CLOSE]) {
        return piecewise(&pieces);
    }
    let mut masked = String::with_capacity(template.len());
    let mut holes = Vec::new();
    for piece in &pieces {
        match piece {
            Piece::Text(text) => masked.push_str(text),
            Piece::Placeholder(p) => {
                masked.push_str(&marker(holes.len()));
                holes.push(*p);
            }
        }
    }
    unmask(&redact(&masked), &holes)
}

/// `value` as [`redact_value`](super::redact_value) redacts it, except that
/// each string is a template ([`redact_template`]), and a string that is
/// exactly one placeholder is kept even under a secret's name
/// (`{"token": "{{payload.session}}"}`): it names where the value comes
/// from, and is not one.
///
/// ```
/// use recourse_protocol::redact_template_value;
/// use serde_json::json;
///
/// let args = json!({"token": "{{payload.session}}", "password": "hunter2", "q": "key={{payload.k}}"});
/// assert_eq!(
///     redact_template_value(&args),
///     json!({"token": "{{payload.session}}", "password": "[REDACTED]", "q": "key={{payload.k}}"})
/// );
/// ```
pub fn redact_template_value(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact_template(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact_template_value).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if is_secret_key(k) && is_one_placeholder(s) => v.clone(),
                        _ if is_secret_key(k) => Value::String(REDACTED.to_owned()),
                        _ => redact_template_value(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether `text` is one placeholder and nothing else.
fn is_one_placeholder(text: &str) -> bool {
    matches!(pieces(text).as_slice(), [Piece::Placeholder(_)])
}

/// Whether `value` (a value the redactor would hide) is one marker: it
/// stands for a placeholder, and holds no secret.
pub(super) fn is_marker(value: &str) -> bool {
    value
        .strip_prefix('{')
        .and_then(|rest| rest.strip_prefix(OPEN))
        .and_then(|rest| rest.strip_suffix('}'))
        .and_then(|rest| rest.strip_suffix(CLOSE))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn marker(n: usize) -> String {
    format!("{{{OPEN}{n}{CLOSE}}}")
}

/// `redacted` with each marker that survived given its placeholder back;
/// the marker characters of one the redactor hid (with a secret around it)
/// are gone with it.
fn unmask(redacted: &str, holes: &[&str]) -> String {
    let open = format!("{{{OPEN}");
    let mut out = String::with_capacity(redacted.len());
    let mut rest = redacted;
    while let Some(at) = rest.find(&open) {
        out.push_str(&rest[..at]);
        let after = &rest[at + open.len()..];
        let hole = after.find(CLOSE).and_then(|close| {
            let n: usize = after[..close].parse().ok()?;
            let end = after[close..].strip_prefix(CLOSE)?.strip_prefix('}')?;
            Some((holes.get(n)?, end))
        });
        match hole {
            Some((placeholder, end)) => {
                out.push_str(placeholder);
                rest = end;
            }
            // A marker cut by a rule: nothing of it is kept.
            None => rest = after,
        }
    }
    out.push_str(rest);
    out.retain(|c| c != OPEN && c != CLOSE);
    out
}

/// Each piece of text redacted on its own, the placeholders kept.
fn piecewise(pieces: &[Piece<'_>]) -> String {
    pieces
        .iter()
        .map(|piece| match piece {
            Piece::Text(text) => redact(text),
            Piece::Placeholder(p) => (*p).to_owned(),
        })
        .collect()
}

/// A template's text, or one of its placeholders as written.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Placeholder(&'a str),
}

/// `template` split into text and placeholders: `{key}`, `{operation_id}`,
/// and `{{…}}` with no brace inside, at most [`MAX_PLACEHOLDER`] long, that
/// the redactor would leave as it is.
fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let (mut text_from, mut at) = (0, 0);
    while let Some(open) = template[at..].find('{').map(|i| at + i) {
        match placeholder_at(&template[open..]) {
            Some(len) => {
                if open > text_from {
                    out.push(Piece::Text(&template[text_from..open]));
                }
                out.push(Piece::Placeholder(&template[open..open + len]));
                (text_from, at) = (open + len, open + len);
            }
            None => at = open + 1,
        }
    }
    if text_from < template.len() {
        out.push(Piece::Text(&template[text_from..]));
    }
    out
}

/// The length of the placeholder `text` starts with, if it starts with one.
fn placeholder_at(text: &str) -> Option<usize> {
    for name in ["{key}", "{operation_id}"] {
        if text.starts_with(name) {
            return Some(name.len());
        }
    }
    let inner = text.strip_prefix("{{")?;
    let close = inner.find("}}")?;
    let path = &inner[..close];
    let plain = !path.trim().is_empty()
        && path.len() <= MAX_PLACEHOLDER
        && !path.contains(['{', '}'])
        && redact(path) == path;
    plain.then_some(close + 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_under_credential_names_are_kept() {
        for template in [
            "http://tool/api/lookup?key={key}",
            "http://tool/api/lookup?token={operation_id}&x=1",
            "http://tool/api/lookup?api_key={key}&format=json",
            "http://tool/{operation_id}?sig={key}",
            "password={{payload.password_hint}}",
            "Authorization-less: {{payload.id}}",
        ] {
            assert_eq!(redact_template(template), template);
        }
    }

    #[test]
    fn secrets_around_placeholders_are_hidden() {
        for (template, stored) in [
            (
                "http://tool/x/{key}?api_key=s3cr3tVALUE",
                "http://tool/x/{key}?api_key=[REDACTED]",
            ),
            (
                "http://tool/x?key={key}&token=s3cr3tVALUE",
                "http://tool/x?key={key}&token=[REDACTED]",
            ),
            // The literal part of the value may be the credential: all of it goes.
            (
                "http://tool/x?token=abc{key}def",
                "http://tool/x?token=[REDACTED]",
            ),
            (
                "http://tool/{key}/sk-proj-abcdefghijklmnopqrstu",
                "http://tool/{key}/[REDACTED]",
            ),
        ] {
            assert_eq!(redact_template(template), stored, "{template}");
        }
    }

    #[test]
    fn what_is_not_a_placeholder_is_text() {
        assert_eq!(redact_template("?key={other}"), "?key=[REDACTED]");
        assert_eq!(
            redact_template("?key={{sk-proj-abcdefghijklmnopqrstu}}"),
            "?key=[REDACTED]"
        );
        assert_eq!(
            redact_template("no placeholder ?key=v"),
            "no placeholder ?key=[REDACTED]"
        );
        assert_eq!(redact_template("{{ }} {key"), "{{ }} {key");
    }

    #[test]
    fn a_template_holding_the_marker_characters_is_redacted_piece_by_piece() {
        let template = format!("http://tool/{{{OPEN}0{CLOSE}}}?key={{key}}&token=abcdefgh");
        let stored = redact_template(&template);
        assert_eq!(
            stored,
            format!("http://tool/{{{OPEN}0{CLOSE}}}?key={{key}}&token=[REDACTED]")
        );
    }

    #[test]
    fn json_templates_keep_their_references() {
        let spec = json!({
            "url": "http://tool/read?key={{payload.k}}&appid=0123456789abcdef",
            "args": {"token": "{{payload.session}}", "secret": "literal", "n": 3,
                     "nested": [{"api_key": "{{payload.a}} and more"}]},
            "expect": ["/status == \"done\""]
        });
        assert_eq!(
            redact_template_value(&spec),
            json!({
                "url": "http://tool/read?key={{payload.k}}&appid=[REDACTED]",
                "args": {"token": "{{payload.session}}", "secret": REDACTED, "n": 3,
                         "nested": [{"api_key": REDACTED}]},
                "expect": ["/status == \"done\""]
            })
        );
    }

    #[test]
    fn markers_alone_are_not_secrets() {
        assert!(is_marker(&marker(12)));
        assert!(!is_marker(&format!("{{{OPEN}{CLOSE}}}")));
        assert!(!is_marker(&format!("{{{OPEN}1{CLOSE}}}x")));
        assert!(!is_marker(&format!("{OPEN}1{CLOSE}")));
    }
}
