//! `POST /api/orders/lookup` and `POST /api/orders/refund`: a small order book.
//!
//! Order ids are `ORD-` followed by digits. Refunds follow a 30-day window
//! from delivery: ORD-1001 (delivered 10 days ago) is refundable; ORD-2002
//! (45 days) is refused with 422 `POLICY_REJECTION`, which no correction or
//! retry can change. A refund is idempotent: refunding an order again returns
//! the refund already made.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use recourse_tool::protocol::ToolError;
use recourse_tool::{Success, ToolJson, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::Shared;

/// Input of both order routes.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct OrderInput {
    /// The order id, `ORD-` followed by digits, e.g. "ORD-1001".
    pub(crate) order_id: String,
}

/// An order as the lookup reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct OrderView {
    order_id: &'static str,
    status: &'static str,
    total: f64,
    currency: &'static str,
    days_since_delivery: Option<u32>,
    refund_window_days: u32,
    refundable: bool,
    refund: Option<Refund>,
}

/// A refund made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Refund {
    refund_id: String,
    order_id: &'static str,
    amount: f64,
    currency: &'static str,
    status: &'static str,
}

#[derive(Debug)]
struct Order {
    id: &'static str,
    status: &'static str,
    total: f64,
    days_since_delivery: Option<u32>,
}

const REFUND_WINDOW_DAYS: u32 = 30;

const ORDERS: [Order; 4] = [
    Order {
        id: "ORD-1001",
        status: "delivered",
        total: 59.9,
        days_since_delivery: Some(10),
    },
    Order {
        id: "ORD-2002",
        status: "delivered",
        total: 129.0,
        days_since_delivery: Some(45),
    },
    Order {
        id: "ORD-3003",
        status: "cancelled",
        total: 24.5,
        days_since_delivery: None,
    },
    Order {
        id: "ORD-4004",
        status: "in_transit",
        total: 310.0,
        days_since_delivery: None,
    },
];

/// Refunds made so far, by order id.
#[derive(Debug, Default)]
pub(crate) struct RefundLedger {
    refunds: Mutex<HashMap<&'static str, Refund>>,
}

impl RefundLedger {
    fn get(&self, order_id: &str) -> Option<Refund> {
        self.refunds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(order_id)
            .cloned()
    }
}

/// The lookup handler.
pub(crate) async fn lookup(
    State(shared): State<Arc<Shared>>,
    ToolJson(input): ToolJson<OrderInput>,
) -> ToolResult<OrderView> {
    let order = find_order(&input.order_id)?;
    let refund = shared.refunds.get(order.id);
    Ok(Success(OrderView {
        order_id: order.id,
        status: if refund.is_some() {
            "refunded"
        } else {
            order.status
        },
        total: order.total,
        currency: "USD",
        days_since_delivery: order.days_since_delivery,
        refund_window_days: REFUND_WINDOW_DAYS,
        refundable: refund.is_none() && refusal(order).is_none(),
        refund,
    }))
}

/// The refund handler.
pub(crate) async fn refund(
    State(shared): State<Arc<Shared>>,
    ToolJson(input): ToolJson<OrderInput>,
) -> ToolResult<Refund> {
    let order = find_order(&input.order_id)?;
    let mut refunds = shared
        .refunds
        .refunds
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(done) = refunds.get(order.id) {
        return Ok(Success(done.clone()));
    }
    if let Some(reason) = refusal(order) {
        return Err(reason.into());
    }
    let made = Refund {
        refund_id: order.id.replacen("ORD-", "RF-", 1),
        order_id: order.id,
        amount: order.total,
        currency: "USD",
        status: "refunded",
    };
    refunds.insert(order.id, made.clone());
    Ok(Success(made))
}

fn find_order(order_id: &str) -> Result<&'static Order, ToolError> {
    let id = order_id.trim();
    let digits = id.strip_prefix("ORD-").unwrap_or("");
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(malformed_id(id));
    }
    ORDERS.iter().find(|o| o.id == id).ok_or_else(|| {
        ToolError::not_found("ORDER_NOT_FOUND", format!("No order {id}"))
            .detail("field", "order_id")
    })
}

fn malformed_id(id: &str) -> ToolError {
    let error = ToolError::input_error(
        "INVALID_ORDER_ID",
        format!("Order id '{id}' is not of the form ORD-<digits>"),
    )
    .detail("field", "order_id")
    .detail("expected", "ORD-<digits>");
    // A bare number or a lower-case prefix has one obvious fix.
    let tail = id
        .strip_prefix("ord-")
        .or_else(|| id.strip_prefix("ORD"))
        .unwrap_or(id);
    if !tail.is_empty() && tail.chars().all(|c| c.is_ascii_digit()) {
        error
            .retryable(true)
            .detail("suggestion", format!("ORD-{tail}"))
    } else {
        error
    }
}

/// Why the business rules refuse a refund, if they do.
fn refusal(order: &Order) -> Option<ToolError> {
    match (order.status, order.days_since_delivery) {
        ("delivered", Some(days)) if days > REFUND_WINDOW_DAYS => Some(
            ToolError::policy_rejection(
                "REFUND_WINDOW_CLOSED",
                format!(
                    "Order {} was delivered {days} days ago; refunds are possible within {REFUND_WINDOW_DAYS} days of delivery",
                    order.id
                ),
            )
            .detail("window_days", REFUND_WINDOW_DAYS.to_string())
            .detail("days_since_delivery", days.to_string()),
        ),
        ("delivered", _) => None,
        (status, _) => Some(
            ToolError::policy_rejection(
                "ORDER_NOT_REFUNDABLE",
                format!("Order {} is {status}; only delivered orders can be refunded", order.id),
            )
            .detail("order_status", status),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_must_start_with_ord() {
        let err = find_order("1001").unwrap_err();
        assert_eq!(err.code, "INVALID_ORDER_ID");
        assert!(err.retryable);
        assert_eq!(err.detail_str("suggestion"), Some("ORD-1001"));
        let err = find_order("order one").unwrap_err();
        assert!(!err.retryable);
        assert_eq!(err.detail_str("suggestion"), None);
        assert_eq!(find_order("ORD-9999").unwrap_err().code, "ORDER_NOT_FOUND");
    }

    #[test]
    fn refund_window_is_thirty_days() {
        assert!(refusal(find_order("ORD-1001").unwrap()).is_none());
        let err = refusal(find_order("ORD-2002").unwrap()).unwrap();
        assert_eq!(err.code, "REFUND_WINDOW_CLOSED");
        assert_eq!(err.http_status(), 422);
        assert!(!err.retryable);
        assert!(refusal(find_order("ORD-3003").unwrap()).is_some());
    }
}
