//! The Lua scripts that keep the fleet's budget and breakers in Redis.
//!
//! Each runs atomically on the server and reads the server's clock (`TIME`),
//! so replicas whose clocks disagree still agree on the state. The
//! arithmetic is the core machines' —
//! [`RetryTokens`](recourse_core::budget::RetryTokens)' and
//! [`BreakerTable`](recourse_core::breaker::BreakerTable)' — step for step
//! in Lua, and a property test (`agree.rs`) drives both with the same
//! events at the same times and holds them to the same decisions. So every
//! timing is decided from the clock's reading, against times the scripts
//! stored (a budget's `last`, a breaker's `failed_at`, a probe's start),
//! never by a key's expiry: an expiry (`PEXPIRE`, `PX`) only removes, at
//! the same moment, what the scripts already treat as gone.
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
//!   recorded opens it;
//! - a probe's start: a probe out from now — the breaker stays shut no
//!   longer than the open time, then the next probe goes (a start in the
//!   future is taken the same way).
//!
//! Every script answers an integer, so no stored value ever reaches the
//! client: the reply recourse reads is a number whatever Redis holds.

/// How a script reads the time: the server's clock (`TIME`), in
/// milliseconds. The property test swaps this function for one that reads
/// the time it is given.
macro_rules! server_clock {
    () => {
        r"
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"
    };
}

