//! The Lua scripts that keep the fleet's budget and breakers in Redis.
//!
//! Each runs atomically on the server and reads the server's clock (`TIME`),
//! so replicas whose clocks disagree still agree on the state. The
//! arithmetic is [`RetryBudget`](crate::budget::RetryBudget)'s and
//! [`CircuitBreakers`](crate::breaker::CircuitBreakers)', written once more in Lua.

/// The budget: `KEYS[1]` a hash of `earned`, `floor` and `last` (ms).
/// `ARGV`: `deposit` or `withdraw`, the ratio, the floor per second, the
/// decay time constant (ms), and how long an idle budget is kept (ms).
/// Returns 1 when a withdrawal is granted (and for a deposit), 0 when refused.
pub(super) const BUDGET: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ratio = tonumber(ARGV[2])
local per_sec = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local s = redis.call('HMGET', KEYS[1], 'earned', 'floor', 'last')
local earned = tonumber(s[1]) or 0
local floor = tonumber(s[2]) or per_sec
local last = tonumber(s[3]) or now
if now > last then
  floor = math.min(floor + (now - last) / 1000 * per_sec, per_sec)
  earned = earned * math.exp(-(now - last) / ttl)
  last = now
end
local whole = 1 - 1e-9
local granted = 1
if ARGV[1] == 'deposit' then
  earned = earned + ratio
elseif floor >= whole then
  floor = math.max(floor - 1, 0)
elseif earned >= whole then
  earned = math.max(earned - 1, 0)
else
  granted = 0
end
redis.call('HSET', KEYS[1], 'earned', string.format('%.17g', earned),
  'floor', string.format('%.17g', floor), 'last', string.format('%d', last))
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return granted
";

/// May a call go to the endpoint? `KEYS[1]` its breaker (a hash with
/// `failures` and, once open, `open_until` in ms), `KEYS[2]` its half-open
/// probe. `ARGV[1]`: how long a breaker stays open, and a probe may stay
/// out (ms). Returns 1 to admit.
///
/// Closed (no `open_until`): admitted. Open and waiting: refused. Open past
/// its wait: exactly one caller in the fleet wins the probe (`SET NX PX`);
/// a probe that never reports expires, and the next caller probes again.
/// An `open_until` further off than the open time (written by something
/// else than these scripts: a clock gone wrong, a hand, an attacker) is
/// brought back to now + the open time, so no value keeps an endpoint shut.
pub(super) const ADMIT: &str = r"
local open_until = tonumber(redis.call('HGET', KEYS[1], 'open_until'))
if not open_until then
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local longest = now + tonumber(ARGV[1])
if open_until > longest then
  open_until = longest
  redis.call('HSET', KEYS[1], 'open_until', string.format('%d', open_until))
end
if now < open_until then
  return 0
end
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[1]) then
  return 1
end
return 0
";

/// A transient failure. `KEYS` as for [`ADMIT`]; `ARGV`: the threshold, how
/// long the breaker stays open (ms), how long an entry is kept (ms).
///
/// The consecutive count goes up; at the threshold — or on any failure once
/// the breaker has opened (a failed probe, a call that was already out) — it
/// opens, or opens again, until now + the open time.
pub(super) const FAILURE: &str = r"
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
local open_until = redis.call('HGET', KEYS[1], 'open_until')
if open_until or failures >= tonumber(ARGV[1]) then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[1], 'open_until', string.format('%d', now + tonumber(ARGV[2])))
  redis.call('DEL', KEYS[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return failures
";
