//! What HTTP tools declare about themselves: the capability manifest
//! (`GET /api/capabilities`), read for each origin once and cached.
//!
//! The executor asks the manifest whether the tool declares an endpoint and
//! method idempotent, when the caller did not say; and, for a write with no
//! lookup of its own, how to settle it if its outcome is unknown — the
//! entry's `reconcile` lookup or `verify` read-back, on the tool's own origin;
//! and whether a person must approve a call before it is sent (the entry's
//! `approval`, asked by the gateway). A manifest
//! that is missing (a 4xx such as 404) or silent about the endpoint is
//! remembered as such for the same time as a good one, so a tool without a
//! manifest costs one lookup per minute, not one per call. A manifest that
//! cannot be read now — no answer, a timeout, a 5xx (or 408, 429), a body
//! that is not one — is never taken for "no manifest": it is
//! [`Entry::Unavailable`] for a second, then asked again, and a door that
//! gates calls on the manifest refuses a call that may write meanwhile. Calls that find nothing remembered
//! while a lookup of their origin runs wait for it rather than each starting
//! their own: a thousand calls arriving at once make one request.

mod read;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use recourse_protocol::parse_response;
use serde_json::Value;
use tokio::sync::OnceCell;
use url::Url;

use crate::clock::SystemClock;
use crate::verify::VerifySpec;
use read::{answers_for_now, declared_approval, on_origin, origin, path_matches};
use recourse_core::allow::TargetAllowlist;
use recourse_core::approval::ApprovalSpec;
use recourse_core::clock::Clock;
use recourse_core::method::Method;

/// Where tool servers list their capabilities.
pub const MANIFEST_PATH: &str = "/api/capabilities";

/// How long a manifest (or its absence) is remembered.
const DEFAULT_TTL: Duration = Duration::from_secs(60);

/// How long a lookup that got no answer (a connection that failed, a
/// timeout) is remembered: long enough that a flood of calls does not ask
/// once each, short enough that one lost answer does not make every call to
/// the origin a possible write for a whole TTL.
const UNANSWERED_TTL: Duration = recourse_core::timing::MANIFEST_RETRY_AFTER;
/// The most origins remembered at once.
const MAX_ORIGINS: usize = 256;
/// The largest manifest read.
const MAX_MANIFEST_BYTES: usize = 1024 * 1024;

/// Capability manifests by origin, cached.
///
/// ```
/// use recourse::Method;
/// use recourse::manifest::CapabilityManifests;
/// use serde_json::json;
///
/// let manifests = CapabilityManifests::new();
/// let manifest = json!({"success": true, "data": {"capabilities": [
///     {"endpoint": "/api/exports", "method": "POST", "idempotent": false},
///     {"endpoint": "/api/exports/{operation_id}", "method": "GET", "idempotent": true}
/// ]}});
/// let url = "http://127.0.0.1:8700/api/exports/op-1".parse().unwrap();
/// manifests.remember(&url, &manifest);
/// assert_eq!(manifests.cached(&url, Method::Get), Some(Some(true)));
/// let write = "http://127.0.0.1:8700/api/exports".parse().unwrap();
/// assert_eq!(manifests.cached(&write, Method::Post), Some(Some(false)));
/// assert_eq!(manifests.cached(&write, Method::Put), Some(None), "silent about PUT");
/// ```
pub struct CapabilityManifests {
    client: reqwest::Client,
    ttl: Duration,
    clock: Arc<dyn Clock>,
    allowlist: Option<Arc<TargetAllowlist>>,
    origins: Mutex<HashMap<String, Cached>>,
    /// The lookup running for an origin, for the calls that wait on it.
    fetching: Mutex<HashMap<String, Arc<OnceCell<()>>>>,
}

impl std::fmt::Debug for CapabilityManifests {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapabilityManifests")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

struct Cached {
    at: Instant,
    /// How long it holds: the TTL for an answer, less for no answer.
    ttl: Duration,
    /// What the origin's manifest came to.
    held: Held,
}

/// What is remembered of an origin's manifest.
enum Held {
    /// Its entries that declare their idempotency.
    Manifest(Vec<Declared>),
    /// It has none: it answered so (a 4xx), or may not be asked (not allowed).
    NoManifest,
    /// It could not be read now.
    Unavailable,
}

/// What is known of one endpoint and method from its origin's manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// The manifest declares it.
    Declared(Arc<Declaration>),
    /// The origin has no manifest, or its manifest says nothing of it.
    Silent,
    /// The manifest could not be read (no answer, a timeout, a 5xx, not a
    /// manifest): whether it declares anything is not known.
    Unavailable,
}

