//! Near-miss matching: which allowed value a slightly wrong one meant.
//!
//! A value matches an option when they are equal ignoring ASCII case, or when
//! their edit distance (Levenshtein, ignoring case) is small for their length:
//! none for one character, 1 up to four characters, 2 beyond. A match counts
//! only when it is the **only** option within reach: `"cat"` against
//! `["bat", "car"]` is ambiguous and left alone, because a guess between two
//! plausible values is the model's job, not a deterministic repair's.

/// The one option `value` plausibly meant, if exactly one is within reach.
pub(crate) fn unique_near_match<'o>(value: &str, options: &[&'o str]) -> Option<&'o str> {
    let by_case: Vec<&str> = options
        .iter()
        .copied()
        .filter(|o| o.eq_ignore_ascii_case(value))
        .collect();
    match by_case.as_slice() {
        [one] => return (*one != value).then_some(*one),
        [] => {}
        _ => return None,
    }
    let reach = reach(value);
    let lowered = value.to_lowercase();
    let mut near = options
        .iter()
        .copied()
        .filter(|o| levenshtein(&lowered, &o.to_lowercase()) <= reach);
    match (near.next(), near.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// How many edits a value of this length may be away from its match.
fn reach(value: &str) -> usize {
    match value.chars().count() {
        0 | 1 => 0,
        2..=4 => 1,
        _ => 2,
    }
}

/// The Levenshtein distance between `a` and `b`, by characters.
pub(crate) fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(levenshtein("", ""), 0);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("celsius", "celcius"), 1);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("über", "uber"), 1);
    }

    #[test]
    fn case_and_small_edits_match_uniquely() {
        let units = ["celsius", "fahrenheit", "kelvin"];
        assert_eq!(unique_near_match("Celsius", &units), Some("celsius"));
        assert_eq!(unique_near_match("celcius", &units), Some("celsius"));
        assert_eq!(unique_near_match("farenheit", &units), Some("fahrenheit"));
        assert_eq!(unique_near_match("celsius", &units), None, "already exact");
        assert_eq!(unique_near_match("rankine", &units), None);
    }

    #[test]
    fn ambiguity_and_short_values_are_left_alone() {
        assert_eq!(unique_near_match("cat", &["bat", "car"]), None);
        assert_eq!(unique_near_match("x", &["y"]), None);
        assert_eq!(unique_near_match("abc", &["ABC", "abC"]), None);
    }
}
