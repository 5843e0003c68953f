//! Why a door refused a request, or could not run it: one enum, whose
//! codes, statuses, categories and MCP failure classes both doors — the
//! gateway's envelopes and OpenAPI document, the proxy's `toolFailure` —
//! take from here.

use recourse::target::{TargetError, TargetErrorKind};
use recourse_protocol::ToolError;
use recourse_protocol::mcp::FailureClass;

/// A refusal of a door's own: the `error.code` of the envelope the gateway
/// answers (with its HTTP status and category) and of the `toolFailure` the
/// MCP proxy answers (with its class). A tool's failure is not a refusal:
/// it is a record.
///
/// ```
/// use recourse_door::Refusal;
/// use recourse_protocol::mcp::FailureClass;
///
/// let e = Refusal::IdempotencyKeyReused.error("use a new key for a new request");
/// assert_eq!(e.code, "IDEMPOTENCY_KEY_REUSED");
/// assert_eq!(Refusal::IdempotencyKeyReused.status(), 422);
/// assert_eq!(Refusal::IdempotencyKeyReused.class(), FailureClass::Capability);
/// assert!(Refusal::ALL.iter().any(|r| r.code() == "CALL_IN_PROGRESS"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The gateway's token is required and the request has none that matches.
    Unauthorized,
    /// The gateway runs without a token and the request names a host other
    /// than a loopback one (a web page's, by DNS rebinding).
    HostNotAllowed,
    /// A field of the request cannot be used (`details.field` names it).
    InvalidCall,
    /// A number in the request would not reach the tool as written
    /// (`details.field`, `details.pointer`).
    NumberNotRepresentable,
    /// The target (or an MCP server's URL or command line) cannot be read.
    InvalidTarget,
    /// A required field is missing (`details.field` names it).
    MissingRequiredField,
    /// The target is not allowed (loopback only unless `--allow-target`).
    TargetNotAllowed,
    /// No `--allow-mcp-command` pattern matches the MCP server's command line.
    CommandNotAllowed,
    /// The request has an idempotency key, or needs a person's approval,
    /// and the gateway keeps no journal.
    JournalRequired,
    /// The journal's routes, and the gateway keeps no journal.
    NoJournal,
    /// The journal could not be read or written; nothing was sent.
    JournalUnavailable,
    /// No call with this id in the journal.
    CallNotFound,
    /// A query parameter of the journal's list cannot be used.
    InvalidQuery,
    /// The idempotency key belongs to a different request.
    IdempotencyKeyReused,
    /// The call with this idempotency key is still running (`Retry-After`).
    CallInProgress,
    /// The call stopped unexpectedly inside the gateway: its outcome is unknown.
    CallAborted,
    /// The MCP server could not be started or reached; nothing was sent.
    McpUnavailable,
    /// The gateway could not build its HTTP client for a read.
    HttpClient,
    /// Settling a call by hand, or deciding an approval, needs a caller
    /// with the `approver` role.
    NotApprover,
    /// The call is not open (it finished, or its process still holds it):
    /// only an `unknown` call, or one left in flight past its lease, is
    /// settled by hand.
    CallNotSettleable,
    /// No approval with this id in the journal.
    ApprovalNotFound,
    /// The request awaiting approval is not the one whose `request_sha256`
    /// the approver sent: nothing was decided.
    ApprovalStale,
    /// The approval was decided already — approved, rejected, or expired.
    ApprovalDecided,
    /// The caller that asked for an approval may not decide it (a
    /// one-person setup allows it with `--allow-self-approval`).
    SelfApproval,
    /// The call needs a person's approval and nobody but its own caller
    /// may give it (one token, or none): refused, nothing sent, unless the
    /// server allows self-approval.
    NoOtherApprover,
    /// Too many requests from this peer failed authentication: refused
    /// until `Retry-After` passes.
    AuthRateLimited,
    /// The tool's capability manifest cannot be read now (an error, a
    /// timeout, a 5xx, not JSON): a call that may write is refused, nothing
    /// sent, until it can be.
    ManifestUnavailable,
}

