use strum::IntoEnumIterator;

use super::*;

const OPEN_FOR: Duration = Duration::from_secs(5);

fn breakers() -> BreakerTable {
    BreakerTable::new(3, OPEN_FOR)
}

fn secs(t0: Instant, s: u64) -> Instant {
    t0 + Duration::from_secs(s)
}

#[test]
fn states_are_named_from_closed_to_open() {
    let now = Instant::now();
    let states = [
        BreakerState::Closed { failures: 2 },
        BreakerState::HalfOpen { since: now },
        BreakerState::Open { until: now },
    ];
    let names: Vec<&str> = states.iter().map(BreakerState::name).collect();
    assert_eq!(names, ["closed", "half_open", "open"]);
    let phases: Vec<BreakerPhase> = states.iter().map(BreakerState::phase).collect();
    assert_eq!(phases, BreakerPhase::iter().collect::<Vec<_>>());
}

/// What one endpoint's breaker answers, event by event: `F` a transient
/// failure, `H` a healthy answer, `A` an admission (with what it should
/// answer), each at a second from the start.
#[test]
fn one_breaker_event_by_event() {
    #[derive(Clone, Copy, Debug)]
    enum E {
        F(u64),
        H,
        A(u64, bool),
    }
    use E::{A, F, H};
    let forgotten = forgotten_after(OPEN_FOR).as_secs();
    let cases: &[(&str, &[E])] = &[
        (
            "opens after three in a row",
            &[
                A(0, true),
                F(0),
                F(0),
                A(0, true),
                F(0),
                A(0, false),
                A(4, false),
            ],
        ),
        (
            "a healthy answer resets the count",
            &[F(0), F(0), H, F(0), A(0, true)],
        ),
        (
            "one probe after the open time",
            &[F(0), F(0), F(0), A(5, true), A(5, false), A(9, false)],
        ),
        (
            "a failed probe reopens",
            &[
                F(0),
                F(0),
                F(0),
                A(5, true),
                F(6),
                A(10, false),
                A(11, true),
            ],
        ),
        (
            "a probe's success closes it",
            &[F(0), F(0), F(0), A(5, true), H, A(5, true), A(5, true)],
        ),
        (
            "a lost probe is replaced after another open time",
            &[
                F(0),
                F(0),
                F(0),
                A(5, true),
                A(9, false),
                A(10, true),
                A(10, false),
            ],
        ),
        (
            "a failure while open opens it again from then",
            &[F(0), F(0), F(0), F(3), A(7, false), A(8, true)],
        ),
        (
            "failures a long time apart are not consecutive",
            &[
                F(0),
                F(0),
                F(forgotten),
                A(forgotten, true),
                F(forgotten),
                A(forgotten, true),
            ],
        ),
        (
            "a breaker nobody failed for long is forgotten",
            &[
                F(0),
                F(0),
                F(0),
                A(5, true),
                A(forgotten - 1, true),
                A(forgotten, true),
                A(forgotten, true),
            ],
        ),
    ];
    for (name, events) in cases {
        let t0 = Instant::now();
        let mut b = breakers();
        for (n, event) in events.iter().enumerate() {
            match *event {
                F(s) => b.record_transient_failure("t", secs(t0, s)),
                H => b.record_healthy("t"),
                A(s, admitted) => {
                    assert_eq!(
                        b.admit("t", secs(t0, s)),
                        admitted,
                        "{name}: event {n} {event:?}"
                    );
                }
            }
        }
        assert!(b.admit("other", t0), "{name}: breakers are per endpoint");
    }
}

#[test]
fn a_healthy_answer_leaves_no_entry() {
    let now = Instant::now();
    let mut b = breakers();
    b.record_transient_failure("t", now);
    assert_eq!(b.len(now), 1);
    b.record_healthy("t");
    assert_eq!(b.len(now), 0);
    b.record_healthy("never-failed");
    assert_eq!(b.len(now), 0, "healthy answers never allocate");
}

#[test]
fn a_forgotten_breaker_is_neither_shown_nor_counted() {
    let t0 = Instant::now();
    let mut b = breakers();
    b.record_transient_failure("t", t0);
    let later = t0 + forgotten_after(OPEN_FOR);
    assert_eq!(b.state("t", t0), BreakerState::Closed { failures: 1 });
    assert_eq!(b.state("t", later), BreakerState::Closed { failures: 0 });
    assert_eq!((b.len(later), b.snapshot(later).len()), (0, 0));
    assert_eq!(forgotten_after(OPEN_FOR), Duration::from_secs(70));
}

#[test]
fn a_full_table_forgets_closed_breakers_first() {
    let now = Instant::now();
    let mut b = breakers().with_max_endpoints(3);
    for _ in 0..3 {
        b.record_transient_failure("down", now);
    }
    b.record_transient_failure("flaky-1", now);
    b.record_transient_failure("flaky-2", now);
    b.record_transient_failure("new", now);
    assert!(!b.admit("down", now), "the open breaker is kept");
    assert_eq!(b.state("new", now), BreakerState::Closed { failures: 1 });
    assert_eq!(
        b.state("flaky-1", now),
        BreakerState::Closed { failures: 0 }
    );
    assert!(b.len(now) <= 3);
}

#[test]
fn a_full_table_never_forgets_an_open_breaker_before_its_time() {
    let t0 = Instant::now();
    let mut b = breakers().with_max_endpoints(2);
    for endpoint in ["a", "b"] {
        for _ in 0..3 {
            b.record_transient_failure(endpoint, t0);
        }
    }
    for i in 0..100 {
        b.record_transient_failure(&format!("attacker-{i}"), t0);
    }
    assert!(!b.admit("a", t0) && !b.admit("b", t0), "still failing fast");
    assert_eq!(b.len(t0), 2);
    assert!(b.admit("attacker-0", t0), "untracked endpoints flow");
    let later = secs(t0, 5);
    b.record_transient_failure("c", later);
    assert_eq!(b.len(later), 1, "both waits were over: both made room");
    assert!(
        b.admit("a", later),
        "no earlier than its probe would have gone"
    );
}

#[test]
fn a_probe_in_flight_is_never_forgotten() {
    let t0 = Instant::now();
    let mut b = breakers().with_max_endpoints(1);
    for _ in 0..3 {
        b.record_transient_failure("a", t0);
    }
    let later = secs(t0, 5);
    assert!(b.admit("a", later), "the probe");
    b.record_transient_failure("b", later);
    assert!(
        !b.admit("a", later),
        "one probe at a time, even under pressure"
    );
}

#[test]
fn long_endpoints_are_cut_and_hashed() {
    let now = Instant::now();
    let mut b = breakers();
    let long = |tail: &str| format!("http://127.0.0.1/{}{tail}", "x".repeat(10_000));
    b.record_transient_failure(&long("a"), now);
    b.record_transient_failure(&long("b"), now);
    let keys: Vec<String> = b.snapshot(now).into_iter().map(|(k, _)| k).collect();
    assert_eq!(keys.len(), 2, "distinct endpoints keep distinct breakers");
    assert!(
        keys.iter().all(|k| k.chars().count() < MAX_KEY_CHARS + 20),
        "{keys:?}"
    );
    assert_eq!(
        b.state(&long("a"), now),
        BreakerState::Closed { failures: 1 }
    );
}
