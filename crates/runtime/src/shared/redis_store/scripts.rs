//! The Lua scripts that keep the fleet's budget and breakers in Redis.
//!
//! Each runs atomically on the server and reads the server's clock (`TIME`),
//! so replicas whose clocks disagree still agree on the state. The
//! arithmetic is [`RetryBudget`](crate::budget::RetryBudget)'s and
//! [`CircuitBreakers`](crate::breaker::CircuitBreakers)', written once more in Lua.
//!
//! # Stored values are read only when small
//!
//! Every field these scripts write is a number of at most 25 characters,
//! but anyone who can write to Redis can put anything there — 1.5 GB under
//! `open_until`, say. A script asks a field's length (`HSTRLEN`, which reads
//! nothing) before reading it, and a field longer than 64 bytes, or one
//! that is not a finite number, is *unreadable*:
//! never read, never returned. Each script then takes the conservative
//! reading and overwrites the field with a number of its own, so a planted
//! value costs one decision, not every one:
//!
//! - the budget: unreadable state grants nothing until its floor refills
//!   (no earned resends, an empty floor, from now) — a missing budget, by
//!   contrast, is a fresh one with a full floor;
//! - a breaker's `open_until`: open, for no longer than the open time (as a
//!   value too far off already is), then a half-open probe — a missing one,
//!   by contrast, is closed;
//! - a breaker's `failures`: at the threshold, so the failure being
//!   recorded opens it.
//!
//! Every script answers an integer, so no stored value ever reaches the
//! client: the reply recourse reads is a number whatever Redis holds.

/// What every script begins with: `stored_number(key, field, integer)`
/// answers the field's number and whether it is unreadable — `nil, false`
/// when it is missing; `nil, true` when it is longer than 64 bytes (its
/// length asked first, the value never read), not a finite number, or, when
/// `integer`, not a whole number of at most 18 digits.
macro_rules! prelude {
    () => {
        r"
local MAX_FIELD_BYTES = 64
local function stored_number(key, field, integer)
  if redis.call('HSTRLEN', key, field) > MAX_FIELD_BYTES then
    return nil, true
  end
  local text = redis.call('HGET', key, field)
  if not text then
    return nil, false
  end
  if integer and not (string.match(text, '^%d+$') and #text <= 18) then
    return nil, true
  end
  local n = tonumber(text)
  if not n or n ~= n or n == math.huge or n == -math.huge then
    return nil, true
  end
  return n, false
end
"
    };
}

/// The budget: `KEYS[1]` a hash of `earned`, `floor` and `last` (ms).
/// `ARGV`: `deposit` or `withdraw`, the ratio, the floor per second, the
/// decay time constant (ms), and how long an idle budget is kept (ms).
/// Returns 1 when a withdrawal is granted (and for a deposit), 0 when refused.
/// A budget with an unreadable field starts again empty: nothing earned, no
/// floor left, as of now.
pub(super) const BUDGET: &str = concat!(
    prelude!(),
    r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ratio = tonumber(ARGV[2])
local per_sec = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local earned, bad_earned = stored_number(KEYS[1], 'earned', false)
local floor, bad_floor = stored_number(KEYS[1], 'floor', false)
local last, bad_last = stored_number(KEYS[1], 'last', false)
if bad_earned or bad_floor or bad_last then
  earned, floor, last = 0, 0, now
end
earned = earned or 0
floor = floor or per_sec
last = last or now
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
"
);

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
/// brought back to now + the open time, so no value keeps an endpoint shut;
/// so is an unreadable one (too long, not a number): the breaker was opened,
/// and is taken as open.
pub(super) const ADMIT: &str = concat!(
    prelude!(),
    r"
local open_until, unreadable = stored_number(KEYS[1], 'open_until', false)
if not open_until and not unreadable then
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local longest = now + tonumber(ARGV[1])
if unreadable or open_until > longest then
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
"
);

/// A transient failure. `KEYS` as for [`ADMIT`]; `ARGV`: the threshold, how
/// long the breaker stays open (ms), how long an entry is kept (ms).
///
/// The consecutive count goes up; at the threshold — or on any failure once
/// the breaker has opened (a failed probe, a call that was already out) — it
/// opens, or opens again, until now + the open time. An unreadable count
/// is taken as the threshold, so it opens.
pub(super) const FAILURE: &str = concat!(
    prelude!(),
    r"
local failures, unreadable = stored_number(KEYS[1], 'failures', true)
if unreadable then
  failures = tonumber(ARGV[1])
  redis.call('HSET', KEYS[1], 'failures', string.format('%d', failures))
else
  failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
end
local opened = redis.call('HEXISTS', KEYS[1], 'open_until') == 1
if opened or failures >= tonumber(ARGV[1]) then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[1], 'open_until', string.format('%d', now + tonumber(ARGV[2])))
  redis.call('DEL', KEYS[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return failures
"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_reads_fields_through_the_capped_reader() {
        for script in [BUDGET, ADMIT, FAILURE] {
            let body = script.strip_prefix(prelude!()).unwrap();
            assert!(
                !body.contains("'HGET'") && !body.contains("'HMGET'"),
                "{body}"
            );
            assert!(body.contains("stored_number("), "{body}");
        }
    }
}
