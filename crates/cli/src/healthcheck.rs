//! `recourse healthcheck URL`: a container's health check without curl —
//! exit 0 when the URL answers 200 within a second, else 1. Nothing is
//! printed on success; the reason on failure goes to stderr.
//!
//! The URL is asked directly: a proxy the environment names (`HTTP_PROXY`,
//! `ALL_PROXY`, …) is not used, since a proxy that answers for a dead
//! server would make it look healthy. The second covers everything — the
//! name's resolution too: a resolver that never answers runs on a thread
//! nobody waits for, and the check has failed when its second is up.

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
    match check(&args.url, |client| client) {
        Ok(()) => 0,
        Err(why) => {
            eprintln!("recourse healthcheck: {why}");
            1
        }
    }
}

/// Asks `url` with a client `configure` may change (the tests give it a
/// resolver), within [`WITHIN`] from start to finish.
fn check(
    url: &str,
    configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
) -> Result<(), String> {
    let url = reqwest::Url::parse(url).map_err(|e| format!("{url:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{url} is not an http(s) URL"));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let place = recourse_protocol::redact(url.as_str());
    let client = configure(
        reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none()),
    )
    .build()
    .map_err(|e| e.to_string())?;
    let asked = runtime.block_on(async {
        let answer = tokio::time::timeout(WITHIN, client.get(url).send()).await;
        match answer {
            Err(_) => Err(format!("{place} did not answer within {WITHIN:?}")),
            Ok(Err(e)) => Err(format!("{place} did not answer: {}", e.without_url())),
            Ok(Ok(answer)) => match answer.status().as_u16() {
                200 => Ok(()),
                status => Err(format!("{place} answered {status}")),
            },
        }
    });
    // A resolver still looking the name up holds a thread of the runtime's:
    // it is left behind, not waited for.
    runtime.shutdown_background();
    asked
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use reqwest::dns::{Name, Resolve, Resolving};

    use super::*;

    /// A resolver that never answers, on a blocking thread as the system's
    /// resolver runs (`getaddrinfo`).
    struct Unresponsive;

    impl Resolve for Unresponsive {
        fn resolve(&self, _: Name) -> Resolving {
            Box::pin(async {
                let looked_up = tokio::task::spawn_blocking(|| {
                    std::thread::sleep(Duration::from_secs(60));
                })
                .await;
                Err(format!("gave up: {looked_up:?}").into())
            })
        }
    }

    #[test]
    fn an_unresponsive_resolver_fails_the_check_within_its_second() {
        let started = Instant::now();
        let resolver: Arc<dyn Resolve> = Arc::new(Unresponsive);
        let why = check("http://gateway.invalid:8780/readyz", |client| {
            client.dns_resolver(resolver)
        })
        .unwrap_err();
        assert!(why.contains("did not answer within 1s"), "{why}");
        // The resolver would hold it for a minute; a few seconds is the check's second and slack.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn what_is_not_an_http_url_is_refused() {
        assert!(check("ftp://h/x", |c| c).unwrap_err().contains("http(s)"));
        assert!(check("not a url", |c| c).unwrap_err().contains("not a URL"));
    }
}
