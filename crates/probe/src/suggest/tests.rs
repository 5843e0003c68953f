use recourse::VerifySpec;
use recourse_mcp::McpTool;
use serde_json::json;

use super::*;
use crate::subject::from_mcp;

fn tool(name: &str, required: &[&str], optional: &[&str], read: bool) -> McpTool {
    let properties: Map<String, Value> = required
        .iter()
        .chain(optional)
        .map(|f| ((*f).to_owned(), json!({"type": "string"})))
        .collect();
    McpTool {
        name: name.to_owned(),
        description: None,
        input_schema: json!({"type": "object", "properties": properties, "required": required}),
        idempotent_hint: None,
        destructive_hint: None,
        read_only_hint: read.then_some(true),
    }
}

/// A server much like `examples/workspace_mcp.py`.
fn workspace() -> Vec<Subject> {
    from_mcp(vec![
        tool("place_order", &["symbol", "amount"], &[], false),
        tool("cancel_order", &["order_id"], &[], false),
        tool("list_orders", &[], &[], true),
        tool("get_order", &["order_id"], &[], true),
        tool("update_ticket", &["ticket_id", "status"], &[], false),
        tool("get_ticket", &["ticket_id"], &[], true),
        tool("send_message", &["to", "text"], &["subject"], false),
        tool("list_messages", &[], &["to", "subject"], true),
        tool("delete_message", &["message_id"], &[], false),
        tool("touch", &["file_name"], &["folder"], false),
        tool("ls", &[], &["path"], true),
    ])
}

fn suggested(name: &str) -> Option<Suggestion> {
    for_writes(&workspace())
        .into_iter()
        .find(|(write, _)| write == name)
        .map(|(_, s)| s)
}

#[test]
fn a_create_is_read_back_by_the_list_of_what_it_makes() {
    let s = suggested("place_order").unwrap();
    assert_eq!(s.read, "list_orders");
    assert_eq!(
        s.verify,
        json!({"tool": "list_orders", "args": {},
               "expect": ["<POINTER TO THE LIST> any {\"/symbol\":\"{{payload.symbol}}\",\"/amount\":\"{{payload.amount}}\"}",
                          "<POINTER TO THE LIST> grew_by 1"]})
    );
    let s = suggested("send_message").unwrap();
    assert_eq!(s.read, "list_messages");
    assert_eq!(
        s.verify["args"],
        json!({"to": "{{payload.to}}", "subject": "{{payload.subject?}}"}),
        "an argument the write may leave out is optional in the read"
    );
}

#[test]
fn an_update_is_read_back_by_the_read_of_the_thing_it_names() {
    let s = suggested("update_ticket").unwrap();
    assert_eq!(
        s.verify,
        json!({"tool": "get_ticket", "args": {"ticket_id": "{{payload.ticket_id}}"},
               "expect": ["<POINTER TO status> == {{payload.status}}"]})
    );
    let s = suggested("cancel_order").unwrap();
    assert_eq!(
        s.read, "get_order",
        "the read that takes its order_id, over the list"
    );
    assert_eq!(
        s.verify["expect"][0],
        "<POINTER TO WHAT THE WRITE CHANGES> == <VALUE AFTER IT>"
    );
    let s = suggested("delete_message").unwrap();
    assert_eq!(s.read, "list_messages");
    assert_eq!(
        s.verify["expect"],
        json!(["<POINTER TO THE LIST> grew_by -1"])
    );
}

#[test]
fn no_read_about_the_same_thing_is_no_suggestion() {
    assert!(suggested("touch").is_none(), "touch and ls share no noun");
    let reads = for_writes(&workspace());
    assert!(
        reads
            .iter()
            .all(|(w, _)| !w.starts_with("list_") && !w.starts_with("get_"))
    );
    // A read that requires what the write does not have cannot be filled.
    let subjects = from_mcp(vec![
        tool("create_export", &["source_id"], &[], false),
        tool("get_export", &["export_id"], &[], true),
    ]);
    assert!(for_writes(&subjects).is_empty());
}

#[test]
fn a_suggestion_is_refused_until_its_pointers_are_filled_in() {
    for (write, suggestion) in for_writes(&workspace()) {
        let spec: VerifySpec = serde_json::from_value(suggestion.verify.clone()).unwrap();
        assert!(spec.check().is_err(), "{write}: usable unedited");
        let edited = suggestion
            .verify
            .to_string()
            .replace("<POINTER TO THE LIST>", "/items")
            .replace(
                "<POINTER TO WHAT THE WRITE CHANGES> == <VALUE AFTER IT>",
                "/status == \\\"done\\\"",
            )
            .replace("<POINTER TO status>", "/status");
        let spec: VerifySpec = serde_json::from_str(&edited).unwrap();
        assert!(spec.check().is_ok(), "{write}: {edited}");
    }
}

#[test]
fn names_split_into_words_and_nouns() {
    assert_eq!(words("exports_create"), ["exports", "create"]);
    assert_eq!(words("getOrderDetails"), ["get", "order", "details"]);
    assert_eq!(words("fs__read-file"), ["fs", "read", "file"]);
    assert_eq!(nouns("list_orders"), ["order"]);
    assert_eq!(nouns("exports_lookup"), ["export"]);
    assert_eq!(nouns("get_address"), ["address"]);
}
