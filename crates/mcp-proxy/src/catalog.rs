//! The tools a proxy offers: each upstream's, by the name the client calls
//! it (its own with one upstream, `NAME__TOOL` with several), with the
//! policy the operator declared for it.
//!
//! # Why a catalog is rebuilt, never edited
//!
//! An upstream whose tools change lists them all again, and the proxy
//! builds a new catalog from every upstream's latest list
//! ([`Catalog::relisted`]) — the same names, the same policy file — and
//! swaps it in whole: a call in flight keeps the catalog it started with,
//! and no call sees half of a change. A policy that no longer fits (its tool
//! is gone, or the read its verification names) is an error at startup, when
//! the operator is there to fix the file, but only a warning once the proxy
//! serves ([`Catalog::apply_leniently`]): the rest of the file still holds.

use std::collections::HashMap;

use recourse::correction::Schema;
use recourse::{Call, CallBuilder};
use recourse_mcp::McpTool;
use serde_json::Value;

use crate::error::ProxyError;
use crate::upstream::offered_name;
use recourse_door::policy::{ToolPolicies, ToolPolicy};

/// One tool as offered to the client.
#[derive(Debug, Clone)]
pub(crate) struct Offered {
    /// The name the client calls it by.
    pub(crate) name: String,
    /// Which upstream has it (an index into the proxy's upstreams).
    pub(crate) upstream: usize,
    /// The tool as its upstream describes it, by the upstream's name for it.
    pub(crate) tool: McpTool,
    /// The tool as its upstream listed it, every field kept, renamed to `name`.
    pub(crate) listed: Value,
    /// Its `inputSchema`, compiled once here rather than for every call.
    pub(crate) input: Option<Schema>,
    /// Its `outputSchema`, when it declares a usable one.
    pub(crate) output: Option<Schema>,
    /// What the operator's policy file says of it.
    pub(crate) policy: Option<ToolPolicy>,
}

impl Offered {
    /// The call this tool's arguments `payload` make, with the operator's
    /// policy for it and the caller's key.
    pub(crate) fn described(
        &self,
        payload: Value,
        call_id: &str,
        key: Option<String>,
    ) -> CallBuilder {
        let mut call = Call::builder(self.tool.name.clone(), payload).call_id(call_id);
        // Compiled with the catalog: `prepare` compiles only a schema not given.
        if let Some(input) = &self.input {
            call = call.compiled_schema(input.clone());
        }
        let mut call = self.tool.prepare(call);
        if let Some(policy) = &self.policy {
            if let Some(idempotent) = policy.idempotent {
                call = call.idempotent(idempotent);
            }
            // Declared for every call of the tool: a call that cannot fill
            // it runs without it (`verification: not_applicable`).
            if let Some(verify) = &policy.verify {
                call = call.verify_if_applicable(verify.clone());
            }
            for pointer in &policy.protect {
                call = call.protect(pointer.clone());
            }
            if let Some(n) = policy.max_retries {
                call = call.max_retries(n);
            }
        }
        if let Some(key) = key {
            call = call.idempotency_key(key);
        }
        call
    }
}

/// What one upstream listed: its tools, every field kept, and as recourse
/// reads them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    /// The name its tools are offered under (`NAME__TOOL`), when they are.
    pub(crate) prefix: Option<String>,
    /// Its tools, each as it listed it.
    pub(crate) listed: Vec<Value>,
    /// Its tools, as recourse reads them.
    pub(crate) described: Vec<McpTool>,
}

/// Every offered tool, in the upstreams' order and each upstream's.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    tools: Vec<Offered>,
    index: HashMap<String, usize>,
    /// What each upstream listed, by its index: what a rebuild starts from.
    listings: Vec<Listing>,
}

impl Catalog {
    /// The catalog of what the upstreams listed (`listings[i]` is upstream
    /// `i`'s), with no policy applied yet.
    ///
    /// # Errors
    /// An upstream lists a tool twice, or its two lists disagree (it changed
    /// them while they were read).
    pub(crate) fn build(listings: Vec<Listing>) -> Result<Self, ProxyError> {
        let mut catalog = Self::default();
        for (upstream, listing) in listings.iter().enumerate() {
            catalog.add(upstream, listing)?;
        }
        catalog.listings = listings;
        Ok(catalog)
    }

