//! Shell-style globs: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`, `\\` to escape.
//! Used by `recourse eval --scenario`.

/// A parsed glob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Glob {
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Literal(char),
    AnyOne,
    AnyRun,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Glob {
    /// Parses `pattern`.
    ///
    /// # Errors
    /// An empty pattern, an unclosed `[`, or an empty class.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        if pattern.is_empty() {
            return Err("the pattern is empty".to_owned());
        }
        let mut tokens = Vec::new();
        let mut chars = pattern.chars();
        while let Some(c) = chars.next() {
            tokens.push(match c {
                '*' => Token::AnyRun,
                '?' => Token::AnyOne,
                '[' => class(&mut chars, pattern)?,
                '\\' => Token::Literal(chars.next().unwrap_or('\\')),
                c => Token::Literal(c),
            });
        }
        Ok(Self { tokens })
    }

    /// Whether the whole of `text` matches.
    pub(crate) fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        matches_at(&self.tokens, &text)
    }
}

fn class(chars: &mut std::str::Chars<'_>, pattern: &str) -> Result<Token, String> {
    let unclosed = || format!("unclosed '[' in {pattern:?}");
    let mut negated = false;
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let c = chars.next().ok_or_else(unclosed)?;
        match c {
            '!' | '^' if first && !negated => {
                negated = true;
                continue;
            }
            ']' if !first => break,
            _ => {}
        }
        first = false;
        let mut look = chars.clone();
        if look.next() == Some('-')
            && let Some(end) = look.next()
            && end != ']'
        {
            chars.next();
            chars.next();
            if end < c {
                return Err(format!("range {c}-{end} is reversed in {pattern:?}"));
            }
            ranges.push((c, end));
        } else {
            ranges.push((c, c));
        }
    }
    Ok(Token::Class { negated, ranges })
}

fn matches_at(tokens: &[Token], text: &[char]) -> bool {
    match tokens.split_first() {
        None => text.is_empty(),
        Some((Token::AnyRun, rest)) => (0..=text.len()).any(|i| matches_at(rest, &text[i..])),
        Some((token, rest)) => match text.split_first() {
            Some((c, tail)) => one(token, *c) && matches_at(rest, tail),
            None => false,
        },
    }
}

fn one(token: &Token, c: char) -> bool {
    match token {
        Token::Literal(l) => *l == c,
        Token::AnyOne | Token::AnyRun => true,
        Token::Class { negated, ranges } => {
            ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c)) != *negated
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    #[test]
    fn stars_questions_and_classes() {
        let g = |p: &str| Glob::new(p).unwrap();
        assert!(g("exports_*").matches("exports_unknown_outcome"));
        assert!(!g("exports_*").matches("weather_control"));
        assert!(g("*403*").matches("exports_misleading_403"));
        assert!(g("rate_?").matches("rate_1"));
        assert!(g("[a-c]x").matches("bx"));
        assert!(!g("[!a-c]x").matches("bx"));
        assert!(g("a\\*").matches("a*"));
        assert!(g("[]]").matches("]"));
    }

    #[test]
    fn bad_patterns_say_why() {
        assert!(Glob::new("").is_err());
        assert!(Glob::new("[abc").unwrap_err().contains("unclosed"));
        assert!(Glob::new("[z-a]").unwrap_err().contains("reversed"));
    }
}