impl Entry {
    /// The declaration, when there is one.
    pub fn declaration(self) -> Option<Arc<Declaration>> {
        match self {
            Self::Declared(declaration) => Some(declaration),
            Self::Silent | Self::Unavailable => None,
        }
    }
}

/// One manifest entry that says whether it is idempotent.
#[derive(Debug, Clone, PartialEq)]
struct Declared {
    method: Method,
    endpoint: String,
    /// Shared: every call to the endpoint reads it, and a clone is a count.
    declaration: Arc<Declaration>,
}

/// What a manifest declares of one endpoint and method.
#[derive(Debug, Clone, PartialEq)]
pub struct Declaration {
    /// Whether sending it twice does what sending it once does.
    pub idempotent: bool,
    /// The lookup that settles an unknown outcome: a URL template
    /// (`{operation_id}`, `{key}`) on the tool's own origin.
    pub reconcile: Option<String>,
    /// The read-back that settles it, its `url` on the tool's own origin.
    pub verify: Option<VerifySpec>,
    /// A person must approve a call before it is sent: the entry's
    /// `approval: {"reason", "expires_in"?}`. An entry whose `approval` is
    /// anything but absent, `null` or `false` — a malformed one too —
    /// requires one (with the default time to decide, and a reason of its
    /// own when it gives none that can be used).
    pub approval: Option<ApprovalSpec>,
}

impl Default for CapabilityManifests {
    fn default() -> Self {
        Self::new()
    }
}

