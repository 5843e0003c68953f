//! How a call's unknown outcome can be settled, and what the call asks its
//! tool's manifest for before it starts.
//!
//! Both are decided before the first attempt, from what the call was given:
//! a declared read-back verification outranks a lookup (it reads the
//! write's effect, not the tool's word about it); a write with neither
//! takes the one its manifest entry declares, and a call whose idempotency
//! nobody declared takes the manifest's word for that too — through the
//! evidence order of [`Idempotency::decide`].

use crate::idempotency::{Evidence, Idempotency};
use crate::method::Method;

/// How a call's unknown outcome can be settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// Nothing can tell: an unknown outcome stays unknown.
    None,
    /// A reconciler looks the write up by its key or operation id.
    Operation,
    /// A declared verification reads the write's effect back.
    ReadBack {
        /// Read once before the first dispatch too.
        before: bool,
        /// Read a success back as well, not only an unknown outcome.
        always: bool,
    },
}

impl Lookup {
    /// The lookup a call uses: `read_back`, the [`Lookup::ReadBack`] of its
    /// declared verification, when it has one; else an operation lookup
    /// when a reconciler (the call's own, or the executor's) can look the
    /// write up; else none.
    ///
    /// ```
    /// use recourse_core::machine::Lookup;
    ///
    /// let read = Lookup::ReadBack { before: true, always: false };
    /// assert_eq!(Lookup::choose(Some(read), true), read);
    /// assert_eq!(Lookup::choose(None, true), Lookup::Operation);
    /// assert_eq!(Lookup::choose(None, false), Lookup::None);
    /// ```
    pub fn choose(read_back: Option<Self>, reconciler: bool) -> Self {
        match read_back {
            Some(read_back) => read_back,
            None if reconciler => Self::Operation,
            None => Self::None,
        }
    }
}

/// What a call asks its tool's manifest before it starts: its idempotency,
/// when neither the caller nor the tool declared it, and a lookup, when
/// the call may write and nothing could settle it.
///
/// ```
/// use recourse_core::idempotency::{Evidence, Idempotency};
/// use recourse_core::machine::{Lookup, ManifestQuestion};
/// use recourse_core::method::Method;
///
/// // A POST nobody declared, with no lookup: ask for both.
/// let post = Idempotency::decide(None, None, Some(Method::Post));
/// let asked = ManifestQuestion::of(true, post, Lookup::None).unwrap();
/// let declared = asked.idempotency(post, false, Some(Method::Post));
/// assert_eq!(declared, Idempotency { idempotent: false, from: Evidence::Manifest });
/// assert!(asked.adopts_lookup(declared));
/// // A read the caller declared, with nothing to settle: nothing to ask.
/// let read = Idempotency::decide(Some(true), None, Some(Method::Post));
/// assert_eq!(ManifestQuestion::of(false, read, Lookup::None), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManifestQuestion {
    evidence: bool,
    lookup: bool,
}

impl ManifestQuestion {
    /// What a call asks, if anything: `undeclared` when neither its caller
    /// nor its tool said whether it is idempotent (an HTTP call, whose
    /// manifest outranks its method), `idempotency` as decided so far,
    /// `lookup` the call's own ([`Lookup::choose`]).
    pub fn of(undeclared: bool, idempotency: Idempotency, lookup: Lookup) -> Option<Self> {
        let lookup = lookup == Lookup::None && (undeclared || !idempotency.idempotent);
        (undeclared || lookup).then_some(Self {
            evidence: undeclared,
            lookup,
        })
    }

    /// The call's idempotency once its manifest entry declared
    /// `idempotent`: the manifest's word, in the evidence order, when it was
    /// asked for it; `before` otherwise.
    pub fn idempotency(
        self,
        before: Idempotency,
        idempotent: bool,
        method: Option<Method>,
    ) -> Idempotency {
        if self.evidence {
            Idempotency::decide(None, Some((idempotent, Evidence::Manifest)), method)
        } else {
            before
        }
    }

    /// Whether the call takes the lookup its manifest entry declares: it
    /// asked for one, and is not idempotent (`idempotency`, as the manifest
    /// left it) — a resend would be harmless, and needs no lookup.
    pub fn adopts_lookup(self, idempotency: Idempotency) -> bool {
        self.lookup && !idempotency.idempotent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_back_outranks_a_lookup_which_outranks_nothing() {
        let read = Lookup::ReadBack {
            before: false,
            always: true,
        };
        for (read_back, reconciler, chosen) in [
            (Some(read), true, read),
            (Some(read), false, read),
            (None, true, Lookup::Operation),
            (None, false, Lookup::None),
        ] {
            assert_eq!(Lookup::choose(read_back, reconciler), chosen);
        }
    }

    /// Whether the manifest is asked, whose word decides, and whether its
    /// lookup is taken, for every combination of declared evidence, the
    /// idempotency so far, the manifest's answer and the call's lookup.
    #[test]
    fn the_manifest_is_asked_only_for_what_nobody_else_said() {
        let (post, get) = (Some(Method::Post), Some(Method::Get));
        let default = Idempotency::decide(None, None, post);
        let method = Idempotency::decide(None, None, get);
        let caller_no = Idempotency::decide(Some(false), None, post);
        let caller_yes = Idempotency::decide(Some(true), None, post);
        let manifest = |idempotent| Idempotency {
            idempotent,
            from: Evidence::Manifest,
        };
        let op = Lookup::Operation;
        // (undeclared, so far, lookup, method, manifest says) →
        // (asked, idempotency after, lookup adopted)
        let cases = [
            (
                (true, default, Lookup::None, post, false),
                (true, manifest(false), true),
            ),
            (
                (true, default, Lookup::None, post, true),
                (true, manifest(true), false),
            ),
            (
                (true, method, Lookup::None, get, false),
                (true, manifest(false), true),
            ),
            (
                (true, method, op, get, false),
                (true, manifest(false), false),
            ),
            (
                (true, default, op, post, true),
                (true, manifest(true), false),
            ),
            (
                (false, caller_no, Lookup::None, post, true),
                (true, caller_no, true),
            ),
            (
                (false, caller_no, op, post, true),
                (false, caller_no, false),
            ),
            (
                (false, caller_yes, Lookup::None, post, false),
                (false, caller_yes, false),
            ),
        ];
        for ((undeclared, so_far, lookup, m, says), (asks, after, adopts)) in cases {
            let asked = ManifestQuestion::of(undeclared, so_far, lookup);
            assert_eq!(asked.is_some(), asks, "{undeclared} {so_far:?} {lookup:?}");
            let Some(asked) = asked else { continue };
            let decided = asked.idempotency(so_far, says, m);
            assert_eq!(decided, after, "{undeclared} {so_far:?} {says}");
            assert_eq!(asked.adopts_lookup(decided), adopts, "{so_far:?} {says}");
        }
    }
}
