//! `ToolData`: a tool's result, kept as the JSON it arrived as.

use std::borrow::Cow;
use std::fmt;

use serde::de::Deserializer;
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// A tool's result: any JSON value.
///
/// The result of a call that succeeded is usually handed on unread — into
/// the call's record, to the agent — so it is kept as the JSON text the tool
/// sent (checked to be one JSON value) and only built into a
/// [`serde_json::Value`] when something reads it. Equality compares the values,
/// not the texts.
///
/// ```
/// use recourse_protocol::{parse_response, ToolData};
/// use serde_json::json;
///
/// let parsed = parse_response(200, [("content-type", "application/json")],
///     br#"{"success": true, "data": {"price": 468.285}}"#);
/// let data = parsed.data.unwrap();
/// assert_eq!(data.raw(), r#"{"price": 468.285}"#);
/// assert_eq!(data.to_value(), json!({"price": 468.285}));
/// assert_eq!(data, ToolData::from(json!({"price": 468.285})));
/// assert_eq!(serde_json::to_string(&data).unwrap(), r#"{"price": 468.285}"#);
/// ```
#[derive(Clone)]
pub struct ToolData(Repr);

#[derive(Clone)]
enum Repr {
    /// The JSON text as the tool sent it.
    Raw(Box<RawValue>),
    /// A value built here, or read from a convention that needed the tree.
    Value(Value),
}

impl ToolData {
    /// JSON `null`.
    pub fn null() -> Self {
        Self(Repr::Value(Value::Null))
    }

    /// Keeps `raw`, one JSON value as text, unparsed.
    pub fn from_raw(raw: Box<RawValue>) -> Self {
        Self(Repr::Raw(raw))
    }

    /// The value as a tree: built from the text when the data is raw.
    pub fn value(&self) -> Cow<'_, Value> {
        match &self.0 {
            // Text that RawValue accepted is one JSON value; a number beyond
            // what `Value` holds is the only thing that can fail here, and it
            // reads as null rather than as a panic.
            Repr::Raw(raw) => Cow::Owned(serde_json::from_str(raw.get()).unwrap_or(Value::Null)),
            Repr::Value(v) => Cow::Borrowed(v),
        }
    }

    /// The value as a tree, owned.
    pub fn to_value(&self) -> Value {
        self.value().into_owned()
    }

    /// The value as a tree, consuming the data.
    pub fn into_value(self) -> Value {
        match self.0 {
            Repr::Raw(_) => self.to_value(),
            Repr::Value(v) => v,
        }
    }

    /// The value as JSON text: the tool's own text when it is kept raw.
    pub fn raw(&self) -> Cow<'_, str> {
        match &self.0 {
            Repr::Raw(raw) => Cow::Borrowed(raw.get()),
            Repr::Value(v) => Cow::Owned(v.to_string()),
        }
    }

    /// Whether the value is JSON `null`.
    pub fn is_null(&self) -> bool {
        match &self.0 {
            Repr::Raw(raw) => raw.get().trim() == "null",
            Repr::Value(v) => v.is_null(),
        }
    }
}

impl Default for ToolData {
    fn default() -> Self {
        Self::null()
    }
}

impl From<Value> for ToolData {
    fn from(value: Value) -> Self {
        Self(Repr::Value(value))
    }
}

impl From<ToolData> for Value {
    fn from(data: ToolData) -> Self {
        data.into_value()
    }
}

impl PartialEq for ToolData {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (Repr::Raw(a), Repr::Raw(b)) if a.get() == b.get() => true,
            _ => self.value() == other.value(),
        }
    }
}

impl PartialEq<Value> for ToolData {
    fn eq(&self, other: &Value) -> bool {
        *self.value() == *other
    }
}

impl fmt::Debug for ToolData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Raw(raw) => write!(f, "ToolData({})", raw.get()),
            Repr::Value(v) => write!(f, "ToolData({v})"),
        }
    }
}

impl fmt::Display for ToolData {
    /// Compact JSON (the tool's own text when kept raw).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw())
    }
}

impl Serialize for ToolData {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Raw(raw) => raw.serialize(serializer),
            Repr::Value(v) => v.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for ToolData {
    /// Any JSON value, read as a tree (this works with every deserializer,
    /// `serde_json::from_value` included).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(Self::from)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for ToolData {
    fn schema_name() -> Cow<'static, str> {
        "ToolData".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        Value::json_schema(generator)
    }

    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn raw(text: &str) -> ToolData {
        ToolData::from_raw(RawValue::from_string(text.to_owned()).unwrap())
    }

    #[test]
    fn raw_and_built_data_are_equal_when_their_values_are() {
        assert_eq!(
            raw(r#"{"a": 1, "b": [true]}"#),
            ToolData::from(json!({"a": 1, "b": [true]}))
        );
        assert_eq!(raw(r#"{"a":1}"#), raw(r#"{ "a" : 1 }"#));
        assert_ne!(raw(r#"{"a":1}"#), raw(r#"{"a":2}"#));
        assert_eq!(raw("[1,2]"), json!([1, 2]));
    }

    #[test]
    fn raw_data_serializes_as_sent_and_reads_as_a_value() {
        let data = raw(r#"{"z": 1, "a": "x"}"#);
        assert_eq!(
            serde_json::to_string(&json!({"data": data})).unwrap(),
            r#"{"data":{"z":1,"a":"x"}}"#
        );
        let wrapped = serde_json::to_string(&[&data]).unwrap();
        assert_eq!(wrapped, r#"[{"z": 1, "a": "x"}]"#);
        assert_eq!(data.to_value()["a"], "x");
        assert!(raw(" null ").is_null());
        assert!(ToolData::null().is_null());
        assert!(!raw("0").is_null());
    }

    #[test]
    fn data_deserializes_from_any_value() {
        let data: ToolData = serde_json::from_value(json!({"k": [1]})).unwrap();
        assert_eq!(data, json!({"k": [1]}));
        let data: ToolData = serde_json::from_str(r#"{"k": [1]}"#).unwrap();
        assert_eq!(data, json!({"k": [1]}));
    }
}
