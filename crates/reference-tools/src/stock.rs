//! `POST /api/stock/quote`: the latest price of a listed stock, from offline data.
//!
//! Symbols match case-insensitively. A symbol that is not listed is
//! `SYMBOL_NOT_FOUND`, retryable because a ticker is correctable; when the
//! input reduces to exactly one listed ticker — by dropping company suffixes
//! like `Inc` (`"MSFT Inc"` → `MSFT`) or by naming the company
//! (`"Microsoft"` → `MSFT`) — that ticker is `details.suggestion`.

use recourse_tool::protocol::ToolError;
use recourse_tool::{Success, ToolJson, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::text::round_to;

/// Input of `POST /api/stock/quote`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct QuoteInput {
    /// The ticker symbol, e.g. "TSLA".
    pub(crate) symbol: String,
}

/// A quote: the last price and recent closes, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Quote {
    symbol: &'static str,
    name: &'static str,
    price: f64,
    currency: &'static str,
    history: Vec<Close>,
}

/// One session's closing price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Close {
    sessions_ago: u8,
    close: f64,
}

#[derive(Debug)]
struct Listing {
    symbol: &'static str,
    name: &'static str,
    price: f64,
}

const LISTINGS: [Listing; 6] = [
    Listing {
        symbol: "TSLA",
        name: "Tesla, Inc.",
        price: 468.285,
    },
    Listing {
        symbol: "MSFT",
        name: "Microsoft Corporation",
        price: 497.41,
    },
    Listing {
        symbol: "AAPL",
        name: "Apple Inc.",
        price: 229.87,
    },
    Listing {
        symbol: "NVDA",
        name: "NVIDIA Corporation",
        price: 181.02,
    },
    Listing {
        symbol: "AMZN",
        name: "Amazon.com, Inc.",
        price: 231.44,
    },
    Listing {
        symbol: "GOOGL",
        name: "Alphabet Inc.",
        price: 203.9,
    },
];

/// Relative moves of the last closes against the latest price, oldest first.
const HISTORY_SHAPE: [f64; 5] = [-0.034, -0.019, 0.008, -0.006, 0.0];

/// Words that decorate a ticker or company name without identifying it.
const SUFFIXES: [&str; 9] = [
    "INC",
    "CORP",
    "CORPORATION",
    "CO",
    "COMPANY",
    "LTD",
    "PLC",
    "LLC",
    "COM",
];

/// The handler.
pub(crate) async fn quote(ToolJson(input): ToolJson<QuoteInput>) -> ToolResult<Quote> {
    let listing = find_listing(&input.symbol)?;
    Ok(Success(quote_of(listing)))
}

fn find_listing(symbol: &str) -> Result<&'static Listing, ToolError> {
    let wanted = symbol.trim().trim_start_matches('$').to_ascii_uppercase();
    if wanted.is_empty() {
        return Err(
            ToolError::input_error("EMPTY_SYMBOL", "`symbol` must name a ticker")
                .detail("field", "symbol"),
        );
    }
    if let Some(listing) = LISTINGS.iter().find(|l| l.symbol == wanted) {
        return Ok(listing);
    }
    let mut error = ToolError::not_found(
        "SYMBOL_NOT_FOUND",
        format!("No listed symbol '{}'", symbol.trim()),
    )
    .retryable(true)
    .detail("field", "symbol")
    .detail("hint", "Use the bare ticker symbol, e.g. 'TSLA'");
    if let Some(listing) = suggest(&wanted) {
        error = error.detail("suggestion", listing.symbol);
    }
    Err(error)
}

/// The one listing the input reduces to, if exactly one.
fn suggest(wanted: &str) -> Option<&'static Listing> {
    let core = significant_words(wanted);
    let matches: Vec<&Listing> = LISTINGS
        .iter()
        .filter(|l| core == l.symbol || core == significant_words(&l.name.to_ascii_uppercase()))
        .collect();
    match matches.as_slice() {
        [only] => Some(only),
        _ => None,
    }
}

/// Upper-case words without punctuation or company suffixes, space-joined.
fn significant_words(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty() && !SUFFIXES.contains(w))
        .collect::<Vec<_>>()
        .join(" ")
}

fn quote_of(listing: &'static Listing) -> Quote {
    let history = HISTORY_SHAPE
        .iter()
        .zip((0..HISTORY_SHAPE.len() as u8).rev())
        .map(|(shape, sessions_ago)| Close {
            sessions_ago,
            close: round_to(listing.price * (1.0 + shape), 3),
        })
        .collect();
    Quote {
        symbol: listing.symbol,
        name: listing.name,
        price: listing.price,
        currency: "USD",
        history,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsla_quotes_468_285_and_history_ends_at_the_price() {
        let q = quote_of(find_listing("tsla").unwrap());
        assert_eq!(q.price, 468.285);
        assert_eq!(q.history.len(), 5);
        assert_eq!(q.history.last().unwrap().close, 468.285);
        assert_eq!(q.history[0].sessions_ago, 4);
    }

    #[test]
    fn company_suffixes_and_names_suggest_the_ticker() {
        let err = find_listing("MSFT Inc").unwrap_err();
        assert_eq!(err.code, "SYMBOL_NOT_FOUND");
        assert!(err.retryable);
        assert_eq!(err.detail_str("suggestion"), Some("MSFT"));
        assert_eq!(
            find_listing("Microsoft")
                .unwrap_err()
                .detail_str("suggestion"),
            Some("MSFT")
        );
        assert_eq!(
            find_listing("Amazon.com")
                .unwrap_err()
                .detail_str("suggestion"),
            Some("AMZN")
        );
    }

    #[test]
    fn unknown_symbols_have_no_suggestion() {
        assert_eq!(
            find_listing("ZZZZ").unwrap_err().detail_str("suggestion"),
            None
        );
        assert_eq!(find_listing(" ").unwrap_err().code, "EMPTY_SYMBOL");
    }
}
