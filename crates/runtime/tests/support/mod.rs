//! A scripted HTTP/1.1 server on loopback, for behaviour tests of the executor.
//!
//! It answers each request with the next step of its script (the last step
//! repeats), and records every request it received, byte for byte.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Step {
    /// Answer with a status, headers and body.
    Respond {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Read the request, then close the connection without answering.
    Drop,
    /// Read the request, then wait before answering with the inner step.
    Delay(Duration, Box<Step>),
}

impl Step {
    pub fn json(status: u16, body: &str) -> Self {
        Self::Respond {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn text(status: u16, body: &str) -> Self {
        Self::Respond {
            status,
            headers: vec![("Content-Type".into(), "text/html".into())],
            body: body.as_bytes().to_vec(),
        }
    }

    pub fn envelope_error(status: u16, category: &str, retryable: Option<bool>) -> Self {
        let flag = retryable.map_or(String::new(), |b| format!(r#","retryable":{b}"#));
        Self::json(
            status,
            &format!(
                r#"{{"success":false,"error":{{"code":"E","message":"m","category":"{category}"{flag}}}}}"#
            ),
        )
    }

    pub fn ok(data: &str) -> Self {
        Self::json(200, &format!(r#"{{"success":true,"data":{data}}}"#))
    }

    pub fn with_header(self, name: &str, value: &str) -> Self {
        match self {
            Self::Respond {
                status,
                mut headers,
                body,
            } => {
                headers.push((name.into(), value.into()));
                Self::Respond {
                    status,
                    headers,
                    body,
                }
            }
            other => other,
        }
    }
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request line, e.g. `GET /tool?symbol=TSLA HTTP/1.1`.
    pub line: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct ScriptedServer {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl ScriptedServer {
    pub async fn start(script: Vec<Step>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/tool", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&received);
        let script = Arc::new(script);
        tokio::spawn(async move {
            let mut n = 0usize;
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let step = script[n.min(script.len() - 1)].clone();
                n += 1;
                let log = Arc::clone(&log);
                tokio::spawn(serve_one(stream, step, log));
            }
        });
        Self { url, received }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    pub fn hits(&self) -> usize {
        self.received.lock().unwrap().len()
    }
}

async fn serve_one(mut stream: TcpStream, step: Step, log: Arc<Mutex<Vec<Received>>>) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    log.lock().unwrap().push(request);
    let mut step = step;
    while let Step::Delay(d, inner) = step {
        tokio::time::sleep(d).await;
        step = *inner;
    }
    match step {
        Step::Drop => drop(stream),
        Step::Respond {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(&body).await;
            let _ = stream.shutdown().await;
        }
        Step::Delay(..) => unreachable!(),
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let headers: Vec<(String, String)> = head
        .lines()
        .skip(1)
        .filter_map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(Received {
        line: head.lines().next().unwrap_or_default().to_owned(),
        headers,
        body: buf[head_end..].to_vec(),
    })
}
