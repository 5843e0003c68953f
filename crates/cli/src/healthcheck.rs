//! `recourse healthcheck URL`: a container's health check without curl —
//! exit 0 when the URL answers 200 within a second, else 1. Nothing is
//! printed on success; the reason on failure goes to stderr.

use std::time::Duration;

use clap::Args;

/// How long the URL has to answer.
const WITHIN: Duration = Duration::from_secs(1);

/// Arguments of `recourse healthcheck`.
#[derive(Debug, Args)]
pub(crate) struct HealthcheckArgs {
    /// The URL to ask (GET), e.g. http://127.0.0.1:8780/readyz.
    url: String,
}

/// 0 when `GET URL` answers 200 within a second (no redirects followed), else 1.
pub(crate) fn run(args: &HealthcheckArgs) -> u8 {
    match check(&args.url) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("recourse healthcheck: {why}");
            1
        }
    }
}

fn check(url: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{url} is not an http(s) URL"));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(WITHIN)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let place = recourse_protocol::redact(url.as_str());
        let answer = client.get(url).send().await.map_err(|e| {
            format!(
                "{place} did not answer within {WITHIN:?}: {}",
                e.without_url()
            )
        })?;
        match answer.status().as_u16() {
            200 => Ok(()),
            status => Err(format!("{place} answered {status}")),
        }
    })
}
