//! What schema coercion changed in a payload, as the record shows it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use strum::{EnumIter, EnumString, IntoStaticStr, VariantNames};

/// One change coercion made, as the record shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CoercionChange {
    /// JSON Pointer to the value changed.
    pub pointer: String,
    /// The value before.
    pub from: Value,
    /// The value after (`None` when the value was omitted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Value>,
    /// The rule that made the change.
    pub rule: CoercionRule,
}

/// The rules of L2 coercion; each applies only where the schema leaves one reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[derive(IntoStaticStr, EnumString, EnumIter, VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum CoercionRule {
    /// `"42"` → `42` where an integer is wanted (not `12.5`, not out of range).
    IntegerString,
    /// `"12.5"` → `12.5` where a number is wanted (never NaN or infinity).
    NumericString,
    /// `"true"` / `"false"` → a boolean where a boolean is wanted.
    BooleanString,
    /// `12` → `"12"` where a string is wanted.
    NumberToString,
    /// `{"name": "Paris"}` → `"Paris"` where a string is wanted.
    SingleFieldObject,
    /// `"[\"a\"]"` → `["a"]`: a string holding the JSON array or object the schema wants.
    JsonString,
    /// `null` for an optional property that does not allow null → omitted.
    NullOmitted,
    /// `"a"` → `["a"]` where only an array of that scalar's type is wanted.
    ScalarToArray,
}

impl CoercionRule {
    /// The rule's snake-case name.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}