    /// This catalog rebuilt with what upstream `upstream` lists now (its
    /// tools as `listed` and as `described`), with no policy applied yet.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub(crate) fn relisted(
        &self,
        upstream: usize,
        listed: Vec<Value>,
        described: Vec<McpTool>,
    ) -> Result<Self, ProxyError> {
        let mut listings = self.listings.clone();
        if let Some(slot) = listings.get_mut(upstream) {
            slot.listed = listed;
            slot.described = described;
        }
        Self::build(listings)
    }

    /// Whether this catalog offers the same tools as `other`, each as listed.
    pub(crate) fn offers_as(&self, other: &Self) -> bool {
        self.tools.len() == other.tools.len()
            && self
                .tools
                .iter()
                .zip(&other.tools)
                .all(|(a, b)| a.listed == b.listed)
    }

    /// Adds the tools upstream `upstream` listed, and described.
    fn add(&mut self, upstream: usize, listing: &Listing) -> Result<(), ProxyError> {
        let prefix = listing.prefix.as_deref();
        for entry in &listing.listed {
            let mut entry = entry.clone();
            let own = entry["name"].as_str().unwrap_or_default().to_owned();
            let Some(tool) = listing.described.iter().find(|t| t.name == own) else {
                return Err(ProxyError::unreachable(format!(
                    "the tool {own:?} changed while it was being listed; start again"
                )));
            };
            let name = offered_name(prefix, &own);
            if self.index.contains_key(&name) {
                return Err(ProxyError::config(format!(
                    "two tools would be offered as {name:?}: an upstream lists it twice"
                )));
            }
            entry["name"] = Value::String(name.clone());
            let output = entry
                .get("outputSchema")
                .filter(|schema| schema.is_object())
                .and_then(|schema| Schema::compile(schema).ok());
            let input = Schema::compile(&tool.input_schema).ok();
            self.index.insert(name.clone(), self.tools.len());
            self.tools.push(Offered {
                name,
                upstream,
                tool: tool.clone(),
                listed: entry,
                input,
                output,
                policy: None,
            });
        }
        Ok(())
    }

    /// The tool offered as `name`.
    pub(crate) fn find(&self, name: &str) -> Option<&Offered> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// Every offered tool.
    pub(crate) fn tools(&self) -> &[Offered] {
        &self.tools
    }

    /// Gives each tool its policy; a verification's read is aimed at the
    /// upstream's own name for it.
    ///
    /// # Errors
    /// A tool no upstream offers, or a verification reading a tool that is
    /// not offered, is on another upstream, or is the write itself.
    pub(crate) fn apply(&mut self, policies: &ToolPolicies) -> Result<(), ProxyError> {
        for (name, policy) in policies.tools() {
            let policy = self.fit(name, policy).map_err(|misfit| match misfit {
                Misfit::Unoffered(why) | Misfit::Verify(why, _) => ProxyError::config(why),
            })?;
            self.give(name, policy);
        }
        Ok(())
    }

    /// Gives each tool its policy, as [`apply`](Self::apply) does, once the
    /// proxy serves: a policy whose tool is not offered is left out, and a
    /// verification that cannot run is left out of its policy (the rest of
    /// it, `idempotent: false` above all, still holds). What was left out,
    /// one line each.
    pub(crate) fn apply_leniently(&mut self, policies: &ToolPolicies) -> Vec<String> {
        let mut left_out = Vec::new();
        for (name, policy) in policies.tools() {
            match self.fit(name, policy) {
                Ok(policy) => self.give(name, policy),
                Err(Misfit::Unoffered(why)) => {
                    left_out.push(format!("{why}; its policy is unused"))
                }
                Err(Misfit::Verify(why, policy)) => {
                    left_out.push(format!("{why}; the tool's writes are not read back"));
                    self.give(name, *policy);
                }
            }
        }
        left_out
    }

    /// `policy` for the tool offered as `name`, its verification's read
    /// aimed at the upstream's own name for it; or why it does not fit.
    fn fit(&self, name: &str, policy: &ToolPolicy) -> Result<ToolPolicy, Misfit> {
        let Some(offered) = self.find(name) else {
            return Err(Misfit::Unoffered(format!(
                "the policy file names the tool {name:?}, which no upstream offers (offered: {})",
                self.names().join(", ")
            )));
        };
        let mut policy = policy.clone();
        let Some(verify) = &mut policy.verify else {
            return Ok(policy);
        };
        let read = verify.tool.clone().unwrap_or_default();
        let why = match self.find(&read) {
            None => format!(
                "tools.{name}.verify: the tool {read:?} is not offered (offered: {})",
                self.names().join(", ")
            ),
            Some(reader) if reader.upstream != offered.upstream || reader.name == name => format!(
                "tools.{name}.verify: the read {read:?} must be another tool of the same upstream"
            ),
            Some(reader) => {
                verify.tool = Some(reader.tool.name.clone());
                return Ok(policy);
            }
        };
        policy.verify = None;
        Err(Misfit::Verify(why, Box::new(policy)))
    }

    fn give(&mut self, name: &str, policy: ToolPolicy) {
        if let Some(&i) = self.index.get(name) {
            self.tools[i].policy = Some(policy);
        }
    }

    /// The offered names, for messages.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }
}

