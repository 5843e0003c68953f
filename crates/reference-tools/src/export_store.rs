//! The record of export operations and the idempotency keys bound to them.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use recourse_tool::ToolFailure;
use recourse_tool::protocol::ToolError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::seeded::mix;

/// A committed export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportResult {
    /// The operation that wrote it.
    pub operation_id: String,
    /// The exported source.
    pub source_id: String,
    /// The exported version.
    pub version: u32,
    /// The file format.
    pub format: String,
    /// The file written.
    pub file_name: String,
    /// Its size.
    pub size_bytes: u64,
}

/// How many export operations a server remembers: the oldest are forgotten
/// past it (with their keys), so a flood of writes cannot grow it without bound.
pub(crate) const MAX_OPERATIONS: usize = 100_000;

/// The last [`MAX_OPERATIONS`] export operations this server has started,
/// and the keys bound to them.
#[derive(Debug)]
pub(crate) struct ExportStore {
    seed: u64,
    capacity: usize,
    inner: Mutex<Inner>,
    committed: AtomicUsize,
}

#[derive(Debug, Default)]
struct Inner {
    started: u64,
    operations: HashMap<String, Operation>,
    keys: HashMap<String, String>,
    /// Operation ids, oldest first.
    order: VecDeque<String>,
}

#[derive(Debug)]
struct Operation {
    /// The order it started in.
    seq: u64,
    /// The key bound to it, if any.
    key: Option<String>,
    fingerprint: Value,
    result: Option<ExportResult>,
}

/// What starting a write decided.
#[derive(Debug)]
pub(crate) enum Begin {
    /// A new operation with this id; commit it when written.
    Started(String),
    /// The key already committed this payload: answer with its result.
    Replay(Box<ExportResult>),
    /// The key is bound to another payload, or its write is still running.
    Refused(ToolFailure),
}

/// What the store knows of an operation id or key.
#[derive(Debug)]
pub(crate) enum Lookup {
    Committed(ExportResult),
    Pending(String),
    Unknown,
}

impl ExportStore {
    pub(crate) fn new(seed: u64) -> Self {
        Self::with_capacity(seed, MAX_OPERATIONS)
    }

