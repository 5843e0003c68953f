//! `recourse run` against the reference tools: exit codes, the JSON report,
//! approval flags, and the example plans.

use std::path::PathBuf;
use std::process::{Command, Output};

use recourse_reference_tools::{RunningTools, ToolsConfig, spawn};
use serde_json::{Value, json};

fn write_plan(plan: &Value) -> PathBuf {
    let path = std::env::temp_dir().join(format!("recourse-plan-{}.json", uuid::Uuid::now_v7()));
    std::fs::write(&path, plan.to_string()).unwrap();
    path
}

fn run(plan: &std::path::Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_recourse"));
    command.arg("run").arg(plan).args(args);
    for var in [
        "RECOURSE_LLM_BASE_URL",
        "RECOURSE_LLM_API_KEY",
        "RECOURSE_LLM_MODEL",
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "RECOURSE_JOURNAL",
    ] {
        command.env_remove(var);
    }
    command.output().unwrap()
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn convert_plan(amount: Value, approval: bool) -> Value {
    json!({
        "plan_id": "p",
        "original_request": "Convert one Tesla share's price to EUR",
        "steps": [
            {"step_id": "quote", "capability": "stock_quote", "parameters": {"symbol": "TSLA"}},
            {"step_id": "convert", "capability": "currency_convert", "depends_on": ["quote"],
             "approval": approval, "parameters": {"amount": amount, "from": "USD", "to": "EUR"}},
            {"step_id": "export", "capability": "exports_create", "depends_on": ["convert"],
             "parameters": {"source_id": "sales-2024", "format": "csv"}}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_exits_0_with_the_documented_report() {
    let t = spawn(ToolsConfig::default()).await.unwrap();
    let plan = write_plan(&convert_plan(json!("{{quote.data.price}}"), false));
    let out = run(&plan, &["--catalog", &t.base_url(), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&out);
    assert_eq!(r["plan_id"], "p");
    assert_eq!(r["success"], true);
    let convert = &r["steps"]["convert"];
    for field in ["outcome", "data", "error", "reason", "attempts"] {
        assert!(convert.get(field).is_some(), "a step lacks {field}");
    }
    assert_eq!(convert["outcome"], "succeeded");
    assert_eq!(convert["data"]["amount"], 468.285);
    assert_eq!(convert["attempts"][0]["payload"]["amount"], 468.285);
    assert_eq!(r["steps"]["export"]["outcome"], "succeeded");
    assert_eq!(t.exports_committed(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_step_exits_1_and_skips_its_dependents() {
    let t = spawn(ToolsConfig::default()).await.unwrap();
    let plan = write_plan(&convert_plan(json!(0), false));
    let out = run(&plan, &["--catalog", &t.base_url(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let r = report(&out);
    assert_eq!(r["success"], false);
    assert_eq!(r["steps"]["quote"]["outcome"], "succeeded");
    assert_eq!(r["steps"]["convert"]["outcome"], "failed");
    assert_eq!(r["steps"]["convert"]["error"]["code"], "INVALID_AMOUNT");
    assert_eq!(r["steps"]["export"]["outcome"], "skipped");
    assert_eq!(
        r["steps"]["export"]["reason"],
        "dependency \"convert\" failed"
    );
    assert_eq!(t.exports_committed(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_plan_exits_2_and_dispatches_nothing() {
    let t = spawn(ToolsConfig::default()).await.unwrap();
    let base = t.base_url();
    let export = json!({"step_id": "export", "capability": "exports_create", "parameters": {"source_id": "sales-2024", "format": "csv"}});
    let cases = [
        (
            json!({"plan_id": "c", "steps": [export,
                {"step_id": "a", "capability": "stock_quote", "depends_on": ["b"]},
                {"step_id": "b", "capability": "stock_quote", "depends_on": ["a"]}]}),
            "cycle: a → b → a",
        ),
        (
            json!({"plan_id": "c", "steps": [export, {"step_id": "a", "capability": "stock_trade"}]}),
            "\"stock_trade\", which no catalogue lists",
        ),
        (
            json!({"plan_id": "c", "steps": [export, {"step_id": "a", "capability": "stock_quote", "depends_on": ["ghost"]}]}),
            "depends on \"ghost\"",
        ),
        (
            json!({"plan_id": "c", "steps": [export, export]}),
            "duplicate step id \"export\"",
        ),
        (
            json!({"plan_id": "c", "stepz": []}),
            "the plan is not valid",
        ),
    ];
    for (plan, says) in cases {
        let out = run(&write_plan(&plan), &["--catalog", &base, "--json"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{plan}: {stderr}");
        assert!(stderr.contains(says), "{says:?} in {stderr}");
        assert!(out.stdout.is_empty());
    }
    let out = run(
        &write_plan(&convert_plan(json!(1), false)),
        &["--catalog", "http://127.0.0.1:9/", "--json"],
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unreachable catalogue is a usage error"
    );
    assert_eq!(t.exports_committed(), 0, "nothing was dispatched");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_flags_decide_without_a_terminal() {
    let t = spawn(ToolsConfig::default()).await.unwrap();
    let base = t.base_url();
    let plan = write_plan(&convert_plan(json!("{{quote.data.price}}"), true));
    let outcome = |args: &[&str]| {
        let mut all = vec!["--catalog", base.as_str(), "--json"];
        all.extend_from_slice(args);
        let out = run(&plan, &all);
        (out.status.code(), report(&out)["steps"]["convert"].clone())
    };
    let (code, convert) = outcome(&[]);
    assert_eq!(code, Some(1));
    assert_eq!(convert["outcome"], "failed");
    assert_eq!(
        convert["reason"],
        "rejected by approver: no terminal to ask and no --approve STEP or --approve-all given"
    );
    assert_eq!(convert["attempts"], json!([]));
    let (code, convert) = outcome(&["--reject", "convert"]);
    assert_eq!(
        (code, convert["reason"].as_str()),
        (Some(1), Some("rejected by approver: --reject"))
    );
    assert_eq!(outcome(&["--approve", "convert"]).0, Some(0));
    assert_eq!(outcome(&["--approve-all"]).0, Some(0));
    for bad in [
        &["--approve", "ghost"][..],
        &["--approve", "quote"],
        &["--approve", "convert", "--reject", "convert"],
    ] {
        let mut all = vec!["--catalog", base.as_str()];
        all.extend_from_slice(bad);
        assert_eq!(run(&plan, &all).status.code(), Some(2), "{bad:?}");
    }
    assert_eq!(
        t.exports_committed(),
        2,
        "only the two approved runs reached the export"
    );
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_plans_run_against_the_reference_tools() {
    let t: RunningTools = spawn(ToolsConfig::default().with_correctable_amounts())
        .await
        .unwrap();
    let out = run(
        &example("quote-and-convert.json"),
        &["--catalog", &t.base_url(), "--approve", "convert"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("■ step convert: succeeded"), "{text}");
    assert!(
        text.contains("plan quote-and-convert: every step succeeded"),
        "{text}"
    );

    // Without a model, L4 cannot run: the step stops honestly and says what to set.
    let out = run(
        &example("sell-and-convert.json"),
        &["--catalog", &t.base_url(), "--json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let r = report(&out);
    assert_eq!(r["steps"]["quote"]["outcome"], "succeeded");
    assert_eq!(r["steps"]["convert"]["outcome"], "failed");
    let notes = r["steps"]["convert"]["attempts"][0]["notes"].to_string();
    assert!(notes.contains("RECOURSE_LLM_BASE_URL"), "{notes}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_records_every_step_that_could_be_left_in_doubt() {
    let t = spawn(ToolsConfig::default()).await.unwrap();
    let plan = write_plan(&convert_plan(json!("{{quote.data.price}}"), false));
    let journal = std::env::temp_dir().join(format!("recourse-run-{}.db", uuid::Uuid::now_v7()));
    let j = journal.to_str().unwrap();
    let out = run(&plan, &["--catalog", &t.base_url(), "--journal", j]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = Command::new(env!("CARGO_BIN_EXE_recourse"))
        .args(["journal", "list", "--journal", j, "--json"])
        .output()
        .unwrap();
    let calls: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let calls = calls.as_array().unwrap();
    // The quote and the conversion are reads (the manifest says idempotent):
    // nothing to settle, so nothing journaled. The export is a write.
    assert_eq!(calls.len(), 1, "only the export: {calls:?}");
    assert!(calls.iter().all(|c| c["state"] == "succeeded"));
    let export = calls
        .iter()
        .find(|c| c["capability"] == "exports_create")
        .unwrap();
    assert!(
        export["idempotency_key"].is_string(),
        "the non-idempotent export carries a key"
    );
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{j}{suffix}"));
    }
}
