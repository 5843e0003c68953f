//! The proxy as an MCP server (rmcp's server side): `tools/list` from the
//! catalog, `tools/call` through the executor, and — with one upstream —
//! resources and prompts passed through. Each client is a listener for list
//! changes: a session up to 2025-11-25 from its `notifications/initialized`
//! on, a 2026-07-28 client while its `subscriptions/listen` is open.
//!
//! Every result is built from JSON, so each is marked `resultType:
//! "complete"` when it does not say otherwise: protocol 2026-07-28 requires
//! the field (clients of that version reject a result without it), and rmcp
//! takes it out again for a client of an older version.

use std::time::Duration;

use recourse_mcp::{McpError, RpcError};
use recourse_protocol::mcp::IDEMPOTENCY_META_KEY;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ErrorCode, ErrorData,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, GetTaskParams, GetTaskResult,
    Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::call;
use crate::client::Client;
use crate::error::ProxyError;
use crate::fault::Fault;
use crate::proxy::McpProxy;
use crate::reach::Reach;
use crate::tasks;
use recourse_door::Served;

impl McpProxy {
    /// Serves the client that started this process, over stdin and stdout,
    /// until it closes the session; then waits for the calls that may write
    /// to end (each within its deadline; at most `grace`) and closes each
    /// upstream. [`serve_stdio_until`](Self::serve_stdio_until) stops on a
    /// signal too.
    ///
    /// Nothing else may write to stdout meanwhile.
    ///
    /// # Errors
    /// The MCP handshake with the client failed.
    pub async fn serve_stdio(self, grace: Duration) -> Result<Served, ProxyError> {
        self.serve_stdio_until(grace, std::future::pending()).await
    }

    /// Serves one client over `reader` and `writer`, one JSON-RPC message a
    /// line (what stdio carries), until it closes the session; then waits
    /// for the calls that may write to end (at most `grace`) and closes
    /// each upstream. Any pair of byte streams will do: a pipe, a socket,
    /// an in-memory duplex.
    ///
    /// ```no_run
    /// # async fn demo(proxy: recourse_mcp_proxy::McpProxy) -> Result<(), recourse_mcp_proxy::ProxyError> {
    /// let (client, server) = tokio::io::duplex(64 * 1024);
    /// let (reader, writer) = tokio::io::split(server);
    /// let grace = proxy.calls_grace();
    /// tokio::spawn(proxy.serve_io(reader, writer, grace));
    /// // `client` now speaks MCP to the proxy.
    /// # drop(client); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// The MCP handshake with the client failed.
    pub async fn serve_io<R, W>(
        self,
        reader: R,
        writer: W,
        grace: Duration,
    ) -> Result<Served, ProxyError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        self.serve_io_until(reader, writer, grace, std::future::pending())
            .await
    }

    /// Passes `method` to the one upstream, when it offers it.
    async fn forward<P: Serialize, R: DeserializeOwned>(
        &self,
        capability: &str,
        method: &str,
        params: P,
    ) -> Result<R, ErrorData> {
        let shared = &self.shared;
        if shared.capabilities.get(capability).is_none() {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("{method} is not offered by this proxy"),
                None,
            ));
        }
        let params = serde_json::to_value(params)
            .map_err(|e| ErrorData::invalid_params(e.to_string(), None))?;
        let params = (!params.is_null()).then_some(params);
        let timeout = shared.upstreams[0].executor.config().request_timeout;
        let result = passed_on(
            shared.upstreams[0]
                .transport
                .forward(method, params, timeout)
                .await,
        )?;
        complete(result).map_err(|e| {
            ErrorData::internal_error(format!("the upstream's {method} answer: {e}"), None)
        })
    }
}

/// The one upstream's answer to a request passed on, as the client is
/// answered: its result; its own JSON-RPC error when it refused; an internal
/// error when it could not be reached.
pub(crate) fn passed_on<T>(answer: Result<Result<T, RpcError>, McpError>) -> Result<T, ErrorData> {
    match answer {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(refused)) => Err(ErrorData::new(
            ErrorCode(refused.code),
            refused.message,
            refused.data,
        )),
        Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
    }
}

impl McpProxy {
    /// Refuses `method` unless the proxy offers resource subscriptions.
    fn offers_subscriptions(&self, method: &str) -> Result<(), ErrorData> {
        if self.shared.capabilities["resources"]["subscribe"] == true {
            return Ok(());
        }
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("{method} is not offered by this proxy"),
            None,
        ))
    }
}

/// Over HTTP, the caller the authorizing layer found for the token.
fn client_of(context: &RequestContext<RoleServer>) -> Option<&Client> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Client>())
}

