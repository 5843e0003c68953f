//! `recourse approvals list|show|approve|reject`: a gateway's approvals
//! from a terminal, through its API, as the caller whose token
//! `RECOURSE_GATEWAY_TOKEN` is. Each shows what will be sent — the method
//! and URL or the MCP server and tool, the headers, the payload — beside the
//! reason and whose words it is; `approve` and `reject` print the request
//! they decide and bind the decision to it (its `request_sha256`), so a
//! request that changed meanwhile is not decided.
//!
//! Exit codes: 0 shown or decided; 1 the gateway refused (not an approver,
//! the asker's own call, decided already, no such approval, the request
//! changed); 2 the gateway could not be asked.

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::settings::Settings;

/// Where the gateway is, unless told.
const DEFAULT_GATEWAY: &str = "http://127.0.0.1:8780";

/// Arguments of `recourse approvals`.
#[derive(Debug, Args)]
pub(crate) struct ApprovalsArgs {
    /// The gateway's URL.
    #[arg(
        long,
        global = true,
        env = "RECOURSE_GATEWAY_URL",
        hide_env_values = true,
        default_value = DEFAULT_GATEWAY
    )]
    gateway: String,
    /// Print the gateway's JSON rather than the text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: ApprovalsCommand,
}

#[derive(Debug, Subcommand)]
enum ApprovalsCommand {
    /// The approvals waiting for a person that this caller sees, each with its request.
    #[command(after_help = "Example: recourse approvals list --gateway http://127.0.0.1:8780")]
    List,
    /// One approval, with the request it lets go.
    #[command(after_help = "Example: recourse approvals show 0193f2a4-…")]
    Show {
        /// The approval's id.
        id: String,
    },
    /// Approve: the request shown is sent, exactly as it is, once.
    #[command(
        after_help = "Example: recourse approvals approve 0193f2a4-… --note 'checked with finance'"
    )]
    Approve {
        /// The approval's id.
        id: String,
        /// What you say (stored, redacted).
        #[arg(long)]
        note: Option<String>,
    },
    /// Reject: the call fails, nothing is sent.
    #[command(
        after_help = "Example: recourse approvals reject 0193f2a4-… --note 'not this amount'"
    )]
    Reject {
        /// The approval's id.
        id: String,
        /// What you say (stored, redacted).
        #[arg(long)]
        note: Option<String>,
    },
}

pub(crate) async fn run(args: &ApprovalsArgs, settings: &Settings) -> Result<i32> {
    let gateway = Gateway::new(&args.gateway, settings.gateway_token.as_deref())?;
    match &args.command {
        ApprovalsCommand::List => {
            let (status, body) = gateway.get("/v1/approvals?state=pending").await?;
            if status != 200 {
                return refused(&body);
            }
            if args.json {
                outln!("{body}");
                return Ok(0);
            }
            let approvals = body["approvals"].as_array().cloned().unwrap_or_default();
            if approvals.is_empty() {
                outln!("no approval is waiting");
            }
            for (n, shown) in approvals.iter().enumerate() {
                if n > 0 {
                    outln!();
                }
                print_shown(shown)?;
            }
            Ok(0)
        }
        ApprovalsCommand::Show { id } => {
            let (status, body) = gateway.get(&approval_path(id)).await?;
            if status != 200 {
                return refused(&body);
            }
            if args.json {
                outln!("{body}");
            } else {
                print_shown(&body)?;
            }
            Ok(0)
        }
        ApprovalsCommand::Approve { id, note } => {
            decide(&gateway, id, "approve", note.as_deref(), args.json).await
        }
        ApprovalsCommand::Reject { id, note } => {
            decide(&gateway, id, "reject", note.as_deref(), args.json).await
        }
    }
}

