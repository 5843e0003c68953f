//! The record written straight to JSON bytes.
//!
//! [`CallReport::write_json`] gives the same bytes as `serde_json::to_vec` of
//! the report's `Serialize` impl (a property test holds the two together),
//! at a fraction of the cost: each field's key and punctuation go out as one
//! literal, and a string that needs no escaping is copied in one piece, where
//! serde_json looks at every byte of every key and string, and the record's
//! flattened parts make it buffer through a map. Values that are rare or
//! nested (errors, stop reasons, events, payloads) are still written by
//! their `Serialize` impls.

use serde::Serialize;
use serde_json::Value;

use super::attempt::millis;
use crate::policy::Action;
use crate::record::{AttemptRecord, CallReport, Outcome};

impl CallReport {
    /// Appends the record's JSON to `out`: byte for byte what
    /// `serde_json::to_vec(&report)` gives, written faster (the gateway
    /// answers every call with it).
    ///
    /// ```
    /// use recourse_core::idempotency::{Evidence, Idempotency};
    /// use recourse_core::record::{CallReport, Outcome, TokenUsage};
    /// use std::time::Duration;
    ///
    /// let report = CallReport {
    ///     call_id: "c-1".into(),
    ///     outcome: Outcome::Succeeded { data: serde_json::json!({"price": 468.285}).into() },
    ///     attempts: Vec::new(),
    ///     http_calls: 1,
    ///     llm_calls: 0,
    ///     tokens: TokenUsage::default(),
    ///     llm_time: Duration::ZERO,
    ///     idempotency: Idempotency { idempotent: true, from: Evidence::Caller },
    ///     idempotency_key: None,
    ///     operation_id: None,
    ///     verification: None,
    ///     elapsed: Duration::from_millis(12),
    ///     settlement: None,
    ///     answer: None,
    ///     ended_at: None,
    /// };
    /// let mut out = Vec::new();
    /// report.write_json(&mut out)?;
    /// assert_eq!(out, serde_json::to_vec(&report)?);
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// Only if a value in it cannot be JSON: a record holds strings, numbers
    /// and maps with string keys, so in practice never.
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        self.write_json_omitting(out, None)
    }

    /// [`write_json`](Self::write_json), leaving out the `payload` of each
    /// attempt that sent `omit` (what a journal stores beside the call's
    /// payload: [`RecordJson::beside`](crate::journal::RecordJson::beside)).
    ///
    /// # Errors
    /// As `write_json`.
    pub fn write_json_omitting(
        &self,
        out: &mut Vec<u8>,
        omit: Option<&Value>,
    ) -> Result<(), serde_json::Error> {
        let mut w = Writer(out);
        w.raw(r#"{"record_version":"#);
        w.u64(super::RECORD_VERSION.into());
        w.raw(r#","call_id":"#);
        w.str(&self.call_id);
        w.outcome(&self.outcome)?;
        w.raw(r#","stop_kind":"#);
        w.serde(&self.stop_kind())?;
        let next = self.next();
        w.raw(r#","next":{"step":"#);
        w.str(next.step.as_str());
        w.raw(r#","model_message":"#);
        w.str(&next.model_message);
        if let Some(question) = &next.question {
            w.raw(r#","question":"#);
            w.str(question);
        }
        if let Some(id) = &next.operation_id {
            w.raw(r#","operation_id":"#);
            w.str(id);
        }
        if let Some(ms) = next.retry_after_ms {
            w.raw(r#","retry_after_ms":"#);
            w.u64(ms);
        }
        w.raw(r#"},"http_calls":"#);
        w.u64(self.http_calls.into());
        w.raw(r#","llm_calls":"#);
        w.u64(self.llm_calls.into());
        w.raw(r#","tokens":{"prompt":"#);
        w.u64(self.tokens.prompt);
        w.raw(r#","completion":"#);
        w.u64(self.tokens.completion);
        w.raw(r#"},"llm_ms":"#);
        w.u64(millis(self.llm_time));
        w.raw(r#","idempotency":{"idempotent":"#);
        w.bool(self.idempotency.idempotent);
        w.raw(r#","from":"#);
        w.str(self.idempotency.from.as_str());
        w.raw(r#"},"idempotency_key":"#);
        w.opt_str(self.idempotency_key.as_deref());
        w.raw(r#","operation_id":"#);
        w.opt_str(self.operation_id.as_deref());
        w.raw(r#","verification":"#);
        w.serde(&self.verification)?;
        w.raw(r#","elapsed_ms":"#);
        w.u64(millis(self.elapsed));
        w.raw(r#","settlement":"#);
        w.serde(&self.settlement)?;
        if let Some(answer) = &self.answer {
            w.raw(r#","answer":"#);
            w.serde(answer)?;
        }
        if let Some(at) = self.ended_at {
            w.raw(r#","ended_at":"#);
            w.str(&crate::timestamp::rfc3339(at));
        }
        w.raw(r#","attempts":["#);
        for (i, attempt) in self.attempts.iter().enumerate() {
            if i > 0 {
                w.raw(",");
            }
            w.attempt(attempt, omit)?;
        }
        w.raw("]}");
        Ok(())
    }
}

/// JSON out into a byte buffer, a piece at a time.
struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    /// The outcome's fields, flattened into the record.
    fn outcome(&mut self, outcome: &Outcome) -> Result<(), serde_json::Error> {
        self.raw(r#","outcome":"#);
        self.str(outcome.name());
        self.raw(r#","data":"#);
        match outcome {
            Outcome::Succeeded { data } => self.serde(data)?,
            Outcome::Failed { .. } | Outcome::Unknown { .. } => self.raw("null"),
        }
        self.raw(r#","error":"#);
        match outcome.error() {
            Some(error) => self.serde(&error.redacted())?,
            None => self.raw("null"),
        }
        self.raw(r#","reason":"#);
        match outcome.reason() {
            Some(reason) => {
                self.serde(reason)?;
                self.raw(r#","reason_text":"#);
                self.str(&reason.to_string());
            }
            None => self.raw(r#"null,"reason_text":null"#),
        }
        Ok(())
    }

    fn attempt(
        &mut self,
        a: &AttemptRecord,
        omit: Option<&Value>,
    ) -> Result<(), serde_json::Error> {
        self.raw(r#"{"n":"#);
        self.u64(a.n.into());
        if omit != Some(&a.payload) {
            self.raw(r#","payload":"#);
            self.serde(&a.payload)?;
        }
        self.raw(r#","status":"#);
        match a.status {
            Some(status) => self.u64(status.into()),
            None => self.raw("null"),
        }
        self.raw(r#","transport_error":"#);
        match &a.transport_error {
            Some(failure) => self.str(&failure.to_string()),
            None => self.raw("null"),
        }
        self.raw(r#","category":"#);
        self.serde(&a.category)?;
        self.raw(r#","code":"#);
        self.opt_str(a.code.as_deref());
        self.raw(r#","retry_permission":"#);
        self.str(a.retry_permission.as_str());
        self.raw(r#","action":"#);
        self.str(a.action.name());
        self.raw(r#","wait_ms":"#);
        match &a.action {
            Action::RetrySame { wait, .. } => self.u64(millis(*wait)),
            _ => self.raw("null"),
        }
        self.raw(r#","reason":"#);
        match &a.action {
            Action::Stop { reason } => self.serde(reason)?,
            _ => self.raw("null"),
        }
        self.raw(r#","timeout_ms":"#);
        self.u64(a.timeout_ms);
        self.raw(r#","source":"#);
        self.str(a.source.as_str());
        let notes = a.notes();
        if !notes.is_empty() {
            self.raw(r#","notes":"#);
            self.serde(&notes)?;
        }
        self.raw(r#","events":"#);
        self.serde(&a.events)?;
        self.raw("}");
        Ok(())
    }

    /// Bytes that are JSON already.
    fn raw(&mut self, json: &str) {
        self.0.extend_from_slice(json.as_bytes());
    }

    fn u64(&mut self, n: u64) {
        self.raw(itoa::Buffer::new().format(n));
    }

    fn bool(&mut self, b: bool) {
        self.raw(if b { "true" } else { "false" });
    }

    /// A JSON string, escaped as serde_json escapes it.
    fn str(&mut self, s: &str) {
        // serde_json escapes control characters, quotes and backslashes
        // only. The fold has no early exit, so it checks many bytes at once.
        let plain = !s.bytes().fold(false, |esc, b| {
            esc | (b < 0x20) | (b == b'"') | (b == b'\\')
        });
        if plain {
            self.0.reserve(s.len() + 2);
            self.0.push(b'"');
            self.0.extend_from_slice(s.as_bytes());
            self.0.push(b'"');
        } else {
            // Writing a `str` into a `Vec` cannot fail.
            let _ = serde_json::to_writer(&mut *self.0, s);
        }
    }

    fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.str(s),
            None => self.raw("null"),
        }
    }

    fn serde<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), serde_json::Error> {
        serde_json::to_writer(&mut *self.0, value)
    }
}

#[cfg(test)]
mod tests;