/// What every script begins with: `now_ms()`, the server's clock
/// ([`server_clock!`]); `stored_number(key, field, integer)`, which answers
/// a hash field's number and whether it is unreadable — `nil, false` when
/// it is missing; `nil, true` when it is longer than 64 bytes (its length
/// asked first, the value never read), not a finite number, or, when
/// `integer`, not a whole number of at most 18 digits; and
/// `stored_key(key)`, the same for a whole key holding a whole number.
macro_rules! prelude {
    () => {
        concat!(
            server_clock!(),
            r"
local MAX_FIELD_BYTES = 64
local function parsed(text, integer)
  if integer and not (string.match(text, '^%d+$') and #text <= 18) then
    return nil, true
  end
  local n = tonumber(text)
  if not n or n ~= n or n == math.huge or n == -math.huge then
    return nil, true
  end
  return n, false
end
local function stored_number(key, field, integer)
  if redis.call('HSTRLEN', key, field) > MAX_FIELD_BYTES then
    return nil, true
  end
  local text = redis.call('HGET', key, field)
  if not text then
    return nil, false
  end
  return parsed(text, integer)
end
local function stored_key(key)
  if redis.call('STRLEN', key) > MAX_FIELD_BYTES then
    return nil, true
  end
  local text = redis.call('GET', key)
  if not text then
    return nil, false
  end
  return parsed(text, true)
end
"
        )
    };
}

/// The budget: `KEYS[1]` a hash of `earned`, `floor` and `last` (ms).
/// `ARGV`: `deposit` or `withdraw`, the ratio, the floor per second, the
/// decay time constant (ms), and how long an unused budget is kept (ms).
/// Returns 1 when a withdrawal is granted (and for a deposit), 0 when refused.
/// A budget with an unreadable field starts again empty: nothing earned, no
/// floor left, as of now. A budget unused for its keeping time starts again
/// fresh, as a missing one does (its key expires then too).
pub(super) const BUDGET: &str = concat!(
    prelude!(),
    r"
local now = now_ms()
local ratio = tonumber(ARGV[2])
local per_sec = tonumber(ARGV[3])
local ttl = tonumber(ARGV[4])
local earned, bad_earned = stored_number(KEYS[1], 'earned', false)
local floor, bad_floor = stored_number(KEYS[1], 'floor', false)
local last, bad_last = stored_number(KEYS[1], 'last', false)
if bad_earned or bad_floor or bad_last then
  earned, floor, last = 0, 0, now
end
if last and now - last >= tonumber(ARGV[5]) then
  earned, floor, last = nil, nil, nil
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
/// `failures`, `failed_at` in ms and, once open, `open_until` in ms),
/// `KEYS[2]` its half-open probe (when it started, in ms). `ARGV`: how long
/// a breaker stays open, and a probe may stay out (ms); how long a breaker
/// is kept after its last failure (ms). Returns 1 to admit.
///
/// A breaker whose last failure is older than its keeping time is
/// forgotten (closed; its keys expire then too): admitted. Closed (no
/// `open_until`): admitted. Open and waiting: refused. Open past its wait:
/// one caller in the fleet takes the probe; until the probe has been out
/// for the open time (it never reported: presumed lost), nobody else does.
/// An `open_until` further off than the open time (written by something
/// else than these scripts: a clock gone wrong, a hand, an attacker) is
/// brought back to now + the open time, so no value keeps an endpoint shut;
/// so is an unreadable one (too long, not a number): the breaker was opened,
/// and is taken as open.
pub(super) const ADMIT: &str = concat!(
    prelude!(),
    r"
local now = now_ms()
local open_for = tonumber(ARGV[1])
local failed_at = stored_number(KEYS[1], 'failed_at', true)
if failed_at and now - failed_at >= tonumber(ARGV[2]) then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
local open_until, unreadable = stored_number(KEYS[1], 'open_until', false)
if not open_until and not unreadable then
  return 1
end
local longest = now + open_for
if unreadable or open_until > longest then
  open_until = longest
  redis.call('HSET', KEYS[1], 'open_until', string.format('%d', open_until))
end
if now < open_until then
  return 0
end
local since, bad_since = stored_key(KEYS[2])
if bad_since or (since and since > now) then
  redis.call('SET', KEYS[2], string.format('%d', now), 'PX', ARGV[2])
  return 0
end
if since and now < since + open_for then
  return 0
end
redis.call('SET', KEYS[2], string.format('%d', now), 'PX', ARGV[2])
return 1
"
);

/// A transient failure. `KEYS` as for [`ADMIT`]; `ARGV`: the threshold, how
/// long the breaker stays open (ms), how long an entry is kept after its
/// last failure (ms).
///
/// A breaker past its keeping time is forgotten first, as [`ADMIT`] does.
/// The consecutive count goes up; at the threshold — or on any failure once
/// the breaker has opened (a failed probe, a call that was already out) — it
/// opens, or opens again, until now + the open time. An unreadable count
/// is taken as the threshold, so it opens.
pub(super) const FAILURE: &str = concat!(
    prelude!(),
    r"
local now = now_ms()
local failed_at = stored_number(KEYS[1], 'failed_at', true)
if failed_at and now - failed_at >= tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[1], KEYS[2])
end
local failures, unreadable = stored_number(KEYS[1], 'failures', true)
if unreadable then
  failures = tonumber(ARGV[1])
  redis.call('HSET', KEYS[1], 'failures', string.format('%d', failures))
else
  failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
end
local opened = redis.call('HEXISTS', KEYS[1], 'open_until') == 1
if opened or failures >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'open_until', string.format('%d', now + tonumber(ARGV[2])))
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[1], 'failed_at', string.format('%d', now))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return failures
"
);

#[cfg(test)]
pub(super) const SERVER_CLOCK: &str = server_clock!();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_reads_values_through_the_capped_readers_and_the_clock_once() {
        for script in [BUDGET, ADMIT, FAILURE] {
            let body = script.strip_prefix(prelude!()).unwrap();
            assert!(
                !body.contains("'HGET'") && !body.contains("'HMGET'") && !body.contains("'GET'"),
                "{body}"
            );
            assert!(body.contains("stored_number("), "{body}");
            assert!(
                !body.contains("'TIME'") && body.matches("now_ms()").count() == 1,
                "{body}"
            );
            assert_eq!(script.matches(SERVER_CLOCK).count(), 1);
        }
    }
}
