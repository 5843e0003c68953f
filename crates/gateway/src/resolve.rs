//! What a request asks for, resolved against the gateway's rules: an
//! allowed HTTP target, or an MCP tool on a server the gateway may reach or
//! start — the executor to run it with, and the (unchecked) call; or, for a
//! request that waits for approval, only checked ([`check`]), nothing
//! started.

use std::sync::Arc;

use recourse::{CallBuilder, Executor, HttpTransport, Target, Transport};
use recourse_tool::ToolFailure;
use recourse_tool::protocol::ToolError;

use recourse_door::Refusal;

use crate::gateway::Gateway;
use crate::request::{self, CallRequest};
use recourse_door::Caller;

/// The executor and the (unchecked) call a request asks for (its payload
/// moved into the call, not copied).
pub(crate) async fn resolve(
    g: &Gateway,
    mut req: CallRequest,
) -> Result<(Arc<Executor>, CallBuilder), ToolFailure> {
    if let Some(template) = &req.reconcile {
        g.targets.check_template(template)?;
    }
    if let Some(url) = req.verify.as_ref().and_then(|v| v.url.as_deref()) {
        g.targets.check("verify.url", url)?;
    }
    match (req.mcp.take(), req.url.take()) {
        (Some(_), Some(_)) => Err(invalid_target("give url or mcp, not both").into()),
        (Some(mcp), None) => {
            // Boxed: starting an MCP session is a large future, and every
            // call's state would otherwise be sized for it.
            let (transport, call) = Box::pin(mcp_call(g, req, &mcp)).await?;
            Ok((Arc::new(g.executor.with_transport(transport)), call))
        }
        (None, Some(url)) => {
            let target = g.targets.call_target("url", &url)?;
            let call = request::call(req, target, &g.targets.allowlist(), g.executor.config())?;
            Ok((Arc::clone(&g.executor), call))
        }
        (None, None) => Err(Refusal::MissingRequiredField
            .error("give url (or mcp)")
            .detail("field", "url")
            .into()),
    }
}

fn invalid_target(message: &str) -> ToolError {
    Refusal::InvalidTarget.error(message).detail("field", "mcp")
}

/// A request checked as [`resolve`] checks it — its target allowed, its
/// fields usable, for `caller` — without starting anything (no MCP session):
/// what a call that waits for approval is checked with before it waits.
pub(crate) struct Checked {
    /// Where it goes: the URL as parsed, or the MCP tool's name.
    pub(crate) target: String,
    /// Its idempotency key as claimed (in the caller's space), if it has one.
    pub(crate) key: Option<String>,
}

/// Checks `req` for `caller` (its `approval` aside): what [`resolve`]
/// would refuse, refused now.
pub(crate) fn check(
    g: &Gateway,
    req: &CallRequest,
    caller: &Caller,
) -> Result<Checked, ToolFailure> {
    let mut req = req.clone();
    req.approval = None;
    if let Some(template) = &req.reconcile {
        g.targets.check_template(template)?;
    }
    if let Some(url) = req.verify.as_ref().and_then(|v| v.url.as_deref()) {
        g.targets.check("verify.url", url)?;
    }
    let (target, call) = match (req.mcp.take(), req.url.take()) {
        (Some(_), Some(_)) => return Err(invalid_target("give url or mcp, not both").into()),
        (Some(mcp), None) => {
            let (_, tool) = mcp_target(g, &mcp)?;
            let name = Target::parse(&tool).map_err(|e| invalid_target(&e.to_string()))?;
            // A read over HTTP gets its transport when the call is dispatched.
            req.verify = req.verify.filter(|v| v.url.is_none());
            let call = request::call(req, name, &g.targets.allowlist(), g.executor.config())?;
            (tool, call)
        }
        (None, Some(url)) => {
            let target = g.targets.call_target("url", &url)?;
            let call = request::call(
                req,
                target.clone(),
                &g.targets.allowlist(),
                g.executor.config(),
            )?;
            (target.to_string(), call)
        }
        (None, None) => {
            return Err(Refusal::MissingRequiredField
                .error("give url (or mcp)")
                .detail("field", "url")
                .into());
        }
    };
    let call = request::build(call.caller(caller.name(), g.key_scope()))?;
    Ok(Checked {
        target,
        key: call.idempotency_key().map(str::to_owned),
    })
}

/// `mcp: {command | url, tool}`: a session with the MCP server, its tool aimed at.
/// URLs pass the same allowlist as HTTP targets; commands only when an
/// `--allow-mcp-command` pattern matches the whole command line, and they
/// start with a cleared environment plus `--mcp-env` names.
async fn mcp_call(
    g: &Gateway,
    req: CallRequest,
    mcp: &serde_json::Value,
) -> Result<(Arc<dyn Transport>, CallBuilder), ToolFailure> {
    let (target, tool) = mcp_target(g, mcp)?;
    let tool = tool.as_str();
    let name = Target::parse(tool).map_err(|e| invalid_target(&e.to_string()))?;
    let config = g.executor.config();
    let deadline = req
        .limits
        .deadline_secs
        .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
        .or(config.deadline);
    let reads_url = req.verify.as_ref().is_some_and(|v| v.url.is_some());
    let call = request::call(req, name, &g.targets.allowlist(), config)?;
    let (transport, mut call) =
        recourse_mcp::connect_call(target, tool, call, config.request_timeout, deadline, None)
            .await
            .map_err(|e| ToolFailure::from(Refusal::McpUnavailable.error(e.to_string())))?;
    if reads_url {
        let http = HttpTransport::builder()
            .build()
            .map_err(|e| Refusal::HttpClient.error(e.to_string()))?;
        call = call.verify_transport(Arc::new(http));
    }
    Ok((transport, call))
}

/// The MCP server `mcp` names — allowed, as [`mcp_call`] says — and its tool's name.
fn mcp_target(
    g: &Gateway,
    mcp: &serde_json::Value,
) -> Result<(recourse_mcp::McpTarget, String), ToolFailure> {
    let tool = mcp["tool"].as_str().filter(|t| !t.trim().is_empty());
    let Some(tool) = tool else {
        return Err(invalid_target("mcp.tool is required").into());
    };
    let target = match (mcp["command"].as_str(), mcp["url"].as_str()) {
        (Some(line), None) => {
            let target = recourse_mcp::McpTarget::command_line(line)
                .map_err(|e| invalid_target(&e.to_string()))?;
            if let recourse_mcp::McpTarget::Command { program, args, .. } = &target
                && !g.mcp.commands.iter().any(|p| p.matches(program, args))
            {
                return Err(Refusal::CommandNotAllowed
                    .error(format!(
                        "this gateway starts no MCP server {target}; start it with an --allow-mcp-command \
                         pattern matching the whole command line (e.g. --allow-mcp-command '{program} **')"
                    ),
                )
                .into());
            }
            target
                .with_pass_env(g.mcp.env.iter().cloned())
                .map_err(|e| invalid_target(&e.to_string()))?
        }
        (None, Some(url)) => {
            let target = g.targets.check("mcp", url)?;
            recourse_mcp::McpTarget::url(target.as_str())
                .map_err(|e| invalid_target(&e.to_string()))?
        }
        _ => return Err(invalid_target("mcp needs exactly one of command or url").into()),
    };
    Ok((target, tool.to_owned()))
}
