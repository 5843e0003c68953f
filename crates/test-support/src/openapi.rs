//! Checking an answer against the schema an OpenAPI document gives for it.

use serde_json::Value;

/// Where `body` departs from the schema `doc` declares for `method path`
/// answering `status` (its `$ref`s resolved into the document's components).
///
/// # Panics
/// When the document does not describe that status, or is not a valid schema.
pub fn openapi_mismatches(
    doc: &Value,
    method: &str,
    path: &str,
    status: u16,
    body: &Value,
) -> Vec<String> {
    let response = &doc["paths"][path][method]["responses"][status.to_string()];
    let schema = &response["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} does not document {status}: {body}"
    );
    // The whole document as the root, so `#/components/schemas/…` resolves.
    let mut root = doc.clone();
    root["$ref"] = schema["$ref"].clone();
    let validator = jsonschema::draft202012::new(&root).expect("the document is a valid schema");
    validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Asserts that `body` matches the schema `doc` declares for `method path`
/// answering `status`.
///
/// # Panics
/// When it does not, listing where.
pub fn check_openapi(doc: &Value, method: &str, path: &str, status: u16, body: &Value) {
    let errors = openapi_mismatches(doc, method, path, status, body);
    assert!(
        errors.is_empty(),
        "{method} {path} {status} does not match its schema: {errors:#?}\n{body:#}"
    );
}
