//! # recourse-tool
//!
//! Helpers for tool servers that report honestly in the recourse envelope.
//! This crate is being built; see the workspace README for its status.
//!
//! ```
//! use recourse_tool::protocol::ToolError;
//! assert_eq!(ToolError::rate_limit("SLOW_DOWN", "quota").http_status(), 429);
//! ```

pub use recourse_protocol as protocol;