impl CapabilityManifests {
    /// Manifests remembered for 60 s, fetched with a 5 s timeout and no redirects.
    pub fn new() -> Self {
        let client = crate::tls::client_builder()
            .timeout(Duration::from_secs(5))
            // A lookup runs once a TTL per origin: a connection kept that long
            // would meet the tool's own idle timeout (60 s in ours) just as
            // it is reused, and lose the answer.
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("recourse/", env!("CARGO_PKG_VERSION")))
            .build()
            .unwrap_or_default();
        Self {
            client,
            ttl: DEFAULT_TTL,
            clock: Arc::new(SystemClock),
            allowlist: None,
            origins: Mutex::default(),
            fetching: Mutex::default(),
        }
    }

    /// Remembers manifests for `ttl`.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Measures the time to live on `clock`.
    #[must_use]
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Fetches manifests only from URLs `allowlist` allows (a gateway whose
    /// targets are limited to a path must not read outside it).
    #[must_use]
    pub fn with_allowlist(mut self, allowlist: Arc<TargetAllowlist>) -> Self {
        self.allowlist = Some(allowlist);
        self
    }

    /// The allowlist manifests (and the lookups they declare) are read within, if any.
    pub fn allowlist(&self) -> Option<Arc<TargetAllowlist>> {
        self.allowlist.clone()
    }

    /// Whether the tool at `url` declares `method` there idempotent: fetched
    /// (or remembered) from the URL's origin within `timeout` (a manifest
    /// that does not arrive in time counts as missing); `None` when it says
    /// nothing.
    pub async fn declares(&self, url: &Url, method: Method, timeout: Duration) -> Option<bool> {
        self.declaration(url, method, timeout)
            .await
            .map(|d| d.idempotent)
    }

    /// What the tool at `url` declares of `method` there — as
    /// [`declares`](Self::declares) finds it, with the entry's lookup and
    /// read-back.
    pub async fn declaration(
        &self,
        url: &Url,
        method: Method,
        timeout: Duration,
    ) -> Option<Arc<Declaration>> {
        self.entry(url, method, timeout).await.declaration()
    }

    /// What `url`'s origin's manifest says of `method` there, fetched (or
    /// remembered) within `timeout`: a manifest that does not arrive in time
    /// is [`Entry::Unavailable`], never [`Entry::Silent`].
    pub async fn entry(&self, url: &Url, method: Method, timeout: Duration) -> Entry {
        if let Some(known) = self.cached_entry(url, method) {
            return known;
        }
        // One lookup per origin at a time; each caller waits at most its own
        // `timeout`, and if the one running it stops waiting, the next
        // caller runs it.
        let fetching = self.fetching(url);
        let fetched = fetching.cell.get_or_init(|| async {
            match tokio::time::timeout(timeout, self.fetch(url)).await {
                Ok(Lookup::Answered(manifest)) => {
                    let declared = self.declarations(url, &manifest);
                    self.store(url, Held::Manifest(declared), self.ttl);
                }
                Ok(Lookup::NoManifest) => self.store(url, Held::NoManifest, self.ttl),
                Ok(Lookup::Unanswered) | Err(_) => {
                    self.store(url, Held::Unavailable, UNANSWERED_TTL);
                }
            }
        });
        let _in_time = tokio::time::timeout(timeout, fetched).await;
        drop(fetching);
        self.cached_entry(url, method).unwrap_or(Entry::Unavailable)
    }

    /// The lookup of `url`'s origin to wait on: the running one, or a new
    /// one when none runs (a finished lookup is never waited on again: what
    /// it found is in the cache, or has expired).
    fn fetching(&self, url: &Url) -> Fetching<'_> {
        let origin = origin(url).into_owned();
        let mut fetching = self.fetching.lock().unwrap_or_else(PoisonError::into_inner);
        let cell = match fetching.get(&origin) {
            Some(cell) if !cell.initialized() => Arc::clone(cell),
            _ => {
                let cell = Arc::new(OnceCell::new());
                fetching.insert(origin.clone(), Arc::clone(&cell));
                cell
            }
        };
        Fetching {
            map: &self.fetching,
            origin,
            cell,
        }
    }

    /// What is remembered for `url` and `method`: `None` when nothing (fresh)
    /// is; `Some(None)` when the manifest is missing or silent about it.
    pub fn cached(&self, url: &Url, method: Method) -> Option<Option<bool>> {
        self.cached_declaration(url, method)
            .map(|known| known.map(|d| d.idempotent))
    }

    /// As [`cached`](Self::cached), the whole declaration (a manifest that
    /// could not be read declares nothing).
    pub fn cached_declaration(
        &self,
        url: &Url,
        method: Method,
    ) -> Option<Option<Arc<Declaration>>> {
        self.cached_entry(url, method).map(Entry::declaration)
    }

    /// What is remembered (fresh) of `url`'s origin's manifest for `method`
    /// there; `None` when nothing is.
    pub fn cached_entry(&self, url: &Url, method: Method) -> Option<Entry> {
        let now = self.clock.now();
        let origins = self.origins.lock().unwrap_or_else(PoisonError::into_inner);
        let cached = origins.get(origin(url).as_ref())?;
        if now.saturating_duration_since(cached.at) >= cached.ttl {
            return None;
        }
        Some(match &cached.held {
            Held::Manifest(declared) => declared
                .iter()
                .find(|d| d.method == method && path_matches(&d.endpoint, url.path()))
                .map_or(Entry::Silent, |d| {
                    Entry::Declared(Arc::clone(&d.declaration))
                }),
            Held::NoManifest => Entry::Silent,
            Held::Unavailable => Entry::Unavailable,
        })
    }

    /// Remembers `manifest` as the manifest of `url`'s origin.
    pub fn remember(&self, url: &Url, manifest: &Value) {
        self.store(
            url,
            Held::Manifest(self.declarations(url, manifest)),
            self.ttl,
        );
    }

    /// The entries of a manifest (an envelope's `data.capabilities`, or a
    /// bare `{"capabilities": […]}`) that declare their idempotency; their
    /// lookups and read-backs only where they stay on `url`'s origin and the
    /// allowlist admits them.
    fn declarations(&self, url: &Url, manifest: &Value) -> Vec<Declared> {
        let origin = origin(url);
        let list = manifest
            .pointer("/data/capabilities")
            .or_else(|| manifest.get("capabilities"))
            .and_then(Value::as_array);
        list.into_iter()
            .flatten()
            .filter_map(|item| {
                let endpoint = item.get("endpoint")?.as_str()?;
                let idempotent = item.get("idempotent")?.as_bool()?;
                let method = match item.get("method").and_then(Value::as_str) {
                    Some(m) => m.parse().ok()?,
                    None => Method::Post,
                };
                let reconcile = item
                    .get("reconcile")
                    .and_then(Value::as_str)
                    .and_then(|t| on_origin(&origin, t))
                    .filter(|t| self.admits(t));
                let verify = item
                    .get("verify")
                    .and_then(|v| serde_json::from_value::<VerifySpec>(v.clone()).ok())
                    .and_then(|mut spec| {
                        if let Some(read) = &spec.url {
                            let absolute = on_origin(&origin, read).filter(|u| self.allows(u))?;
                            spec.url = Some(absolute);
                        }
                        Some(spec)
                    });
                Some(Declared {
                    method,
                    endpoint: endpoint.to_owned(),
                    declaration: Arc::new(Declaration {
                        idempotent,
                        reconcile,
                        verify,
                        approval: item.get("approval").and_then(declared_approval),
                    }),
                })
            })
            .collect()
    }

    /// Whether the allowlist (if any) admits `template`'s URLs.
    fn admits(&self, template: &str) -> bool {
        self.allowlist
            .as_ref()
            .is_none_or(|allow| allow.check_template(template).is_ok())
    }

    /// Whether the allowlist (if any) admits `url`.
    fn allows(&self, url: &str) -> bool {
        self.allowlist
            .as_ref()
            .is_none_or(|allow| allow.check(url).is_ok())
    }

    fn store(&self, url: &Url, held: Held, ttl: Duration) {
        let now = self.clock.now();
        let mut origins = self.origins.lock().unwrap_or_else(PoisonError::into_inner);
        if origins.len() >= MAX_ORIGINS {
            origins.retain(|_, c| now.saturating_duration_since(c.at) < c.ttl);
            if origins.len() >= MAX_ORIGINS
                && let Some(oldest) = origins
                    .iter()
                    .min_by_key(|(_, c)| c.at)
                    .map(|(k, _)| k.clone())
            {
                origins.remove(&oldest);
            }
        }
        origins.insert(origin(url).into_owned(), Cached { at: now, ttl, held });
    }

    async fn fetch(&self, url: &Url) -> Lookup {
        let mut manifest_url = url.clone();
        manifest_url.set_path(MANIFEST_PATH);
        manifest_url.set_query(None);
        manifest_url.set_fragment(None);
        if let Some(allowlist) = &self.allowlist
            && allowlist.check(manifest_url.as_str()).is_err()
        {
            return Lookup::NoManifest;
        }
        let Ok(mut response) = self.client.get(manifest_url).send().await else {
            return Lookup::Unanswered;
        };
        let status = response.status().as_u16();
        if !answers_for_now(status) {
            return Lookup::Unanswered;
        }
        if (400..500).contains(&status) {
            return Lookup::NoManifest;
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) if body.len() + chunk.len() > MAX_MANIFEST_BYTES => {
                    return Lookup::Unanswered;
                }
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                Ok(None) => break,
                Err(_) => return Lookup::Unanswered,
            }
        }
        let parsed = parse_response(status, [("content-type", "application/json")], &body);
        match parsed.success.then_some(parsed.data).flatten() {
            Some(data) => Lookup::Answered(data.into_value()),
            None => Lookup::Unanswered,
        }
    }
}

/// What asking an origin for its manifest came to.
enum Lookup {
    /// The origin answered with its manifest.
    Answered(Value),
    /// It has none: it answered a 4xx (but 408 and 429), or its manifest's
    /// URL is not allowed.
    NoManifest,
    /// It could not be read: no answer, a 5xx, 408 or 429, a body that
    /// broke off, was too large or was not a manifest.
    Unanswered,
}

/// A caller's share of an origin's lookup; the last caller to let go of it
/// (done, or no longer waiting) removes it, so the map holds only lookups
/// that someone waits on.
struct Fetching<'a> {
    map: &'a Mutex<HashMap<String, Arc<OnceCell<()>>>>,
    origin: String,
    cell: Arc<OnceCell<()>>,
}

impl Drop for Fetching<'_> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        // Held by the map and by us alone: nobody else waits on it. Shares
        // are only taken under this lock, so the count cannot grow meanwhile.
        let ours = map
            .get(&self.origin)
            .is_some_and(|cell| Arc::ptr_eq(cell, &self.cell));
        if ours && Arc::strong_count(&self.cell) <= 2 {
            map.remove(&self.origin);
        }
    }
}

#[cfg(test)]
mod tests;
