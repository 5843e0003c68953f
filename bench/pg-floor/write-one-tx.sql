-- The same four statements in one transaction: what a group commit would save.
\set r random(1, 2000000000)
BEGIN;
INSERT INTO floor_calls (call_id, target, payload, state, started_at, updated_at, caller_key, request_hash, owner, lease_until) VALUES (:client_id || '-' || :r, 'http://127.0.0.1:8700/api/exports', 'null', 'in_flight', '2026-12-04T00:00:00Z', '2026-12-04T00:00:00Z', 'k-' || :client_id || '-' || :r, 'h', 'o', '2026-12-04T00:00:30Z') ON CONFLICT (caller_key) DO NOTHING;
UPDATE floor_calls SET payload = '{"source_id":"sales-2024","format":"pdf"}', updated_at = '2026-12-04T00:00:00Z' WHERE call_id = :client_id || '-' || :r;
WITH attempt AS (INSERT INTO floor_attempts (call_id, n, payload, started_at) VALUES (:client_id || '-' || :r, 1, NULL, '2026-12-04T00:00:00Z') ON CONFLICT DO NOTHING) UPDATE floor_calls SET attempts = 1 WHERE call_id = :client_id || '-' || :r;
WITH done AS (UPDATE floor_attempts SET status = 200, action = 'stop', finished_at = '2026-12-04T00:00:01Z' WHERE call_id = :client_id || '-' || :r AND n = 1) UPDATE floor_calls SET state = 'succeeded', record = '{"record_version":1,"call_id":"x","outcome":"succeeded","data":{"operation_id":"op-1","source_id":"sales-2024","version":3,"format":"pdf","file_name":"sales-2024-v3.pdf","size_bytes":298200}}', lease_until = NULL WHERE call_id = :client_id || '-' || :r;
COMMIT;
