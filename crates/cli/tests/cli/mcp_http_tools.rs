//! `recourse tools serve --mcp-http`: the reference tools over Streamable
//! HTTP, one store of exports whichever process (a proxy, a gateway, a
//! proxy started again) calls it.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_recourse");

/// The tools' process, killed when dropped.
pub(crate) struct McpHttpTools {
    child: Child,
    /// The MCP endpoint (the second line the command prints).
    pub(crate) mcp_url: String,
}

impl McpHttpTools {
    /// Starts the tools with `args` added (faults, timings).
    pub(crate) fn start(args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(["tools", "serve", "--port", "0", "--mcp-http"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let _base = lines.next().unwrap().unwrap();
        let mcp_url = lines.next().unwrap().unwrap();
        Self { child, mcp_url }
    }
}

impl Drop for McpHttpTools {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