/// Why a policy does not fit the offered tools.
enum Misfit {
    /// No upstream offers its tool.
    Unoffered(String),
    /// Its verification cannot run; the policy without it.
    Verify(String, Box<ToolPolicy>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn described(name: &str) -> McpTool {
        McpTool {
            name: name.into(),
            description: None,
            input_schema: json!({"type": "object"}),
            idempotent_hint: None,
            destructive_hint: None,
            read_only_hint: None,
        }
    }

    fn listed(name: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object"}})
    }

    /// What an upstream named `prefix` lists: tools of these names.
    fn listing(prefix: Option<&str>, names: &[&str]) -> Listing {
        Listing {
            prefix: prefix.map(str::to_owned),
            listed: names.iter().map(|n| listed(n)).collect(),
            described: names.iter().map(|n| described(n)).collect(),
        }
    }

    fn policy(text: &str) -> ToolPolicies {
        ToolPolicies::from_json(text.as_bytes()).unwrap()
    }

    fn verify(write: &str, read: &str) -> ToolPolicies {
        policy(&format!(
            r#"{{"tools": {{"{write}": {{"idempotent": false, "verify": {{"tool": "{read}", "expect": ["/x exists"]}}}}}}}}"#
        ))
    }

    #[test]
    fn tools_keep_every_field_and_take_their_offered_name() {
        let listed = json!({"name": "read", "title": "Read", "inputSchema": {"type": "object"},
                            "outputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true},
                            "_meta": {"x": 1}});
        let fs = Listing {
            prefix: Some("fs".into()),
            listed: vec![listed.clone()],
            described: vec![described("read")],
        };
        let catalog = Catalog::build(vec![listing(Some("a"), &[]), fs]).unwrap();
        let offered = catalog.find("fs__read").unwrap();
        assert_eq!(offered.upstream, 1);
        assert_eq!(offered.tool.name, "read");
        let mut expected = listed;
        expected["name"] = json!("fs__read");
        assert_eq!(offered.listed, expected);
        assert!(catalog.find("read").is_none());
    }

    #[test]
    fn a_name_offered_twice_is_refused() {
        let err = Catalog::build(vec![listing(None, &["t", "t"])]).unwrap_err();
        assert!(err.to_string().contains("\"t\""), "{err}");
    }

    #[test]
    fn a_policy_names_offered_tools_and_reads_on_the_same_upstream() {
        let both = |prefix| listing(Some(prefix), &["write", "read"]);
        let mut catalog = Catalog::build(vec![both("a"), both("b")]).unwrap();
        let err = catalog
            .apply(&policy(r#"{"tools": {"write": {}}}"#))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("\"write\", which no upstream offers"),
            "{err}"
        );
        for (write, read, says) in [
            ("a__write", "b__read", "same upstream"),
            ("a__write", "a__write", "another tool"),
            ("a__write", "a__nope", "\"a__nope\" is not offered"),
        ] {
            let err = catalog.apply(&verify(write, read)).unwrap_err();
            assert!(err.to_string().contains(says), "{write} {read}: {err}");
        }
        catalog.apply(&verify("a__write", "a__read")).unwrap();
        let policy = catalog.find("a__write").unwrap().policy.as_ref().unwrap();
        let read = policy.verify.as_ref().unwrap().tool.as_deref();
        assert_eq!(read, Some("read"), "the upstream's own name is called");
    }

    #[test]
    fn a_relisted_upstream_changes_only_its_own_tools() {
        let catalog =
            Catalog::build(vec![listing(Some("a"), &["x"]), listing(Some("b"), &["y"])]).unwrap();
        let Listing {
            listed, described, ..
        } = listing(None, &["y", "z"]);
        let grown = catalog.relisted(1, listed, described).unwrap();
        assert_eq!(grown.names(), ["a__x", "b__y", "b__z"]);
        assert_eq!(grown.find("b__z").unwrap().upstream, 1);
        assert!(!grown.offers_as(&catalog));
        let Listing {
            listed, described, ..
        } = listing(None, &["x"]);
        let same = grown.relisted(0, listed, described).unwrap();
        assert!(same.offers_as(&grown));
    }

    #[test]
    fn once_serving_a_policy_that_no_longer_fits_is_left_out_not_refused() {
        let catalog = Catalog::build(vec![listing(None, &["write", "read", "gone"])]).unwrap();
        let Listing {
            listed, described, ..
        } = listing(None, &["write"]);
        let mut shrunk = catalog.relisted(0, listed, described).unwrap();
        let policies = policy(
            r#"{"tools": {"gone": {"idempotent": true},
                          "write": {"idempotent": false, "max_retries": 1,
                                    "verify": {"tool": "read", "expect": ["/x exists"]}}}}"#,
        );
        let left_out = shrunk.apply_leniently(&policies);
        assert_eq!(left_out.len(), 2, "{left_out:?}");
        assert!(
            left_out[0].contains("\"gone\", which no upstream offers"),
            "{left_out:?}"
        );
        assert!(left_out[1].contains("tools.write.verify"), "{left_out:?}");
        // The write keeps what still holds: never resent, its own retry limit.
        let kept = shrunk.find("write").unwrap().policy.as_ref().unwrap();
        assert_eq!(kept.idempotent, Some(false));
        assert_eq!(kept.max_retries, Some(1));
        assert!(kept.verify.is_none());
        // At startup the same file is refused.
        assert!(shrunk.apply(&policies).is_err());
    }
}