/// Reads the approval, prints what is decided, and decides it bound to
/// that request's hash.
async fn decide(
    gateway: &Gateway,
    id: &str,
    decision: &str,
    note: Option<&str>,
    json: bool,
) -> Result<i32> {
    let (status, shown) = gateway.get(&approval_path(id)).await?;
    if status != 200 {
        return refused(&shown);
    }
    if !json {
        print_shown(&shown)?;
        outln!();
    }
    let mut body = json!({
        "decision": decision,
        "request_sha256": shown["approval"]["request_sha256"],
    });
    if let Some(note) = note {
        body["note"] = json!(note);
    }
    let (status, decided) = gateway.post(&approval_path(id), &body).await?;
    if status != 200 {
        return refused(&decided);
    }
    if json {
        outln!("{decided}");
    } else {
        outln!(
            "{}: {} by {}",
            decided["id"].as_str().unwrap_or(id),
            decided["state"].as_str().unwrap_or("?"),
            decided["decided_by"].as_str().unwrap_or("?")
        );
    }
    Ok(0)
}

fn approval_path(id: &str) -> String {
    let id: String = id
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("/v1/approvals/{id}")
}

/// The gateway's refusal, on stderr: exit 1.
fn refused(body: &Value) -> Result<i32> {
    let code = body["error"]["code"].as_str().unwrap_or("REFUSED");
    let message = body["error"]["message"]
        .as_str()
        .unwrap_or("the gateway refused");
    eprintln!("recourse approvals: {code}: {message}");
    Ok(1)
}

/// One approval, as a person reads it before deciding.
fn print_shown(shown: &Value) -> Result<()> {
    let approval = &shown["approval"];
    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
    outln!("approval  {}", text(&approval["id"]));
    outln!("state     {}", text(&approval["state"]));
    outln!("call      {}", text(&shown["call_id"]));
    outln!("asked by  {}", text(&shown["caller"]));
    let whose = match shown["asked_by"].as_str() {
        Some("request") => "the requester's words, unchecked",
        Some("manifest") => "the tool's manifest's words",
        Some("policy") => "the operator's policy file's words",
        _ => "whose words is not known",
    };
    outln!("why       {} ({whose})", text(&approval["reason"]));
    outln!("expires   {}", text(&approval["expires_at"]));
    if let Some(by) = approval["decided_by"].as_str() {
        outln!("decided   by {by} at {}", text(&approval["decided_at"]));
    }
    let request = &shown["request"];
    if request.is_null() {
        outln!("request   (no longer held: dispatched or ended)");
        return Ok(());
    }
    if let (Some(method), Some(url)) = (request["method"].as_str(), request["url"].as_str()) {
        outln!("sends     {method} {url}");
    }
    if let Some(server) = request["mcp_server"].as_str() {
        outln!("server    {server}");
    }
    if let Some(tool) = request["tool"].as_str() {
        outln!("tool      {tool}");
    }
    for header in request["headers"].as_array().into_iter().flatten() {
        outln!(
            "header    {}: {}",
            text(&header["name"]),
            text(&header["value"])
        );
    }
    let payload = serde_json::to_string_pretty(&request["payload"]).unwrap_or_default();
    outln!("payload   {}", payload.replace('\n', "\n          "));
    outln!("sha256    {}", text(&approval["request_sha256"]));
    Ok(())
}

/// The gateway, asked as the caller whose token is given.
struct Gateway {
    base: String,
    token: Option<String>,
    client: reqwest::Client,
}

impl Gateway {
    fn new(base: &str, token: Option<&str>) -> Result<Self> {
        let _: reqwest::Url = base
            .parse()
            .with_context(|| format!("--gateway {base:?} is not a URL"))?;
        // recourse's HTTPS client: the platform's roots and `--ca-file`, and
        // a loopback gateway asked directly — the token never goes through
        // a proxy the environment names.
        let builder = recourse::tls::client_builder()
            .timeout(std::time::Duration::from_secs(30))
            .redirect(reqwest::redirect::Policy::none());
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            token: token.map(str::to_owned),
            client: builder.build().context("building the HTTP client")?,
        })
    }

    async fn get(&self, path: &str) -> Result<(u16, Value)> {
        self.send(self.client.get(format!("{}{path}", self.base)))
            .await
    }

    async fn post(&self, path: &str, body: &Value) -> Result<(u16, Value)> {
        self.send(self.client.post(format!("{}{path}", self.base)).json(body))
            .await
    }

    async fn send(&self, mut request: reqwest::RequestBuilder) -> Result<(u16, Value)> {
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("asking the gateway at {}", self.base))?;
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .context("reading the gateway's answer")?;
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok((status, body))
    }
}
