//! # recourse-protocol
//!
//! The wire protocol of recourse: how a tool reports what happened, and how an
//! agent reads it back — exactly, totally, and without leaking secrets.
//!
//! A tool answers with an envelope. Failures carry a category, which decides
//! what an agent may do next, and a three-valued retry permission:
//!
//! ```
//! use recourse_protocol::{parse_response, ErrorCategory, RetryPermission, ToolError, ToolResponse};
//!
//! // Tool side: report a location that does not exist, with a hint.
//! let reply = ToolResponse::failure(
//!     ToolError::not_found("LOCATION_NOT_FOUND", "No place called 'Flower Mound, TX'")
//!         .retryable(true)
//!         .detail("suggestion", "Flower Mound, Texas, US"),
//! );
//! let status = reply.http_status();
//! let body = serde_json::to_vec(&reply).unwrap();
//! assert_eq!(status, 404);
//!
//! // Agent side: read it back.
//! let parsed = parse_response(status, [("content-type", "application/json")], &body);
//! assert!(!parsed.success);
//! assert_eq!(parsed.category, Some(ErrorCategory::NotFound));
//! assert_eq!(parsed.permission, RetryPermission::Allowed);
//! assert_eq!(parsed.code.as_deref(), Some("LOCATION_NOT_FOUND"));
//! assert_eq!(parsed.details["suggestion"], "Flower Mound, Texas, US");
//! ```
//!
//! The parser also reads the conventions agents meet in the wild — the
//! `{"status": "error", "error_category": …}` dict convention, MCP
//! `CallToolResult`s with `isError`, JSON-RPC errors and RFC 9457 problem
//! documents — into the same [`ParsedResponse`]. Bodies that follow none of
//! them (HTML error pages, plain text) route by HTTP status alone.
//!
//! On the tool side, [`classify_upstream_error`] maps an upstream API's failure
//! to a category, and [`redact`] keeps credentials out of every string a model
//! may see. [`mcp`] names what recourse's MCP client and MCP tool server
//! agree on.
//!
//! This crate depends on serde, serde_json, httpdate and regex only: tool
//! authors can use it without pulling in an async runtime or an HTTP client.
//!
//! Sections cited as "protocol §N" are those of the recourse protocol,
//! `docs/protocol.md` in the recourse source tree.

mod category;
mod classify;
mod data;
mod error;
pub mod mcp;
pub mod numbers;
mod parse;
mod permission;
mod redact;
mod response;
mod timestamp;
mod wait;

pub use category::{ErrorCategory, http_status_for_category};
pub use classify::{UpstreamClassification, classify_upstream_error, extract_status};
pub use data::ToolData;
pub use error::{ToolError, model_visible_error};
pub use parse::{
    BodyFormat, CategoryBasis, Need, ParsedResponse, parse_response, parse_response_at,
    parse_value_at,
};
pub use permission::RetryPermission;
pub use redact::{
    REDACTED, is_secret_key, redact, redact_cow, redact_template, redact_template_value,
    redact_value, truncate_chars,
};
pub use response::ToolResponse;
pub use timestamp::parse_rfc3339;
pub use wait::{parse_retry_after, parse_retry_after_detail};
