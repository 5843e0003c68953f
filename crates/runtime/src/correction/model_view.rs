//! What a model is shown of a payload: the payload redacted, and the values
//! the redactor hid kept out of its reach.
//!
//! A payload holds secrets the caller meant for the tool — a password, an
//! API key under a secret-named field, a token inside a URL. A model that
//! corrects the payload must never see them, so it is shown the payload as
//! the redactor leaves it (`[REDACTED]` where a secret was). Its proposal is
//! then a payload with placeholders where the secrets were: each placeholder
//! it kept gets its original value back, and each hidden value is protected
//! for the gate, so a proposal that changes or drops one is refused rather
//! than sent with the placeholder (or a value the model made up) in place of
//! the caller's secret.

use recourse_core::protect::Protected;
use recourse_protocol::redact_value;
use serde_json::Value;

use crate::correction::{Correction, CorrectionRequest};

/// A failed payload as a model may see it.
pub(crate) struct Hidden {
    /// The payload, redacted: what the prompt shows.
    shown: Value,
    /// Where the redactor changed a value (JSON Pointers).
    pointers: Vec<String>,
    /// The call's protections and the hidden values, snapshotted in the
    /// original payload.
    protected: Protected,
}

impl Hidden {
    /// What the redactor hides of `request`'s payload.
    pub(crate) fn of(request: &CorrectionRequest<'_>) -> Self {
        let shown = redact_value(request.payload);
        let mut pointers = Vec::new();
        differences(request.payload, &shown, &mut String::new(), &mut pointers);
        let protected = request.protected.and_snapshot(&pointers, request.payload);
        Self {
            shown,
            pointers,
            protected,
        }
    }

    /// `request` as a model is asked it: the redacted payload, the hidden
    /// values among the protected ones.
    pub(crate) fn shown<'a>(&'a self, request: &CorrectionRequest<'a>) -> CorrectionRequest<'a> {
        CorrectionRequest {
            payload: &self.shown,
            protected: &self.protected,
            ..*request
        }
    }

    /// `request` as a model's proposal is gated: the original payload, the
    /// hidden values protected.
    pub(crate) fn gated<'a>(&'a self, request: &CorrectionRequest<'a>) -> CorrectionRequest<'a> {
        CorrectionRequest {
            protected: &self.protected,
            ..*request
        }
    }

    /// `correction` with every placeholder the model kept given its original
    /// value back (from `original`); a hidden value it changed or dropped is
    /// left for the gate to refuse.
    pub(crate) fn restored(&self, correction: Correction, original: &Value) -> Correction {
        let Correction::Corrected {
            mut payload,
            layer,
            reason,
            tried,
            llm_calls,
            tokens,
        } = correction
        else {
            return correction;
        };
        for pointer in &self.pointers {
            let kept = payload.pointer(pointer) == self.shown.pointer(pointer);
            if let (true, Some(slot), Some(value)) = (
                kept,
                payload.pointer_mut(pointer),
                original.pointer(pointer),
            ) {
                *slot = value.clone();
            }
        }
        Correction::Corrected {
            payload,
            layer,
            reason,
            tried,
            llm_calls,
            tokens,
        }
    }
}

/// The pointers (under `at`) where `shown` differs from `original`: the
/// redactor keeps the shape of objects and arrays and replaces leaves.
fn differences(original: &Value, shown: &Value, at: &mut String, out: &mut Vec<String>) {
    if original == shown {
        return;
    }
    match (original, shown) {
        (Value::Object(a), Value::Object(b)) if a.len() == b.len() => {
            for (key, value) in a {
                let len = at.len();
                at.push('/');
                at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                match b.get(key) {
                    Some(other) => differences(value, other, at, out),
                    None => out.push(at.clone()),
                }
                at.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (value, other)) in a.iter().zip(b).enumerate() {
                let len = at.len();
                at.push('/');
                at.push_str(&i.to_string());
                differences(value, other, at, out);
                at.truncate(len);
            }
        }
        _ => out.push(at.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use recourse_core::record::{CorrectionLayer, TokenUsage};
    use recourse_core::target::Target;
    use recourse_protocol::ToolError;
    use serde_json::json;

    fn corrected(payload: Value) -> Correction {
        Correction::Corrected {
            payload,
            layer: CorrectionLayer::Llm,
            reason: String::new(),
            tried: Vec::new(),
            llm_calls: 1,
            tokens: TokenUsage::default(),
        }
    }

    #[test]
    fn the_model_sees_placeholders_and_the_tool_gets_the_secrets_back() {
        let payload = json!({
            "user": "ada",
            "password": "hunter2-hunter2",
            "callback": "https://h.example/cb?token=TKz9x8c7v6b5n4",
            "items": [{"api_key": "sk-SKa1b2c3d4e5f6g7h8i9j0"}],
            "amount": -5
        });
        let target = Target::parse("http://127.0.0.1:9/api/pay").unwrap();
        let error = ToolError::input_error("BAD_AMOUNT", "amount must be positive");
        let protected = Protected::default();
        let request = CorrectionRequest {
            target: &target,
            payload: &payload,
            error: &error,
            protected: &protected,
            schema: None,
            intent: None,
            attempt: 1,
        };
        let hidden = Hidden::of(&request);
        let shown = hidden.shown(&request).payload.to_string();
        for secret in [
            "hunter2-hunter2",
            "TKz9x8c7v6b5n4",
            "sk-SKa1b2c3d4e5f6g7h8i9j0",
        ] {
            assert!(!shown.contains(secret), "{shown}");
        }
        let mut pointers = hidden.pointers.clone();
        pointers.sort();
        assert_eq!(pointers, ["/callback", "/items/0/api_key", "/password"]);

        // The model fixes the amount and echoes the placeholders.
        let mut proposal = hidden.shown(&request).payload.clone();
        proposal["amount"] = json!(5);
        let Correction::Corrected { payload: sent, .. } =
            hidden.restored(corrected(proposal), &payload)
        else {
            unreachable!()
        };
        assert_eq!(sent["password"], "hunter2-hunter2");
        assert_eq!(sent["items"][0]["api_key"], payload["items"][0]["api_key"]);
        assert_eq!(sent["callback"], payload["callback"]);
        assert_eq!(sent["amount"], 5);
        hidden.gated(&request).protected.check(&sent).unwrap();

        // A model that makes up a secret, or drops one, is refused by the gate.
        let mut invented = hidden.shown(&request).payload.clone();
        invented["password"] = json!("guessed");
        let Correction::Corrected { payload: p, .. } =
            hidden.restored(corrected(invented), &payload)
        else {
            unreachable!()
        };
        assert!(hidden.gated(&request).protected.check(&p).is_err());
        let mut dropped = hidden.shown(&request).payload.clone();
        dropped.as_object_mut().unwrap().remove("password");
        let Correction::Corrected { payload: p, .. } =
            hidden.restored(corrected(dropped), &payload)
        else {
            unreachable!()
        };
        assert!(hidden.gated(&request).protected.check(&p).is_err());
    }
}
