//! A gateway in this process on a loopback port — what `recourse serve`
//! serves — on a journal a proxy shares, for a person's approvals.

use std::path::Path;
use std::sync::Arc;

use recourse::ExecutorConfig;
use recourse_gateway::{Callers, GatewayConfig, router};
use tokio_util::sync::CancellationToken;

/// The gateway, stopped when dropped.
pub struct GatewayOnLoopback {
    /// Its base URL.
    pub url: String,
    stop: CancellationToken,
}

impl GatewayOnLoopback {
    /// A gateway on the SQLite journal at `journal`, serving the callers of
    /// the tokens file at `tokens`, starting MCP servers only for `allow`.
    pub async fn start(journal: &Path, tokens: &Path, allow: &[&str]) -> Self {
        let mut config = GatewayConfig::new(ExecutorConfig::default())
            .with_callers(Callers::from_file(tokens).expect("a tokens file"))
            .with_journal(super::journal_at(journal).await);
        for pattern in allow {
            config = config.allow_mcp_command((*pattern).to_owned());
        }
        let gateway = Arc::new(config.build().expect("the gateway builds"));
        let stop = CancellationToken::new();
        let url = format!(
            "http://{}",
            super::on_loopback(router(gateway), &stop).await
        );
        Self { url, stop }
    }
}

impl Drop for GatewayOnLoopback {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
