//! `POST /api/currency/convert`: conversion at fixed offline reference rates.
//!
//! A non-positive amount is the caller's mistake and not one the tool can
//! correct — only the user knows the intended amount — so it is
//! `INPUT_ERROR` with `retryable: false`. An unsupported currency code is
//! correctable (`details.allowed_values`), so that one opts in.

use std::sync::Arc;

use axum::extract::State;
use recourse_tool::protocol::ToolError;
use recourse_tool::{Success, ToolJson, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Shared;
use crate::text::round_to;

/// Input of `POST /api/currency/convert`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ConvertInput {
    /// The amount to convert; must be positive.
    pub(crate) amount: f64,
    /// ISO 4217 code of the source currency, upper case, e.g. "USD".
    pub(crate) from: String,
    /// ISO 4217 code of the target currency, upper case, e.g. "EUR".
    pub(crate) to: String,
}

/// A conversion result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Conversion {
    amount: f64,
    from: &'static str,
    to: &'static str,
    rate: f64,
    converted: f64,
}

/// Units of each currency per US dollar.
const RATES: [(&str, f64); 8] = [
    ("USD", 1.0),
    ("EUR", 0.92),
    ("GBP", 0.79),
    ("JPY", 156.4),
    ("CHF", 0.89),
    ("CAD", 1.37),
    ("AUD", 1.52),
    ("INR", 83.5),
];

/// Amounts above this are refused rather than risk meaningless precision.
const MAX_AMOUNT: f64 = 1e12;

/// The handler.
pub(crate) async fn convert(
    State(shared): State<Arc<Shared>>,
    ToolJson(input): ToolJson<ConvertInput>,
) -> ToolResult<Conversion> {
    conversion(&input).map(Success).map_err(|e| {
        if shared.correctable_amounts && e.code == "INVALID_AMOUNT" {
            e.retryable(true).into()
        } else {
            e.into()
        }
    })
}

fn conversion(input: &ConvertInput) -> Result<Conversion, ToolError> {
    if input.amount <= 0.0 || input.amount.is_nan() {
        return Err(
            ToolError::input_error("INVALID_AMOUNT", "`amount` must be greater than 0")
                .detail("field", "amount"),
        );
    }
    if input.amount > MAX_AMOUNT {
        return Err(ToolError::input_error(
            "AMOUNT_TOO_LARGE",
            format!("`amount` must be at most {MAX_AMOUNT}"),
        )
        .detail("field", "amount"));
    }
    let (from, from_rate) = rate_of("from", &input.from)?;
    let (to, to_rate) = rate_of("to", &input.to)?;
    let rate = to_rate / from_rate;
    Ok(Conversion {
        amount: input.amount,
        from,
        to,
        rate: round_to(rate, 6),
        converted: round_to(input.amount * rate, 2),
    })
}

fn rate_of(field: &str, code: &str) -> Result<(&'static str, f64), ToolError> {
    RATES
        .iter()
        .find(|(c, _)| *c == code)
        .copied()
        .ok_or_else(|| {
            let allowed: Vec<&str> = RATES.iter().map(|(c, _)| *c).collect();
            ToolError::input_error(
                "UNSUPPORTED_CURRENCY",
                format!("Currency '{code}' in `{field}` is not supported"),
            )
            .retryable(true)
            .detail("field", field)
            .detail("allowed_values", allowed.join(","))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(amount: f64, from: &str, to: &str) -> ConvertInput {
        ConvertInput {
            amount,
            from: from.into(),
            to: to.into(),
        }
    }

    #[test]
    fn converts_through_the_dollar() {
        let c = conversion(&input(100.0, "EUR", "GBP")).unwrap();
        assert_eq!(c.rate, 0.858696);
        assert_eq!(c.converted, 85.87);
        assert_eq!(
            conversion(&input(5.0, "USD", "USD")).unwrap().converted,
            5.0
        );
    }

    #[test]
    fn non_positive_amounts_are_refused_without_opting_in() {
        for amount in [0.0, -3.0] {
            let err = conversion(&input(amount, "USD", "EUR")).unwrap_err();
            assert_eq!(err.code, "INVALID_AMOUNT");
            assert!(!err.retryable);
            assert_eq!(err.detail_str("field"), Some("amount"));
        }
    }

    #[test]
    fn unknown_currency_lists_allowed_values() {
        let err = conversion(&input(1.0, "USD", "eur")).unwrap_err();
        assert_eq!(err.code, "UNSUPPORTED_CURRENCY");
        assert!(err.retryable);
        assert_eq!(err.detail_str("field"), Some("to"));
        assert!(
            err.detail_str("allowed_values")
                .unwrap()
                .split(',')
                .any(|c| c == "EUR")
        );
    }
}
