//! What the proxy tells its clients it offers: tools; in front of one
//! upstream, that upstream's resources and prompts; and which of those lists
//! it announces changes of (`listChanged`) — where its upstreams announce
//! theirs, since the proxy hears of a change only from them.

use recourse_mcp::ListChange;
use rmcp::model::TASKS_EXTENSION_ID;
use serde_json::{Map, Value};

/// What the proxy offers its client, given what each upstream `declared`:
/// tools, announcing their changes when an upstream announces its; and — in
/// front of one upstream that declared them — its resources and prompts,
/// passed on as they are, with their change notifications when it sends
/// them, and resource subscriptions where it takes them; with a
/// `journal`, tasks (`io.modelcontextprotocol/tasks`).
pub(crate) fn offered(declared: &[Value], journal: bool) -> Value {
    let announces = |d: &Value, kind: &str| d[kind]["listChanged"] == true;
    let mut offered = Map::new();
    let mut tools = Map::new();
    if declared.iter().any(|d| announces(d, "tools")) {
        tools.insert("listChanged".to_owned(), Value::Bool(true));
    }
    offered.insert("tools".to_owned(), Value::Object(tools));
    if let [one] = declared {
        for kind in ["resources", "prompts"] {
            if one.get(kind).is_some_and(Value::is_object) {
                let mut capability = Map::new();
                if announces(one, kind) {
                    capability.insert("listChanged".to_owned(), Value::Bool(true));
                }
                if kind == "resources" && one[kind]["subscribe"] == true {
                    capability.insert("subscribe".to_owned(), Value::Bool(true));
                }
                offered.insert(kind.to_owned(), Value::Object(capability));
            }
        }
    }
    if journal {
        let mut extensions = Map::new();
        extensions.insert(TASKS_EXTENSION_ID.to_owned(), Value::Object(Map::new()));
        offered.insert("extensions".to_owned(), Value::Object(extensions));
    }
    Value::Object(offered)
}

/// Whether `offered` capabilities announce `change`s (`listChanged`).
pub(crate) fn announces(offered: &Value, change: ListChange) -> bool {
    let kind = match change {
        ListChange::Tools => "tools",
        ListChange::Resources => "resources",
        ListChange::Prompts => "prompts",
        _ => return false,
    };
    offered[kind]["listChanged"] == true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn changes_are_announced_where_the_upstreams_announce_them() {
        let quiet = json!({"tools": {}, "resources": {"subscribe": true}, "prompts": {}});
        let lively = json!({"tools": {"listChanged": true},
                            "resources": {"listChanged": true, "subscribe": true},
                            "prompts": {"listChanged": true}});
        assert_eq!(
            offered(std::slice::from_ref(&quiet), false),
            json!({"tools": {}, "resources": {"subscribe": true}, "prompts": {}})
        );
        assert_eq!(
            offered(std::slice::from_ref(&lively), false),
            json!({"tools": {"listChanged": true},
                   "resources": {"listChanged": true, "subscribe": true},
                   "prompts": {"listChanged": true}})
        );
        // Several: only tools, announced when any upstream announces them.
        assert_eq!(
            offered(&[quiet.clone(), lively], false),
            json!({"tools": {"listChanged": true}})
        );
        assert_eq!(
            offered(&[quiet.clone(), quiet], false),
            json!({"tools": {}})
        );
    }

    #[test]
    fn only_what_is_offered_with_listchanged_is_announced() {
        let offered = json!({"tools": {"listChanged": true}, "prompts": {}});
        assert!(announces(&offered, ListChange::Tools));
        assert!(!announces(&offered, ListChange::Prompts));
        assert!(!announces(&offered, ListChange::Resources));
    }
}