    /// A store that remembers the last `capacity` operations (at least one).
    pub(crate) fn with_capacity(seed: u64, capacity: usize) -> Self {
        Self {
            seed,
            capacity: capacity.max(1),
            inner: Mutex::default(),
            committed: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many exports have been committed.
    pub(crate) fn committed(&self) -> usize {
        self.committed.load(Ordering::SeqCst)
    }

    /// How many writes were started (each a new operation), committed or not.
    pub(crate) fn started(&self) -> usize {
        usize::try_from(self.lock().started).unwrap_or(usize::MAX)
    }

    /// The committed result for `key` if it was sent with this payload;
    /// `None` when the key is unbound.
    pub(crate) fn replay(
        &self,
        key: &str,
        fingerprint: &Value,
    ) -> Result<Option<ExportResult>, ToolFailure> {
        let inner = self.lock();
        match bound_operation(&inner, key) {
            None => Ok(None),
            Some((id, op)) => decide(id, op, fingerprint).map(Some),
        }
    }

    /// Starts an operation, binding `key` to it, unless the key is bound already.
    pub(crate) fn begin(&self, key: Option<&str>, fingerprint: Value) -> Begin {
        let mut inner = self.lock();
        if let Some((id, op)) = key.and_then(|k| bound_operation(&inner, k)) {
            return match decide(id, op, &fingerprint) {
                Ok(result) => Begin::Replay(Box::new(result)),
                Err(failure) => Begin::Refused(failure),
            };
        }
        inner.started += 1;
        let id = format!("op-{:016x}", mix(self.seed ^ mix(inner.started)));
        let op = Operation {
            seq: inner.started,
            key: key.map(str::to_owned),
            fingerprint,
            result: None,
        };
        inner.operations.insert(id.clone(), op);
        inner.order.push_back(id.clone());
        if let Some(key) = key {
            inner.keys.insert(key.to_owned(), id.clone());
        }
        while inner.order.len() > self.capacity {
            forget_oldest(&mut inner);
        }
        Begin::Started(id)
    }

    /// Marks a started operation committed with its result.
    pub(crate) fn commit(&self, operation_id: &str, result: ExportResult) {
        let mut inner = self.lock();
        if let Some(op) = inner.operations.get_mut(operation_id)
            && op.result.is_none()
        {
            op.result = Some(result);
            self.committed.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The committed exports of `source_id` in `format` (of `version`, when
    /// given), oldest first.
    pub(crate) fn committed_for(
        &self,
        source_id: &str,
        format: &str,
        version: Option<u32>,
    ) -> Vec<ExportResult> {
        let inner = self.lock();
        let mut found: Vec<(u64, &ExportResult)> = inner
            .operations
            .values()
            .filter_map(|op| Some((op.seq, op.result.as_ref()?)))
            .filter(|(_, r)| r.source_id == source_id && r.format == format)
            .filter(|(_, r)| version.is_none_or(|v| r.version == v))
            .collect();
        found.sort_by_key(|(seq, _)| *seq);
        found.into_iter().map(|(_, r)| r.clone()).collect()
    }

    /// What is known of an operation id, or of the operation a key is bound to.
    pub(crate) fn lookup(&self, id_or_key: &str) -> Lookup {
        let inner = self.lock();
        let found = inner
            .operations
            .get_key_value(id_or_key)
            .or_else(|| bound_operation(&inner, id_or_key));
        match found {
            None => Lookup::Unknown,
            Some((
                _,
                Operation {
                    result: Some(r), ..
                },
            )) => Lookup::Committed(r.clone()),
            Some((id, _)) => Lookup::Pending(id.clone()),
        }
    }
}

/// Forgets the oldest operation and unbinds its key.
fn forget_oldest(inner: &mut Inner) {
    let Some(id) = inner.order.pop_front() else {
        return;
    };
    if let Some(Operation { key: Some(key), .. }) = inner.operations.remove(&id)
        && inner.keys.get(&key) == Some(&id)
    {
        inner.keys.remove(&key);
    }
}

fn bound_operation<'a>(inner: &'a Inner, key: &str) -> Option<(&'a String, &'a Operation)> {
    let id = inner.keys.get(key)?;
    inner.operations.get_key_value(id)
}

/// Replay, mismatch or still running, for a key bound to `op`.
fn decide(id: &str, op: &Operation, fingerprint: &Value) -> Result<ExportResult, ToolFailure> {
    if op.fingerprint != *fingerprint {
        return Err(ToolFailure::from(
            ToolError::policy_rejection(
                "IDEMPOTENCY_KEY_REUSED",
                "This Idempotency-Key was already used for a different export request",
            )
            .detail("operation_id", id),
        ));
    }
    match &op.result {
        Some(result) => Ok(result.clone()),
        None => Err(ToolFailure::from(
            ToolError::service_error(
                "OPERATION_IN_PROGRESS",
                "An export with this Idempotency-Key is still being written; look it up or resend later",
            )
            .retryable(true)
            .detail("operation_id", id),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(id: &str) -> ExportResult {
        ExportResult {
            operation_id: id.into(),
            source_id: "s".into(),
            version: 1,
            format: "csv".into(),
            file_name: "s-v1.csv".into(),
            size_bytes: 1,
        }
    }

    #[test]
    fn a_key_commits_once_then_replays_and_refuses_other_payloads() {
        let store = ExportStore::new(1);
        let Begin::Started(id) = store.begin(Some("k"), json!({"a": 1})) else {
            panic!()
        };
        assert!(matches!(store.lookup("k"), Lookup::Pending(_)));
        assert!(store.replay("k", &json!({"a": 1})).is_err(), "in progress");
        store.commit(&id, result(&id));
        store.commit(&id, result(&id));
        assert_eq!(store.committed(), 1);
        assert_eq!(
            store
                .replay("k", &json!({"a": 1}))
                .unwrap()
                .unwrap()
                .operation_id,
            id
        );
        assert!(matches!(
            store.begin(Some("k"), json!({"a": 1})),
            Begin::Replay(_)
        ));
        assert!(matches!(
            store.begin(Some("k"), json!({"a": 2})),
            Begin::Refused(_)
        ));
        assert!(matches!(store.lookup(&id), Lookup::Committed(_)));
        assert!(matches!(store.lookup("never"), Lookup::Unknown));
    }

    #[test]
    fn past_its_capacity_the_store_forgets_the_oldest_operation_and_its_key() {
        let store = ExportStore::with_capacity(1, 2);
        let mut ids = Vec::new();
        for key in ["k1", "k2", "k3"] {
            let Begin::Started(id) = store.begin(Some(key), json!({"key": key})) else {
                panic!()
            };
            store.commit(&id, result(&id));
            ids.push(id);
        }
        assert!(matches!(store.lookup(&ids[0]), Lookup::Unknown));
        assert!(matches!(store.lookup("k1"), Lookup::Unknown));
        assert!(store.replay("k1", &json!({"key": "k1"})).unwrap().is_none());
        assert!(matches!(store.lookup("k2"), Lookup::Committed(_)));
        assert!(matches!(store.lookup(&ids[2]), Lookup::Committed(_)));
        assert_eq!(store.committed_for("s", "csv", None).len(), 2);
        let inner = store.lock();
        assert_eq!(
            (inner.operations.len(), inner.keys.len(), inner.order.len()),
            (2, 2, 2)
        );
    }

    #[test]
    fn committed_exports_are_found_by_their_inputs_in_order() {
        let store = ExportStore::new(1);
        let mut ids = Vec::new();
        for _ in 0..3 {
            let Begin::Started(id) = store.begin(None, json!({})) else {
                panic!()
            };
            ids.push(id);
        }
        store.commit(&ids[2], result(&ids[2]));
        store.commit(&ids[0], result(&ids[0]));
        let found = store.committed_for("s", "csv", None);
        let order: Vec<&str> = found.iter().map(|r| r.operation_id.as_str()).collect();
        assert_eq!(
            order,
            [ids[0].as_str(), ids[2].as_str()],
            "the pending one is not listed"
        );
        assert_eq!(store.committed_for("s", "csv", Some(1)).len(), 2);
        assert!(store.committed_for("s", "csv", Some(2)).is_empty());
        assert!(store.committed_for("s", "pdf", None).is_empty());
    }

    #[test]
    fn operation_ids_are_seeded() {
        let ids = |seed| {
            let store = ExportStore::new(seed);
            (0..3)
                .map(|_| match store.begin(None, json!({})) {
                    Begin::Started(id) => id,
                    _ => unreachable!(),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(5), ids(5));
        assert_ne!(ids(5), ids(6));
    }
}
