//! The command line's approver: flags first, then a person at a terminal.
//!
//! `--reject STEP` always wins; `--approve STEP` and `--approve-all` approve;
//! otherwise a person is asked on the terminal. With no terminal to ask and no
//! flag, the step is rejected: nothing that needs approval runs unattended.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};

use recourse::transport::BoxFuture;
use recourse::workflow::{ApprovalRequest, Approver, StepApproval};
use tokio::sync::Mutex;

/// Approves by flag, or by asking on the terminal.
#[derive(Debug)]
pub(crate) struct CliApprover {
    all: bool,
    approve: HashSet<String>,
    reject: HashSet<String>,
    interactive: bool,
    /// One question at a time, though steps run concurrently.
    asking: Mutex<()>,
}

impl CliApprover {
    pub(crate) fn new(all: bool, approve: &[String], reject: &[String]) -> Self {
        Self {
            all,
            approve: approve.iter().cloned().collect(),
            reject: reject.iter().cloned().collect(),
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            asking: Mutex::new(()),
        }
    }

    async fn ask(&self, request: &ApprovalRequest<'_>) -> StepApproval {
        let _turn = self.asking.lock().await;
        let question = format!(
            "step {:?} of plan {:?} needs approval\n  POST {}\n  {}\nApprove? [y/N] ",
            request.step_id,
            request.plan_id,
            request.target,
            serde_json::to_string_pretty(request.payload)
                .unwrap_or_default()
                .replace('\n', "\n  "),
        );
        let answer = tokio::task::spawn_blocking(move || {
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "{question}");
            let _ = stderr.flush();
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).map(|_| line)
        })
        .await;
        match answer {
            Ok(Ok(line)) if matches!(line.trim().to_lowercase().as_str(), "y" | "yes") => {
                StepApproval::Approved
            }
            Ok(Ok(_)) => StepApproval::rejected("declined at the terminal"),
            _ => StepApproval::rejected("could not read an answer from the terminal"),
        }
    }
}

impl Approver for CliApprover {
    fn review<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, StepApproval> {
        Box::pin(async move {
            if self.reject.contains(request.step_id) {
                StepApproval::rejected("--reject")
            } else if self.all || self.approve.contains(request.step_id) {
                StepApproval::Approved
            } else if self.interactive {
                self.ask(&request).await
            } else {
                StepApproval::rejected(
                    "no terminal to ask and no --approve STEP or --approve-all given",
                )
            }
        })
    }
}
