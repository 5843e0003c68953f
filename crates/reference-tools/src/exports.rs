//! `POST /api/exports`, `GET /api/exports/{operation_id}` and `POST
//! /api/exports/lookup`: a non-idempotent write, its operation lookup, and
//! a read of the exports a source has.
//!
//! An export is a write: each accepted call commits a new export and is
//! counted. It is therefore declared *not* idempotent, and it honours an
//! `Idempotency-Key` header so that a resend can be made safe: the first
//! call with a key commits and its result is kept; a later call with the same
//! key and the same payload replays that result without writing again; the
//! same key with a different payload is refused with 422
//! `IDEMPOTENCY_KEY_REUSED`. Only committed calls bind a key — a payload
//! rejected as invalid writes nothing, so a corrected payload may reuse it.
//!
//! The lookup reconciles an unknown outcome. It accepts either an operation
//! id (from `details.operation_id` of an `UNKNOWN_OUTCOME`, or a result) or
//! the `Idempotency-Key` the call was sent with — after a dropped connection
//! the key is all a client has. It answers `committed` (with the result),
//! `pending` (the write is still running), or `not_committed` — also for ids
//! and keys it has never seen: this server is the only writer, so an
//! operation it has no record of did not commit. The record lives as long as
//! the server process.
//!
//! The read (`exports_lookup`) lists the committed exports of a source in a
//! format (of a version, when given), oldest first, with the newest as
//! `latest` (`null` when there is none). It needs no key or operation id,
//! so a caller can verify a write by its inputs alone: `/latest exists`.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use recourse_tool::protocol::ToolError;
use recourse_tool::{Success, ToolFailure, ToolJson, ToolResult};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::Shared;
use crate::export_store::{Begin, ExportResult, Lookup};

/// Input of `POST /api/exports`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ExportInput {
    /// The data source to export, e.g. "sales-2024".
    #[schemars(example = &"sales-2024")]
    pub(crate) source_id: String,
    /// The source version; the latest when omitted.
    pub(crate) version: Option<u32>,
    /// The file format: "pdf", "docx" or "csv".
    #[schemars(example = &"pdf")]
    pub(crate) format: String,
}

/// Input of `POST /api/exports/lookup`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ExportLookupInput {
    /// The data source, e.g. "sales-2024".
    #[schemars(example = &"sales-2024")]
    pub(crate) source_id: String,
    /// The file format: "pdf", "docx" or "csv".
    #[schemars(example = &"pdf")]
    pub(crate) format: String,
    /// Only exports of this version; any version when omitted.
    pub(crate) version: Option<u32>,
}

/// Latency injected into the write by the `slow` fault (a request extension).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WriteLatency(pub(crate) Duration);

#[derive(Debug)]
struct Source {
    id: &'static str,
    public: bool,
    /// Row counts of versions 1, 2, …
    rows: &'static [u64],
}

const SOURCES: [Source; 3] = [
    Source {
        id: "sales-2024",
        public: true,
        rows: &[1200, 1350, 1420],
    },
    Source {
        id: "inventory",
        public: true,
        rows: &[800, 815],
    },
    Source {
        id: "hr-salaries",
        public: false,
        rows: &[300],
    },
];

const FORMATS: [(&str, u64); 3] = [("pdf", 210), ("docx", 180), ("csv", 96)];

const MAX_KEY_LEN: usize = 255;

/// The write handler.
pub(crate) async fn create(
    State(shared): State<Arc<Shared>>,
    latency: Option<Extension<WriteLatency>>,
    headers: HeaderMap,
    ToolJson(input): ToolJson<ExportInput>,
) -> ToolResult<ExportResult> {
    let key = idempotency_key(&headers)?;
    let fingerprint = json!({
        "source_id": input.source_id, "version": input.version, "format": input.format,
    });
    if let Some(key) = &key
        && let Some(previous) = shared.exports.replay(key, &fingerprint)?
    {
        return Ok(Success(previous));
    }
    let plan = validate(&input)?;
    let operation_id = match shared.exports.begin(key.as_deref(), fingerprint) {
        Begin::Started(id) => id,
        Begin::Replay(result) => return Ok(Success(*result)),
        Begin::Refused(failure) => return Err(failure),
    };
    let result = plan.into_result(operation_id.clone());
    let latency = latency.map(|Extension(WriteLatency(d))| d);
    // The write runs to completion even if the client goes away meanwhile.
    let store = Arc::clone(&shared);
    let write = tokio::spawn(async move {
        if let Some(latency) = latency {
            tokio::time::sleep(latency).await;
        }
        store.exports.commit(&operation_id, result.clone());
        result
    });
    match write.await {
        Ok(result) => Ok(Success(result)),
        Err(_) => Err(ToolError::unknown_outcome(
            "UNKNOWN_OUTCOME",
            "The export write failed unexpectedly; look the operation up before resending",
        )
        .into()),
    }
}

