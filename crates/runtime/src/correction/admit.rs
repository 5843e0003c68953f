//! Admission: what happens to a payload before every dispatch.
//!
//! The executor admits the caller's payload, and every corrected payload,
//! before sending it. Admission may normalise a payload (schema coercion does)
//! but must leave protected values alone; the executor checks that afterwards.

use serde_json::Value;

use crate::schema::Schema;
use recourse_core::protect::Protected;
use recourse_core::record::CoercionChange;

/// The admitted payload and what admission changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    /// The payload to send.
    pub payload: Value,
    /// Each change, for the record (empty when nothing changed).
    pub changes: Vec<CoercionChange>,
}

/// Normalises payloads before dispatch.
pub trait Admission: Send + Sync {
    /// Admits `payload` for a call with the given schema and protected values.
    fn admit(&self, payload: Value, schema: Option<&Schema>, protected: &Protected) -> Admitted;

    /// Whether [`admit`](Self::admit) hands back every payload unchanged for
    /// a call with this schema. The executor then skips admission, and the
    /// copy of the payload it keeps in case admission changes a protected
    /// value. `false` unless an implementation knows better.
    fn leaves_unchanged(&self, schema: Option<&Schema>) -> bool {
        let _ = schema;
        false
    }
}

/// Admission that sends payloads unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct AsIs;

impl Admission for AsIs {
    fn admit(&self, payload: Value, _schema: Option<&Schema>, _protected: &Protected) -> Admitted {
        Admitted {
            payload,
            changes: Vec::new(),
        }
    }

    fn leaves_unchanged(&self, _schema: Option<&Schema>) -> bool {
        true
    }
}