/// Who asks about a task, and whether their client takes forms.
fn asker(context: &RequestContext<RoleServer>) -> tasks::Asker<'_> {
    tasks::Asker {
        caller: client_of(context).map(Client::name),
        takes_forms: context
            .client_capabilities()
            .as_ref()
            .is_some_and(crate::reach::takes_forms),
    }
}

/// `result`, marked `resultType: "complete"` unless it names a type, read as `R`.
fn complete<R: DeserializeOwned>(mut result: Value) -> Result<R, serde_json::Error> {
    if let Value::Object(fields) = &mut result {
        fields
            .entry("resultType")
            .or_insert_with(|| Value::from("complete"));
    }
    serde_json::from_value(result)
}

impl rmcp::ServerHandler for McpProxy {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities =
            serde_json::from_value(self.shared.capabilities.clone())
                .unwrap_or_else(|_| ServerCapabilities::builder().enable_tools().build());
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "recourse-mcp-proxy",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let catalog = self.shared.catalog();
        let tools: Vec<&Value> = catalog.tools().iter().map(|t| &t.listed).collect();
        complete(serde_json::json!({ "tools": tools }))
            .map_err(|e| ErrorData::internal_error(format!("the tool list: {e}"), None))
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(stopping) = self.refuse_while_stopping() {
            return Err(stopping);
        }
        // rmcp reads a request's `_meta` into the context, not the parameters.
        let key = match context.meta.get(IDEMPOTENCY_META_KEY) {
            None | Some(Value::Null) => None,
            Some(Value::String(key)) => Some(key.clone()),
            Some(_) => {
                return Err(ErrorData::invalid_params(
                    format!("_meta[\"{IDEMPOTENCY_META_KEY}\"] must be a string"),
                    None,
                ));
            }
        };
        let reach = Reach::of(&mut request, &context);
        let arguments = request.arguments.unwrap_or_default();
        let answer = call::run(
            &self.shared,
            &request.name,
            arguments,
            key,
            client_of(&context),
            &reach,
            context.ct.clone(),
        )
        .await;
        match answer {
            Ok(response) => Ok(response),
            Err(Fault::UnknownTool(name)) => Err(ErrorData::invalid_params(
                format!(
                    "no tool named {name:?}; tools: {}",
                    self.shared.catalog().names().join(", ")
                ),
                None,
            )),
            Err(Fault::BadKey(problem)) => Err(ErrorData::invalid_params(
                format!("_meta[\"{IDEMPOTENCY_META_KEY}\"]: {problem}"),
                None,
            )),
            Err(Fault::BadState(problem)) => Err(ErrorData::invalid_params(problem, None)),
            Err(Fault::Cancelled) => Err(ErrorData::new(
                ErrorCode::INTERNAL_ERROR,
                "cancelled by the client; a call that may write runs to its end and is journaled",
                None,
            )),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        tasks::get(&self.shared, &request, asker(&context)).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::update(&self.shared, &request, asker(&context)).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        tasks::cancel(&self.shared, &request, asker(&context)).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // A 2026-07-28 client is told on the streams it opens (`listen`).
        let legacy = context
            .peer
            .peer_info()
            .is_none_or(|client| client.protocol_version.has_initialize());
        if legacy {
            self.shared.listeners.add_session(context.peer);
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // rmcp narrows it to what was asked and what `get_info` announces
        // (resource updates only where `resources.subscribe` is offered).
        let uris = requested.resource_subscriptions.clone().unwrap_or_default();
        Some(
            SubscriptionFilter::builder()
                .tools_list_changed()
                .resources_list_changed()
                .prompts_list_changed()
                .resource_subscriptions(uris)
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let listeners = &self.shared.listeners;
        let number = listeners.add_stream(context.sink().clone());
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        self.subscribe_stream(number, context.sink(), &uris).await;
        context.cancelled().await;
        listeners.remove(number);
        self.unsubscribe_stream(number, &uris).await;
        Ok(())
    }

    // rmcp marks both legacy: they are what sessions up to 2025-11-25 use
    // (2026-07-28 names resources on a `subscriptions/listen` stream).
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.offers_subscriptions("resources/subscribe")?;
        self.subscribe_session(request.uri, context.peer).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.offers_subscriptions("resources/unsubscribe")?;
        self.unsubscribe_session(&request.uri).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.forward("resources", "resources/list", request).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.forward("resources", "resources/templates/list", request)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let result: ReadResourceResult =
            self.forward("resources", "resources/read", request).await?;
        Ok(result.into())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.forward("prompts", "prompts/list", request).await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let result: GetPromptResult = self.forward("prompts", "prompts/get", request).await?;
        Ok(result.into())
    }
}