/// The lookup handler.
pub(crate) async fn lookup(
    State(shared): State<Arc<Shared>>,
    Path(id): Path<String>,
) -> ToolResult<Value> {
    let data = match shared.exports.lookup(&id) {
        Lookup::Committed(result) => {
            json!({"operation_id": result.operation_id, "state": "committed", "result": result})
        }
        Lookup::Pending(operation_id) => json!({"operation_id": operation_id, "state": "pending"}),
        Lookup::Unknown => json!({"operation_id": id, "state": "not_committed"}),
    };
    Ok(Success(data))
}

/// The read handler: the committed exports of a source in a format.
pub(crate) async fn exports_of(
    State(shared): State<Arc<Shared>>,
    ToolJson(input): ToolJson<ExportLookupInput>,
) -> ToolResult<Value> {
    let exports = shared
        .exports
        .committed_for(&input.source_id, &input.format, input.version);
    Ok(Success(json!({
        "source_id": input.source_id,
        "format": input.format,
        "version": input.version,
        "count": exports.len(),
        "latest": exports.last(),
        "exports": exports,
    })))
}

fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ToolFailure> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value.to_str().map(str::trim).unwrap_or("");
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(ToolError::input_error(
            "INVALID_IDEMPOTENCY_KEY",
            format!("`Idempotency-Key` must be 1 to {MAX_KEY_LEN} visible ASCII characters"),
        )
        .detail("header", "Idempotency-Key")
        .into());
    }
    Ok(Some(key.to_owned()))
}

/// A validated export request.
#[derive(Debug)]
struct Plan {
    source: &'static Source,
    version: u32,
    format: &'static str,
    bytes_per_row: u64,
}

impl Plan {
    fn into_result(self, operation_id: String) -> ExportResult {
        let rows = self.source.rows[self.version as usize - 1];
        ExportResult {
            operation_id,
            source_id: self.source.id.to_owned(),
            version: self.version,
            format: self.format.to_owned(),
            file_name: format!("{}-v{}.{}", self.source.id, self.version, self.format),
            size_bytes: rows * self.bytes_per_row,
        }
    }
}

fn validate(input: &ExportInput) -> Result<Plan, ToolError> {
    let Some(&(format, bytes_per_row)) = FORMATS.iter().find(|(f, _)| *f == input.format) else {
        return Err(ToolError::input_error(
            "UNSUPPORTED_FORMAT",
            format!("Format '{}' is not supported", input.format),
        )
        .retryable(true)
        .detail("field", "format")
        .detail("allowed_values", "pdf,docx,csv"));
    };
    let source = SOURCES
        .iter()
        .find(|s| s.id == input.source_id)
        .ok_or_else(|| {
            ToolError::not_found(
                "SOURCE_NOT_FOUND",
                format!("No data source '{}'", input.source_id),
            )
            .detail("field", "source_id")
        })?;
    if !source.public {
        return Err(ToolError::permission_denied(
            "SOURCE_PRIVATE",
            format!("The data source '{}' is private to its owners", source.id),
        ));
    }
    let latest = source.rows.len() as u32;
    let version = input.version.unwrap_or(latest);
    if version == 0 || version > latest {
        return Err(ToolError::not_found(
            "VERSION_NOT_FOUND",
            format!("Source '{}' has no version {version}", source.id),
        )
        .detail("field", "version")
        .detail("latest_version", latest.to_string()));
    }
    Ok(Plan {
        source,
        version,
        format,
        bytes_per_row,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(source: &str, version: Option<u32>, format: &str) -> ExportInput {
        ExportInput {
            source_id: source.into(),
            version,
            format: format.into(),
        }
    }

    #[test]
    fn latest_version_by_default() {
        let plan = validate(&input("sales-2024", None, "csv")).unwrap();
        let result = plan.into_result("op-1".into());
        assert_eq!(result.version, 3);
        assert_eq!(result.file_name, "sales-2024-v3.csv");
        assert_eq!(result.size_bytes, 1420 * 96);
    }

    #[test]
    fn each_refusal_has_its_category() {
        let err = validate(&input("sales-2024", None, "xlsx")).unwrap_err();
        assert_eq!(
            (err.code.as_str(), err.http_status()),
            ("UNSUPPORTED_FORMAT", 400)
        );
        assert_eq!(err.detail_str("allowed_values"), Some("pdf,docx,csv"));
        let err = validate(&input("hr-salaries", None, "pdf")).unwrap_err();
        assert_eq!(err.http_status(), 403);
        let err = validate(&input("sales-2024", Some(4), "pdf")).unwrap_err();
        assert_eq!(err.detail_str("latest_version"), Some("3"));
        assert!(!err.retryable);
        assert_eq!(
            validate(&input("nope", None, "pdf"))
                .unwrap_err()
                .http_status(),
            404
        );
    }
}