impl Refusal {
    /// Every refusal, in declaration order (what the OpenAPI document lists).
    pub const ALL: [Refusal; 27] = [
        Self::Unauthorized,
        Self::HostNotAllowed,
        Self::InvalidCall,
        Self::NumberNotRepresentable,
        Self::InvalidTarget,
        Self::MissingRequiredField,
        Self::TargetNotAllowed,
        Self::CommandNotAllowed,
        Self::JournalRequired,
        Self::NoJournal,
        Self::JournalUnavailable,
        Self::CallNotFound,
        Self::InvalidQuery,
        Self::IdempotencyKeyReused,
        Self::CallInProgress,
        Self::CallAborted,
        Self::McpUnavailable,
        Self::HttpClient,
        Self::NotApprover,
        Self::CallNotSettleable,
        Self::ApprovalNotFound,
        Self::ApprovalStale,
        Self::ApprovalDecided,
        Self::SelfApproval,
        Self::NoOtherApprover,
        Self::AuthRateLimited,
        Self::ManifestUnavailable,
    ];

    /// The envelope's `error.code`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Unauthorized => "UNAUTHORIZED",
            Self::HostNotAllowed => "HOST_NOT_ALLOWED",
            Self::InvalidCall => "INVALID_CALL",
            Self::NumberNotRepresentable => "NUMBER_NOT_REPRESENTABLE",
            Self::InvalidTarget => "INVALID_TARGET",
            Self::MissingRequiredField => "MISSING_REQUIRED_FIELD",
            Self::TargetNotAllowed => "TARGET_NOT_ALLOWED",
            Self::CommandNotAllowed => "COMMAND_NOT_ALLOWED",
            Self::JournalRequired => "JOURNAL_REQUIRED",
            Self::NoJournal => "NO_JOURNAL",
            Self::JournalUnavailable => "JOURNAL_UNAVAILABLE",
            Self::CallNotFound => "CALL_NOT_FOUND",
            Self::InvalidQuery => "INVALID_QUERY",
            Self::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            Self::CallInProgress => "CALL_IN_PROGRESS",
            Self::CallAborted => "CALL_ABORTED",
            Self::McpUnavailable => "MCP_UNAVAILABLE",
            Self::HttpClient => "HTTP_CLIENT",
            Self::NotApprover => "NOT_APPROVER",
            Self::CallNotSettleable => "CALL_NOT_SETTLEABLE",
            Self::ApprovalNotFound => "APPROVAL_NOT_FOUND",
            Self::ApprovalStale => "APPROVAL_STALE",
            Self::ApprovalDecided => "APPROVAL_DECIDED",
            Self::SelfApproval => "SELF_APPROVAL",
            Self::NoOtherApprover => "NO_OTHER_APPROVER",
            Self::AuthRateLimited => "AUTH_RATE_LIMITED",
            Self::ManifestUnavailable => "MANIFEST_UNAVAILABLE",
        }
    }

    /// The HTTP status it is answered with.
    pub fn status(self) -> u16 {
        match self {
            Self::Unauthorized => 401,
            Self::InvalidCall
            | Self::NumberNotRepresentable
            | Self::InvalidTarget
            | Self::MissingRequiredField
            | Self::JournalRequired
            | Self::InvalidQuery => 400,
            Self::HostNotAllowed
            | Self::TargetNotAllowed
            | Self::CommandNotAllowed
            | Self::NotApprover
            | Self::SelfApproval
            | Self::NoOtherApprover => 403,
            Self::AuthRateLimited => 429,
            Self::NoJournal | Self::CallNotFound | Self::ApprovalNotFound => 404,
            Self::IdempotencyKeyReused => 422,
            Self::CallInProgress
            | Self::CallNotSettleable
            | Self::ApprovalStale
            | Self::ApprovalDecided => 409,
            Self::CallAborted => 500,
            Self::JournalUnavailable
            | Self::McpUnavailable
            | Self::HttpClient
            | Self::ManifestUnavailable => 503,
        }
    }

    /// The MCP failure class it is answered with: its category's
    /// ([`FailureClass::of`]), so the gateway's envelope and the proxy's
    /// `toolFailure` say the same of it.
    pub fn class(self) -> FailureClass {
        FailureClass::of(&self.error(String::new()).category)
    }

    /// What it means, for the OpenAPI document.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::Unauthorized => {
                "RECOURSE_GATEWAY_TOKEN is set and the request has no matching `Authorization: Bearer` token"
            }
            Self::HostNotAllowed => {
                "the gateway runs without a token and the request names a host other than a loopback one (DNS rebinding)"
            }
            Self::InvalidCall => "a field of the request cannot be used (`details.field`)",
            Self::NumberNotRepresentable => {
                "a number would not reach the tool as written: beyond a 64-bit integer, or more digits than a double holds (`details.pointer`)"
            }
            Self::InvalidTarget => "the target cannot be read as a URL or tool name",
            Self::MissingRequiredField => "a required field is missing (`details.field`)",
            Self::TargetNotAllowed => {
                "the target is not allowed (loopback only unless --allow-target)"
            }
            Self::CommandNotAllowed => {
                "no --allow-mcp-command pattern matches the MCP server's command line"
            }
            Self::JournalRequired => {
                "an idempotency key, or a call that needs approval, and the gateway keeps no journal (--journal none)"
            }
            Self::NoJournal => "the gateway runs with --journal none",
            Self::JournalUnavailable => "the journal does not answer; nothing was sent",
            Self::CallNotFound => "no call with this id in the journal",
            Self::InvalidQuery => "an unknown parameter, state or limit",
            Self::IdempotencyKeyReused => {
                "the key belongs to a different request; use a new key for a new request"
            }
            Self::CallInProgress => {
                "the call with this idempotency key is still running; ask again after Retry-After seconds"
            }
            Self::CallAborted => {
                "the call stopped unexpectedly inside the gateway (UNKNOWN_OUTCOME); check before writing again"
            }
            Self::McpUnavailable => {
                "the MCP server could not be started or reached; nothing was sent"
            }
            Self::HttpClient => "the gateway could not build its HTTP client; nothing was sent",
            Self::NotApprover => {
                "settling a call by hand, or deciding an approval, needs a caller with the approver role"
            }
            Self::CallNotSettleable => {
                "the call is not open: only an unknown call, or one left in flight past its lease, is settled by hand"
            }
            Self::ApprovalNotFound => "no approval with this id in the journal",
            Self::ApprovalStale => {
                "the request awaiting approval is not the one whose request_sha256 was sent; nothing was decided: read it again"
            }
            Self::ApprovalDecided => {
                "the approval was decided already (`details.state`: approved, rejected or expired); nothing changed"
            }
            Self::SelfApproval => {
                "the caller that asked for the approval may not decide it; another approver must (--allow-self-approval allows it)"
            }
            Self::NoOtherApprover => {
                "the call needs approval and no approver but its own caller exists (one token, or none); nothing was sent"
            }
            Self::AuthRateLimited => {
                "too many requests from this address failed authentication; ask again after Retry-After seconds"
            }
            Self::ManifestUnavailable => {
                "the tool's capability manifest cannot be read now; a call that may write is not sent until it can be (Retry-After)"
            }
        }
    }

    /// The envelope's error: this refusal's code and category, `message`,
    /// and whether sending the request again may help.
    pub fn error(self, message: impl Into<String>) -> ToolError {
        let message = message.into();
        let code = self.code();
        match self {
            Self::Unauthorized => ToolError::auth_error(code, message),
            Self::HostNotAllowed
            | Self::TargetNotAllowed
            | Self::CommandNotAllowed
            | Self::NotApprover
            | Self::SelfApproval
            | Self::NoOtherApprover => ToolError::permission_denied(code, message),
            Self::AuthRateLimited => ToolError::rate_limit(code, message).retryable(true),
            Self::NoJournal | Self::CallNotFound | Self::ApprovalNotFound => {
                ToolError::not_found(code, message)
            }
            Self::CallAborted => ToolError::unknown_outcome(code, message),
            Self::JournalUnavailable
            | Self::McpUnavailable
            | Self::CallInProgress
            | Self::ManifestUnavailable => ToolError::service_error(code, message).retryable(true),
            Self::HttpClient => ToolError::service_error(code, message),
            Self::IdempotencyKeyReused => ToolError::input_error(code, message).retryable(false),
            // A field the model can add: correctable, as its envelope says.
            Self::MissingRequiredField => ToolError::input_error(code, message).retryable(true),
            Self::InvalidCall
            | Self::NumberNotRepresentable
            | Self::InvalidTarget
            | Self::JournalRequired
            | Self::InvalidQuery
            | Self::CallNotSettleable
            | Self::ApprovalStale
            | Self::ApprovalDecided => ToolError::input_error(code, message),
        }
    }

    /// The refusal a target check gives.
    pub fn of_target(error: &TargetError) -> Self {
        match error.kind() {
            TargetErrorKind::NotAllowed => Self::TargetNotAllowed,
            _ => Self::InvalidTarget,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_refusal_is_listed_once_with_a_code_of_its_own() {
        let codes: HashSet<&str> = Refusal::ALL.iter().map(|r| r.code()).collect();
        assert_eq!(codes.len(), Refusal::ALL.len());
        // A new refusal does not compile until it has a place in `ALL`.
        for r in Refusal::ALL {
            let listed = match r {
                Refusal::Unauthorized
                | Refusal::HostNotAllowed
                | Refusal::InvalidCall
                | Refusal::NumberNotRepresentable
                | Refusal::InvalidTarget
                | Refusal::MissingRequiredField
                | Refusal::TargetNotAllowed
                | Refusal::CommandNotAllowed
                | Refusal::JournalRequired
                | Refusal::NoJournal
                | Refusal::JournalUnavailable
                | Refusal::CallNotFound
                | Refusal::InvalidQuery
                | Refusal::IdempotencyKeyReused
                | Refusal::CallInProgress
                | Refusal::CallAborted
                | Refusal::McpUnavailable
                | Refusal::HttpClient
                | Refusal::NotApprover
                | Refusal::CallNotSettleable
                | Refusal::ApprovalNotFound
                | Refusal::ApprovalStale
                | Refusal::ApprovalDecided
                | Refusal::SelfApproval
                | Refusal::NoOtherApprover
                | Refusal::AuthRateLimited
                | Refusal::ManifestUnavailable => true,
            };
            assert!(listed);
        }
    }

    #[test]
    fn an_envelopes_status_agrees_with_its_category_for_the_client() {
        for r in Refusal::ALL {
            let e = r.error("m");
            assert_eq!(e.code, r.code());
            let retryable = matches!(
                r,
                Refusal::JournalUnavailable
                    | Refusal::McpUnavailable
                    | Refusal::CallInProgress
                    | Refusal::MissingRequiredField
                    | Refusal::AuthRateLimited
                    | Refusal::ManifestUnavailable
            );
            assert_eq!(e.retryable, retryable, "{}", r.code());
        }
    }

    #[test]
    fn a_target_errors_code_is_its_refusals() {
        let not_allowed = recourse::target::TargetAllowlist::default()
            .check_url(&recourse::target::TargetUrl::parse("http://192.0.2.1/x").unwrap())
            .unwrap_err();
        assert_eq!(Refusal::of_target(&not_allowed).code(), not_allowed.code());
        let invalid = recourse::target::TargetUrl::parse("http://exa mple/").unwrap_err();
        assert_eq!(Refusal::of_target(&invalid).code(), invalid.code());
    }
}
