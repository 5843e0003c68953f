//! Reading command-line inputs: `TEXT|@FILE` values and `Name: value` headers.

use anyhow::{Context, Result, bail};

/// Reads a value given inline or as `@FILE` (`@-` reads standard input).
pub(crate) fn text_or_file(value: &str) -> Result<Vec<u8>> {
    match value.strip_prefix('@') {
        Some("-") => {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf)
                .context("reading standard input")?;
            Ok(buf)
        }
        Some(path) if path.trim().is_empty() => bail!("a file name must follow @ in {value:?}"),
        Some(path) => std::fs::read(path).with_context(|| format!("reading {path}")),
        None => Ok(value.as_bytes().to_vec()),
    }
}

/// Reads a JSON value given inline or as `@FILE`.
pub(crate) fn json_or_file(flag: &str, value: &str) -> Result<serde_json::Value> {
    let bytes = text_or_file(value)?;
    serde_json::from_slice(&bytes).with_context(|| format!("{flag} is not valid JSON"))
}

/// Parses `Name: value`.
pub(crate) fn header(raw: &str) -> Result<(String, String)> {
    let Some((name, value)) = raw.split_once(':') else {
        bail!("header {raw:?} must look like 'Name: value'");
    };
    let name = recourse::config::parse_header_name("--header", name.trim())?;
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        bail!("header {name} has a control character in its value");
    }
    Ok((name, value.to_owned()))
}

/// Parses every `--header`.
pub(crate) fn headers(raw: &[String]) -> Result<Vec<(String, String)>> {
    raw.iter().map(|h| header(h)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_split_on_the_first_colon() {
        assert_eq!(
            header("Retry-After: Wed, 21 Oct 2015 07:28:00 GMT")
                .unwrap()
                .1,
            "Wed, 21 Oct 2015 07:28:00 GMT"
        );
        assert!(header("no colon").is_err());
        assert!(header("Bad Name: x").is_err());
    }
}
