//! What an MCP proxy needs of a server besides `tools/call`: its tools as it
//! listed them, its capabilities, and its answer to any other request
//! (`resources/read`, `prompts/get`, …), all as JSON.
//!
//! # Why JSON, not rmcp's types
//!
//! A proxy passes these through unchanged, so it needs them whole — every
//! field of a tool (its title, output schema, annotations, `_meta`), not the
//! part [`McpTool`](crate::McpTool) reads — but keeps no rule about them.
//! JSON carries them whole without putting rmcp's types in this crate's
//! public API, so a new rmcp is not a breaking change here.
//!
//! A forwarded request is not a tool call: it is sent once, never resent,
//! and bounded by the timeout given. A session that ends under it is
//! replaced on the next request, as for a call.

use std::time::{Duration, Instant};

use recourse_protocol::mcp::McpError;
use rmcp::model::ClientRequest;
use rmcp::service::ServiceError;
use serde_json::{Map, Value};

use crate::transport::McpTransport;

/// A JSON-RPC error the server answered a forwarded request with, as it sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC error code (`-32602`, …).
    pub code: i32,
    /// The server's message.
    pub message: String,
    /// The error's `data`, if it sent any.
    pub data: Option<Value>,
}

impl McpTransport {
    /// Every tool of the server, as its `tools/list` described it when the
    /// current session started or, since, when the server said its tools
    /// changed (each a JSON object, every field kept).
    ///
    /// # Errors
    /// As [`connect`](Self::connect), when no session is live and none can
    /// be started within `timeout`.
    pub async fn listed_tools(&self, timeout: Duration) -> Result<Vec<Value>, McpError> {
        self.live_session(timeout).await?;
        self.tools
            .current()
            .iter()
            .map(|tool| {
                serde_json::to_value(tool)
                    .map_err(|e| McpError::unreachable("a listed tool").caused_by(e))
            })
            .collect()
    }

    /// The capabilities the server declared in its handshake (`{"tools": {…},
    /// "resources": {…}, …}`), an empty object when it declared none.
    ///
    /// # Errors
    /// As [`listed_tools`](Self::listed_tools).
    pub async fn capabilities(&self, timeout: Duration) -> Result<Value, McpError> {
        let session = self.live_session(timeout).await?;
        let declared = session
            .peer
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.capabilities).ok());
        Ok(declared.unwrap_or_else(|| Value::Object(Map::new())))
    }

    /// Sends the request `method` with `params` to the server once and
    /// gives its result (`Ok(Ok)`) or its JSON-RPC error (`Ok(Err)`), each
    /// as the server sent it.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use recourse_mcp::{McpTarget, McpTransport};
    /// use serde_json::json;
    ///
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let server = McpTransport::new(McpTarget::command_line("mcp-server-everything")?);
    /// let listed = server
    ///     .forward("resources/list", Some(json!({})), Duration::from_secs(20))
    ///     .await?;
    /// println!("{listed:?}");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `params` are not a JSON object ([`McpErrorKind::Config`](crate::McpErrorKind::Config);
    /// parameters that are an object but not the ones MCP defines for
    /// `method` go to the server as they are, for it to answer);
    /// the session could not be started, ended under the request, or no
    /// answer came within `timeout` ([`McpErrorKind::Unreachable`](crate::McpErrorKind::Unreachable)).
    pub async fn forward(
        &self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Result<Value, RpcError>, McpError> {
        let request = client_request(method, params)?;
        let started = Instant::now();
        let session = self.live_session(timeout).await?;
        let left = timeout.saturating_sub(started.elapsed());
        let answer = tokio::time::timeout(left, session.peer.send_request(request)).await;
        let lost =
            |why: String| McpError::unreachable(format!("{}: {method}: {why}", self.target()));
        match answer {
            Ok(Ok(result)) => serde_json::to_value(result)
                .map(Ok)
                .map_err(|e| lost("the answer could not be re-encoded".to_owned()).caused_by(e)),
            Ok(Err(ServiceError::McpError(error))) => Ok(Err(RpcError {
                code: error.code.0,
                message: error.message.into_owned(),
                data: error.data,
            })),
            Ok(Err(other)) => {
                if !session.is_alive() {
                    self.discard(&session).await;
                }
                Err(lost(other.to_string()))
            }
            Err(_) => {
                self.discard(&session).await;
                Err(lost(format!("no answer within {timeout:?}")))
            }
        }
    }
}

/// The request `method` with `params`, read as MCP defines it.
fn client_request(method: &str, params: Option<Value>) -> Result<ClientRequest, McpError> {
    let mut request = Map::new();
    request.insert("method".to_owned(), Value::from(method));
    if let Some(params) = params {
        request.insert("params".to_owned(), params);
    }
    serde_json::from_value(Value::Object(request)).map_err(|e| {
        McpError::config(format!(
            "{method:?} with these parameters is not an MCP request"
        ))
        .caused_by(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_are_read_by_their_method() {
        let read = client_request("resources/read", Some(json!({"uri": "file:///a"}))).unwrap();
        assert!(matches!(read, ClientRequest::ReadResourceRequest(_)));
        let listed = client_request("prompts/list", None).unwrap();
        assert!(matches!(listed, ClientRequest::ListPromptsRequest(_)));
        // Parameters MCP does not define go to the server as they are, for it to judge.
        let odd = client_request("resources/read", Some(json!({"nope": 1}))).unwrap();
        assert!(matches!(odd, ClientRequest::CustomRequest(_)));
        let err = client_request("resources/read", Some(json!(3))).unwrap_err();
        assert!(err.to_string().contains("resources/read"), "{err}");
    }
}
