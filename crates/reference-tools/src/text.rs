//! Small text helpers for matching user input against reference data.

/// Lower case, punctuation other than commas dropped, whitespace collapsed,
/// spaces around commas removed: `"  Flower  Mound ,TX "` → `"flower mound,tx"`.
pub(crate) fn normalize(text: &str) -> String {
    let kept: String = text
        .chars()
        .filter(|c| c.is_alphanumeric() || c.is_whitespace() || *c == ',')
        .flat_map(char::to_lowercase)
        .collect();
    kept.split(',')
        .map(|part| part.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(",")
}

/// Levenshtein distance in characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Rounds to `places` decimal places.
pub(crate) fn round_to(value: f64, places: i32) -> f64 {
    let factor = 10f64.powi(places);
    (value * factor).round() / factor
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_case_spacing_and_punctuation() {
        assert_eq!(normalize("  Flower  Mound ,TX. "), "flower mound,tx");
        assert_eq!(
            normalize("Paris, Île-de-France, FR"),
            "paris,îledefrance,fr"
        );
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn rounding() {
        assert_eq!(round_to(1.23456, 2), 1.23);
        assert_eq!(round_to(468.2849999, 3), 468.285);
    }
}
