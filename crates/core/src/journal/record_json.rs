//! A call's record as the journal stores it: [`RecordJson`].

use super::*;

/// A call's record as the journal stores it: the JSON text of its
/// [`CallReport`], written once.
///
/// ```
/// use recourse_core::journal::RecordJson;
///
/// let record = RecordJson::from(&serde_json::json!({"call_id": "c-1", "outcome": "failed"}));
/// assert_eq!(record.as_str(), r#"{"call_id":"c-1","outcome":"failed"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordJson(String);

impl RecordJson {
    /// `report`'s record, as [`CallReport::write_json`](crate::record::CallReport::write_json)
    /// writes it: the bytes the gateway answers with, the tool's data as the
    /// tool sent it.
    ///
    /// # Errors
    /// When a part of the report cannot be written as JSON.
    pub fn of(report: &crate::record::CallReport) -> Result<Self, serde_json::Error> {
        Self::written(report, None)
    }

    /// `report`'s record as a journal keeps it beside the call's own
    /// `payload`: an attempt that sent that payload is written without it
    /// (the payload is stored once per call), and
    /// [`with_payloads`](Self::with_payloads) puts it back when the record
    /// is read.
    ///
    ///
    /// # Errors
    /// When a part of the report cannot be written as JSON.
    pub fn beside(
        report: &crate::record::CallReport,
        payload: &Value,
    ) -> Result<Self, serde_json::Error> {
        Self::written(report, Some(payload))
    }

    fn written(
        report: &crate::record::CallReport,
        omit: Option<&Value>,
    ) -> Result<Self, serde_json::Error> {
        let mut out = Vec::with_capacity(1024);
        report.write_json_omitting(&mut out, omit)?;
        // JSON written from Rust strings and the tool's (checked) JSON text.
        String::from_utf8(out)
            .map(Self)
            .map_err(<serde_json::Error as serde::ser::Error>::custom)
    }

    /// A stored record (read back as JSON) with each attempt written
    /// without its payload ([`beside`](Self::beside)) given the call's
    /// `payload` again; a record stored whole is returned as it is.
    ///
    /// ```
    /// use recourse_core::journal::RecordJson;
    /// use serde_json::json;
    ///
    /// let payload = json!({"source_id": "sales-2024"});
    /// let stored = json!({"call_id": "c-1", "attempts": [
    ///     {"n": 1, "status": null},
    ///     {"n": 2, "payload": {"source_id": "sales-2025"}, "status": 200}
    /// ]});
    /// assert_eq!(
    ///     RecordJson::with_payloads(stored, &payload)["attempts"],
    ///     json!([{"n": 1, "payload": {"source_id": "sales-2024"}, "status": null},
    ///            {"n": 2, "payload": {"source_id": "sales-2025"}, "status": 200}])
    /// );
    /// ```
    pub fn with_payloads(mut record: Value, payload: &Value) -> Value {
        if let Some(attempts) = record.get_mut("attempts").and_then(Value::as_array_mut) {
            for attempt in attempts {
                if let Value::Object(fields) = attempt
                    && !fields.contains_key("payload")
                {
                    // In the record's field order: `payload` follows `n`.
                    let mut filled = serde_json::Map::with_capacity(fields.len() + 1);
                    for (name, value) in std::mem::take(fields) {
                        let after_n = name == "n";
                        filled.insert(name, value);
                        if after_n {
                            filled.insert("payload".to_owned(), payload.clone());
                        }
                    }
                    filled.entry("payload").or_insert_with(|| payload.clone());
                    *fields = filled;
                }
            }
        }
        record
    }

    /// The JSON text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Any JSON value as a record (a record read back, a test's own).
impl From<&Value> for RecordJson {
    fn from(value: &Value) -> Self {
        Self(value.to_string())
    }
}
