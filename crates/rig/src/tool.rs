//! [`RecourseTool`]: one tool as rig's model sees it, called through the executor.

use std::fmt;
use std::sync::Arc;

use recourse::correction::Schema;
use recourse::idempotency::Evidence;
use recourse::{Call, CallReport, CallSpec, ConfigError, Executor, HttpReconciler, Method, Target};
use rig_core::message::ToolName;
use rig_core::tool::{DynamicTool, ToolErrorKind, ToolExecutionError, ToolOutput};
use serde_json::{Value, json};

use crate::answer::{DO_NOT_REPEAT_LINE, tool_answer};
use crate::endpoint::HttpEndpoint;
use crate::error::SetupError;
use crate::in_doubt::InDoubt;

/// Called with the tool's name and the record of each call it ran.
type ReportHook = Arc<dyn Fn(&str, &CallReport) + Send + Sync>;

/// A rig tool whose every call runs through a recourse [`Executor`].
///
/// The model sees the tool's name, description and input schema as its
/// server described them (a capability manifest, or MCP `tools/list`). Each
/// call the model makes becomes one [`Call`] — with the tool's idempotency
/// evidence, its schema (for coercion, repair and correction) and, for an
/// HTTP write, its reconcile lookup — run to its end by the executor: waits
/// and resends, corrections and lookups happen inside the one tool call, and
/// the model gets [`tool_answer`] of the record. A call whose record says not
/// to repeat it is remembered, and the same call with the same arguments is
/// answered the same way without being sent (see the crate docs).
///
/// Build one with [`http_tools`](crate::http::http_tools) or
/// [`mcp_tools`](crate::mcp::mcp_tools) (every tool of a server), or
/// [`RecourseTool::http`] / [`RecourseTool::mcp`] (one), and hand it to rig
/// with [`into_dynamic`](Self::into_dynamic).
#[derive(Clone)]
pub struct RecourseTool {
    name: ToolName,
    description: String,
    parameters: Value,
    executor: Executor,
    route: Route,
    report_hook: Option<ReportHook>,
    in_doubt: Arc<InDoubt>,
}

/// How a call reaches the tool.
#[derive(Clone)]
enum Route {
    Http {
        target: Target,
        method: Method,
        idempotent: Option<bool>,
        schema: Option<Schema>,
        reconciler: Option<HttpReconciler>,
    },
    #[cfg(feature = "mcp")]
    Mcp(recourse_mcp::McpTool),
}

impl fmt::Debug for RecourseTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecourseTool")
            .field("name", &self.name.as_str())
            .finish_non_exhaustive()
    }
}

/// The schema a tool without one is offered with: any object.
fn any_object() -> Value {
    json!({"type": "object"})
}

impl RecourseTool {
    /// `endpoint` as a rig tool calling through `executor`, which should be
    /// built on an [`HttpTransport`](recourse::HttpTransport).
    ///
    /// The endpoint's input schema is compiled once; one that is not usable
    /// JSON Schema is left out (the call then runs without coercion or
    /// repair, and the model is offered any object).
    ///
    /// # Errors
    /// An empty name, a URL the executor would refuse (credentials in it),
    /// or a reconcile template that is not usable.
    pub fn http(executor: Executor, endpoint: HttpEndpoint) -> Result<Self, SetupError> {
        let HttpEndpoint {
            name,
            description,
            url,
            method,
            idempotent,
            input_schema,
            reconcile,
        } = endpoint;
        let tool_name = ToolName::new(name.clone())
            .map_err(|_| SetupError::new(url.as_str(), "a tool needs a name"))?;
        let target =
            Target::parse(url.as_str()).map_err(|e| SetupError::new(&name, e.to_string()))?;
        let reconciler = reconcile
            .map(HttpReconciler::new)
            .transpose()
            .map_err(|e| SetupError::new(&name, e.to_string()))?;
        let schema = input_schema
            .as_ref()
            .and_then(|raw| match Schema::compile(raw) {
                Ok(schema) => Some(schema),
                Err(e) => {
                    tracing::warn!(tool = %name, error = %e, "ignoring the tool's input schema");
                    None
                }
            });
        let parameters = match (&schema, input_schema) {
            (Some(_), Some(raw)) => raw,
            _ => any_object(),
        };
        Ok(Self::new(
            tool_name,
            description,
            parameters,
            executor,
            Route::Http {
                target,
                method,
                idempotent,
                schema,
                reconciler,
            },
        ))
    }

    /// `tool`, as the MCP server's `tools/list` described it, as a rig tool
    /// calling through `executor`, which must be built on the
    /// [`McpTransport`](recourse_mcp::McpTransport) of that server.
    ///
    /// # Errors
    /// A tool without a name.
    #[cfg(feature = "mcp")]
    pub fn mcp(executor: Executor, tool: recourse_mcp::McpTool) -> Result<Self, SetupError> {
        let name = ToolName::new(tool.name.clone())
            .map_err(|_| SetupError::new("tools/list", "a tool has no name"))?;
        let parameters = if tool.input_schema.is_object() {
            tool.input_schema.clone()
        } else {
            any_object()
        };
        let description = tool.description.clone().unwrap_or_default();
        Ok(Self::new(
            name,
            description,
            parameters,
            executor,
            Route::Mcp(tool),
        ))
    }

