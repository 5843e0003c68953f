//! One check for the names of every named enum of the core (tests only).
//!
//! # Why the names are generated
//!
//! Each enum's snake-case names are what scripts, journals, the record and
//! the API document read, so they must not drift. They are written nowhere
//! by hand: serde's `rename_all` spells them for (de)serialization, and
//! strum's `serialize_all` for `as_str`, `FromStr` and the lists of names
//! (`VariantNames`, `EnumIter`) that schemas and tests use. Both follow the
//! same rule from the same variant; [`check`] holds them to one spelling,
//! variant by variant.

use std::collections::HashSet;
use std::fmt::Debug;
use std::str::FromStr;

use serde::Serialize;
use serde::de::DeserializeOwned;
use strum::{IntoEnumIterator, VariantNames};

/// Every variant of `T`, named the same by serde and by strum, once each,
/// in snake case; and read back from its name by both.
pub(crate) fn check<T>()
where
    T: IntoEnumIterator + VariantNames + Into<&'static str> + FromStr,
    T: Copy + Debug + PartialEq + Serialize + DeserializeOwned,
{
    let all: Vec<T> = T::iter().collect();
    assert_eq!(all.len(), T::VARIANTS.len());
    let mut seen = HashSet::new();
    for (variant, listed) in all.into_iter().zip(T::VARIANTS) {
        let name: &'static str = variant.into();
        assert_eq!(name, *listed, "{variant:?}");
        assert!(seen.insert(name), "{name} twice");
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{name} is not snake case"
        );
        assert_eq!(serde_json::to_value(variant).unwrap(), name, "{variant:?}");
        let read: T = serde_json::from_value(name.into()).unwrap();
        assert_eq!(read, variant);
        assert_eq!(name.parse::<T>().ok(), Some(variant));
    }
}

#[cfg(test)]
mod tests {
    use strum::EnumCount;

    use super::*;
    use crate::idempotency::Evidence;
    use crate::policy::{ActionKind, StopKind, Verification, VerifyResult, WaitCause};
    use crate::record::{
        CallState, CoercionRule, CorrectionLayer, GateRule, LookupResult, NextStep, OutcomeKind,
        PayloadSource, Verdict, VerifyPhase,
    };
    use crate::transport::TransportFailureKind;

    #[test]
    fn serde_and_strum_spell_every_name_alike() {
        check::<ActionKind>();
        check::<StopKind>();
        check::<Verification>();
        check::<VerifyResult>();
        check::<WaitCause>();
        check::<CallState>();
        check::<crate::approval::ApprovalState>();
        check::<CoercionRule>();
        check::<CorrectionLayer>();
        check::<GateRule>();
        check::<LookupResult>();
        check::<NextStep>();
        check::<OutcomeKind>();
        check::<PayloadSource>();
        check::<VerifyPhase>();
        check::<Evidence>();
        check::<TransportFailureKind>();
    }

    #[test]
    fn a_verdict_is_named_by_its_tag() {
        let mut verdicts = vec![Verdict::Fixed, Verdict::CannotFix, Verdict::Skipped];
        verdicts.extend(GateRule::iter().map(|rule| Verdict::RejectedByGate { rule }));
        let mut names = HashSet::new();
        for verdict in verdicts {
            let json = serde_json::to_value(verdict).unwrap();
            assert_eq!(json["verdict"], verdict.as_str());
            names.insert(verdict.as_str());
        }
        assert_eq!(names.len(), Verdict::COUNT, "every verdict is named");
    }

    #[test]
    fn a_names_parse_error_is_an_error() {
        assert_eq!(CallState::parse("in_flight"), Some(CallState::InFlight));
        assert_eq!(CallState::parse("InFlight"), None);
        assert!("nope".parse::<StopKind>().is_err());
        let err = serde_json::from_value::<Verification>("nope".into()).unwrap_err();
        assert!(err.to_string().contains("`already_applied`"), "{err}");
    }
}
