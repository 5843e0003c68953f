//! The loopback redirect a login ends on: a one-route HTTP listener on
//! `127.0.0.1` that takes the authorization server's redirect
//! (`/callback?code=…&state=…`) from the user's browser.

use std::time::Duration;

use recourse_protocol::mcp::McpError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest request head read from the browser.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long one browser connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// The path the authorization server redirects to.
const PATH: &str = "/callback";

/// The listener, bound to a free loopback port.
pub(crate) struct Callback {
    listener: TcpListener,
    port: u16,
}

/// What the authorization server sent the browser back with.
pub(crate) enum Redirected {
    /// The user agreed: the code to exchange, the state it must match, and
    /// the issuer when the server names it (RFC 9207).
    Code {
        code: String,
        state: String,
        issuer: Option<String>,
    },
    /// The server refused (`error`, e.g. `access_denied`).
    Refused { error: String },
}

/// The browser's connection, answered once the login is done.
pub(crate) struct Browser(TcpStream);

impl Callback {
    /// Binds `127.0.0.1:0`.
    pub(crate) async fn bind() -> Result<Self, McpError> {
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(|e| {
            McpError::unreachable("no loopback port for the login's redirect").caused_by(e)
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| McpError::unreachable("the redirect's port").caused_by(e))?
            .port();
        Ok(Self { listener, port })
    }

    /// Where the authorization server sends the browser back to.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// The first request to the callback's path; any other (a favicon) is
    /// answered 404 and the wait goes on.
    pub(crate) async fn wait(&self) -> Result<(Redirected, Browser), McpError> {
        loop {
            let (mut stream, _) = self.listener.accept().await.map_err(|e| {
                McpError::unreachable("the login's redirect listener failed").caused_by(e)
            })?;
            let target = match tokio::time::timeout(READ_TIMEOUT, request_target(&mut stream)).await
            {
                Ok(Some(target)) => target,
                _ => continue,
            };
            match redirected(&target) {
                Some(redirected) => return Ok((redirected, Browser(stream))),
                None => {
                    let _ = respond(&mut stream, "404 Not Found", "Not here.").await;
                }
            }
        }
    }
}

impl Browser {
    /// Tells the user, in the browser, how the login ended (fixed words
    /// only: nothing the server sent is shown back).
    pub(crate) async fn tell(mut self, done: bool) {
        let text = if done {
            "Logged in. recourse has the tokens; you can close this tab."
        } else {
            "The login did not complete; the terminal says why. You can close this tab."
        };
        let _ = respond(&mut self.0, "200 OK", text).await;
    }
}

/// The target of the request on `stream` (`/callback?code=…`), when its
/// head is a well-formed `GET`.
async fn request_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buffer).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD_BYTES {
            return None;
        }
        head.extend_from_slice(&buffer[..n]);
    }
    let line = head.split(|&b| b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split(' ');
    match (words.next(), words.next(), words.next()) {
        (Some("GET"), Some(target), Some(version)) if version.starts_with("HTTP/1.") => {
            Some(target.to_owned())
        }
        _ => None,
    }
}

/// What a request to `target` carries, when it is the callback.
fn redirected(target: &str) -> Option<Redirected> {
    let url = reqwest::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != PATH {
        return None;
    }
    let get = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if let Some(error) = get("error") {
        // A code of RFC 6749's alphabet only; anything else is not repeated.
        let error = if error
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            error
        } else {
            "an error".to_owned()
        };
        return Some(Redirected::Refused { error });
    }
    Some(Redirected::Code {
        code: get("code")?,
        state: get("state")?,
        issuer: get("iss"),
    })
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    let body = format!("<!doctype html><meta charset=utf-8><title>recourse</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_callback_path_with_a_code_and_state_or_an_error_is_read() {
        match redirected("/callback?code=c-1&state=s-1&iss=https%3A%2F%2Fas") {
            Some(Redirected::Code {
                code,
                state,
                issuer,
            }) => {
                assert_eq!((code.as_str(), state.as_str()), ("c-1", "s-1"));
                assert_eq!(issuer.as_deref(), Some("https://as"));
            }
            _ => panic!("a code"),
        }
        assert!(matches!(
            redirected("/callback?error=access_denied&state=s"),
            Some(Redirected::Refused { error }) if error == "access_denied"
        ));
        assert!(matches!(
            redirected("/callback?error=%3Cscript%3E"),
            Some(Redirected::Refused { error }) if error == "an error"
        ));
        assert!(redirected("/favicon.ico").is_none());
        assert!(redirected("/callback?code=c").is_none(), "no state");
        assert!(redirected("/callback/x?code=c&state=s").is_none());
    }

    #[tokio::test]
    async fn a_browser_is_answered_after_its_redirect_is_read() {
        let callback = Callback::bind().await.unwrap();
        let uri = callback.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let addr = uri
            .trim_start_matches("http://")
            .trim_end_matches("/callback")
            .to_owned();
        let browser = tokio::spawn(async move {
            let get = |path: &'static str, addr: String| async move {
                let mut s = TcpStream::connect(addr).await.unwrap();
                s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                    .await
                    .unwrap();
                let mut answer = String::new();
                s.read_to_string(&mut answer).await.unwrap();
                answer
            };
            let missing = get("/favicon.ico", addr.clone()).await;
            let done = get("/callback?code=c&state=s", addr).await;
            (missing, done)
        });
        let (redirected, browser_conn) = callback.wait().await.unwrap();
        assert!(matches!(redirected, Redirected::Code { .. }));
        browser_conn.tell(true).await;
        let (missing, done) = browser.await.unwrap();
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
        assert!(
            done.starts_with("HTTP/1.1 200") && done.contains("Logged in"),
            "{done}"
        );
    }
}