    fn new(
        name: ToolName,
        description: String,
        parameters: Value,
        executor: Executor,
        route: Route,
    ) -> Self {
        Self {
            name,
            description,
            parameters,
            executor,
            route,
            report_hook: None,
            in_doubt: Arc::default(),
        }
    }

    /// Calls `hook` with the tool's name and the record of every call it
    /// runs (to log it, keep it, or show it to a person). Calls answered
    /// from memory without being sent have no record, and do not call it.
    #[must_use]
    pub fn with_report_hook(
        mut self,
        hook: impl Fn(&str, &CallReport) + Send + Sync + 'static,
    ) -> Self {
        self.report_hook = Some(Arc::new(hook));
        self
    }

    /// The name the model calls the tool by.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// What the tool does, as its server put it.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The JSON Schema of its arguments, as offered to the model.
    pub fn parameters(&self) -> &Value {
        &self.parameters
    }

    /// Runs one call with the model's `arguments` through the executor, and
    /// answers as [`tool_answer`] does. This is what rig runs for each call.
    pub async fn call(&self, arguments: Value) -> Result<ToolOutput, ToolExecutionError> {
        if let Some(earlier) = self.in_doubt.earlier(self.name(), &arguments) {
            return Err(not_sent_again(&earlier.model_message));
        }
        let call = self
            .build_call(arguments.clone())
            .map_err(|e| unbuildable(&e))?;
        let report = self.executor.execute(call).await;
        if let Some(hook) = &self.report_hook {
            hook(self.name(), &report);
        }
        self.in_doubt
            .record(self.name(), &arguments, &report.next());
        tool_answer(&report)
    }

    /// The model's `arguments` as a call to this tool: a [`CallSpec`] of
    /// them, aimed at the tool's route, with what its manifest (or MCP
    /// server) says of it.
    fn build_call(&self, arguments: Value) -> Result<Call, ConfigError> {
        let spec = CallSpec::new(arguments);
        let config = self.executor.config();
        match &self.route {
            Route::Http {
                target,
                method,
                idempotent,
                schema,
                reconciler,
            } => {
                let mut call = spec
                    .into_builder(target.clone(), config, None)?
                    .method(*method)
                    .capability(self.name());
                if let Some(idempotent) = idempotent {
                    call = call.declared_by_tool(*idempotent, Evidence::Manifest);
                }
                if let Some(schema) = schema {
                    call = call.compiled_schema(schema.clone());
                }
                if let Some(reconciler) = reconciler {
                    call = call.http_reconciler(reconciler.clone());
                }
                call.build()
            }
            #[cfg(feature = "mcp")]
            Route::Mcp(tool) => {
                let name = Target::parse(self.name())?;
                tool.prepare(spec.into_builder(name, config, None)?).build()
            }
        }
    }

    /// The tool as rig's [`DynamicTool`], to register with an agent
    /// (`AgentBuilder::dynamic_tools`).
    pub fn into_dynamic(self) -> DynamicTool {
        let name = self.name.clone();
        let description = self.description.clone();
        let parameters = self.parameters.clone();
        let tool = Arc::new(self);
        DynamicTool::new(name, description, parameters, move |arguments| {
            let tool = Arc::clone(&tool);
            Box::pin(async move { tool.call(arguments).await })
        })
    }
}

impl From<RecourseTool> for DynamicTool {
    fn from(tool: RecourseTool) -> Self {
        tool.into_dynamic()
    }
}

/// The answer to a call that repeats one whose outcome is in doubt: not sent.
fn not_sent_again(earlier: &str) -> ToolExecutionError {
    let message = format!(
        "recourse did not send this call: the same call with the same arguments was made \
         before and must not be repeated. What recourse said then: {earlier}"
    );
    ToolExecutionError::new(ToolErrorKind::Other, message.clone())
        .with_model_feedback(format!(
            "{DO_NOT_REPEAT_LINE}\nrecourse: next step do_not_repeat.\n{message}"
        ))
        .with_retryable(false)
        .with_code("do_not_repeat")
}

/// The answer when the call could not be built: the setup is wrong.
fn unbuildable(error: &ConfigError) -> ToolExecutionError {
    let why = recourse_protocol::redact(&error.to_string());
    let message = format!(
        "recourse could not build the call ({why}) and sent nothing. Now: tell the user the \
         tool's setup needs fixing; do not retry it as it is."
    );
    ToolExecutionError::new(ToolErrorKind::Other, message.clone())
        .with_model_feedback(format!("recourse: next step fix_configuration.\n{message}"))
        .with_retryable(false)
        .with_code("fix_configuration")
}
