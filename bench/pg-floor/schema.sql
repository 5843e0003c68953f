-- The journal's two tables as the floor measures them (the columns a keyed
-- write touches, the same keys and indexes), in a schema of their own.
CREATE TABLE floor_calls (call_id TEXT PRIMARY KEY, target TEXT, payload TEXT NOT NULL,
  state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, started_at TEXT NOT NULL,
  updated_at TEXT NOT NULL, caller_key TEXT UNIQUE, request_hash TEXT, owner TEXT,
  lease_until TEXT, record TEXT);
CREATE INDEX floor_calls_state_call ON floor_calls (state, call_id);
CREATE TABLE floor_attempts (call_id TEXT NOT NULL REFERENCES floor_calls (call_id),
  n INTEGER NOT NULL, payload TEXT, status INTEGER, action TEXT, started_at TEXT NOT NULL,
  finished_at TEXT, PRIMARY KEY (call_id, n));
