//! Compiled schemas, kept so a capability's schema is compiled once, not on
//! every correction of every call.

use std::sync::Mutex;

use serde_json::Value;

use crate::{ConfigError, Schema};

/// How many distinct schemas are kept.
const CAPACITY: usize = 32;

/// Recently used compiled schemas (or their compile errors), keyed by schema.
#[derive(Debug, Default)]
pub(crate) struct SchemaCache {
    entries: Mutex<Vec<(Value, Result<Schema, ConfigError>)>>,
}

impl SchemaCache {
    /// The compiled form of `schema`.
    pub(crate) fn get(&self, schema: &Value) -> Result<Schema, ConfigError> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = entries.iter().position(|(raw, _)| raw == schema) {
            let entry = entries.remove(i);
            let result = entry.1.clone();
            entries.push(entry);
            return result;
        }
        let compiled = Schema::compile(schema);
        if entries.len() == CAPACITY {
            drop(entries.remove(0));
        }
        entries.push((schema.clone(), compiled.clone()));
        compiled
    }
}
