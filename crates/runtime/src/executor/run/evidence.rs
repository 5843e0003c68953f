//! What a call is before its first attempt: its idempotency — asked of
//! the tool's manifest when nobody said — the key every attempt carries,
//! how an unknown outcome would be settled, and the machine's setup from
//! all that.

use recourse_core::machine::{Lookup, MachineSetup, ManifestQuestion};
use recourse_core::policy::{Traits, Verification};
use recourse_core::timing::manifest_budget;

use super::Run;
use crate::call::new_id;

impl Run<'_> {
    /// What the call's machine starts from: the limits, the traits as now
    /// known, the deadline, the backoff, and what can correct a payload or
    /// settle an unknown outcome.
    pub(super) fn setup(&mut self) -> MachineSetup {
        let mut setup =
            MachineSetup::new(self.limits, self.traits(), self.exec.config.request_timeout)
                .with_deadline(self.deadline)
                .with_corrector(self.exec.corrector.is_some())
                .with_lookup(self.lookup());
        if let Some(backoff) = self.backoff.take() {
            setup = setup.with_backoff(backoff);
        }
        setup
    }

    /// How the call settles an unknown outcome: its declared read-back,
    /// else its reconciler's or the executor's lookup, else none.
    pub(super) fn lookup(&self) -> Lookup {
        let read_back = self
            .call
            .settling
            .verifier
            .as_ref()
            .map(|v| Lookup::ReadBack {
                before: !v.after_only(),
                always: v.always(),
            });
        let reconciler = self.call.settling.reconciler.is_some() || self.exec.reconciler.is_some();
        Lookup::choose(read_back, reconciler)
    }

    /// Asks the tool's manifest what nobody else said
    /// ([`ManifestQuestion`]) — spending at most
    /// [`manifest_budget`] of the time left on it — then settles the key
    /// every attempt carries: the caller's, or a fresh one for a
    /// non-idempotent call.
    ///
    /// A write with no lookup of its own (no verification, no reconciler)
    /// takes the one its manifest entry declares, so that a write sent with
    /// nothing but a URL can still be settled.
    pub(super) async fn resolve_idempotency(&mut self) {
        let asked = ManifestQuestion::of(
            self.call.ask_manifest,
            self.keying.idempotency,
            self.lookup(),
        );
        let budget = manifest_budget(self.remaining(), self.exec.config.request_timeout);
        if let Some(asked) = asked
            && let (Some(manifests), Some(url)) = (&self.exec.manifests, self.call.target.url())
            && let Some(declared) = manifests.declaration(url, self.call.method, budget).await
        {
            let method = Some(self.call.method);
            self.keying.idempotency =
                asked.idempotency(self.keying.idempotency, declared.idempotent, method);
            if asked.adopts_lookup(self.keying.idempotency) {
                self.adopt_lookup(&declared);
            }
        }
        tracing::debug!(
            idempotent = self.keying.idempotency.idempotent,
            from = self.keying.idempotency.from.as_str(),
            "idempotency decided"
        );
        self.keying.key = self
            .call
            .caller_key
            .clone()
            .or_else(|| (!self.keying.idempotency.idempotent).then(new_id));
    }

    /// Settles this call, should its outcome be unknown, the way its
    /// manifest entry says: a read-back, else a lookup (journaled with the
    /// call, for a later settler). A declaration that does not fit the call
    /// is passed over (with a debug line): the call goes on without it.
    fn adopt_lookup(&mut self, declared: &crate::manifest::Declaration) {
        if let Some(spec) = declared.verify.clone().filter(|s| s.url.is_some()) {
            match crate::verify::Verifier::fit(spec, &self.payload.value) {
                Ok(crate::verify::Fit::Applies(verifier)) => {
                    self.call.settling.verifier = Some(std::sync::Arc::new(verifier));
                    return;
                }
                Ok(crate::verify::Fit::NotApplicable(why)) => {
                    tracing::debug!(why, "the manifest's verify does not apply to the call");
                    self.reads.verification = Some(Verification::NotApplicable);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "the manifest's verify is malformed")
                }
            }
        }
        if let Some(template) = &declared.reconcile {
            match crate::reconcile::HttpReconciler::new(template.as_str()) {
                Ok(reconciler) => {
                    let reconciler = match self.exec.manifests.as_ref().and_then(|m| m.allowlist())
                    {
                        Some(allowlist) => reconciler.with_allowlist(allowlist),
                        None => reconciler,
                    };
                    self.call.settling.reconcile_template = Some(reconciler.template().to_owned());
                    self.call.settling.reconciler = Some(std::sync::Arc::new(reconciler));
                }
                Err(e) => tracing::debug!(error = %e, "the manifest's reconcile is not a template"),
            }
        }
    }

    pub(super) fn traits(&self) -> Traits {
        Traits {
            idempotent: self.keying.idempotency.idempotent,
            delegated: self.call.delegated,
        }
    }
}
