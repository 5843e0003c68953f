//! [`refuse_stdio`]: a proxy that could not start, still answering its
//! client over stdio — every request with the reason it could not start.
//!
//! # Why answer at all
//!
//! MCP clients start a stdio server and show its stderr to nobody: a
//! proxy that exits on a configuration error reaches the user as
//! "connection closed". So it stays, and answers `initialize` and every
//! other request with a JSON-RPC error whose message is the sentence stderr
//! got — which names the fix (`run recourse mcp login NAME=URL`, the flag
//! to correct) — until the client closes stdin.

use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The longest line read; a longer one is skipped whole.
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The JSON-RPC error code of the answers (the range servers define for
/// their own errors).
pub const NOT_STARTED: i64 = -32000;

/// Answers every request on stdin with `message`, until stdin closes.
///
/// # Errors
/// Reading stdin or writing stdout failed.
pub async fn refuse_stdio(message: &str) -> std::io::Result<()> {
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    refuse(stdin, tokio::io::stdout(), message).await
}

/// Answers every request read from `input` on `output` with `message`.
pub(crate) async fn refuse<R, W>(mut input: R, mut output: W, message: &str) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = AsyncReadExt::take(&mut input, MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await?;
        if read == 0 {
            return Ok(());
        }
        if line.len() > MAX_LINE_BYTES {
            // Skip the rest of an overlong line.
            skip_line(&mut input).await?;
            continue;
        }
        let Ok(message_in) = serde_json::from_slice::<Value>(&line) else {
            continue;
        };
        let requests = match message_in {
            Value::Array(batch) => batch,
            one => vec![one],
        };
        for request in requests {
            // A notification (no id) or an answer (no method) is not answered.
            let (Some(id), Some(_)) = (request.get("id"), request.get("method")) else {
                continue;
            };
            let answer = json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": NOT_STARTED, "message": message},
            });
            let mut bytes = serde_json::to_vec(&answer).unwrap_or_default();
            bytes.push(b'\n');
            output.write_all(&bytes).await?;
            output.flush().await?;
        }
    }
}

async fn skip_line<R: AsyncBufRead + Unpin>(input: &mut R) -> std::io::Result<()> {
    loop {
        let buffer = input.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => {
                input.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = buffer.len();
                input.consume(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_request_is_answered_with_the_reason_and_nothing_else() {
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            "not json\n",
            r#"{"jsonrpc":"2.0","id":"t","method":"tools/list"}"#,
            "\n",
        );
        let mut output = Vec::new();
        let why = "upstream web needs a login: run `recourse mcp login web=https://a/mcp`";
        refuse(input.as_bytes(), &mut output, why).await.unwrap();
        let answers: Vec<Value> = output
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert_eq!(answers[0]["id"], 1);
        assert_eq!(answers[1]["id"], "t");
        for answer in &answers {
            assert_eq!(answer["error"]["message"], why);
            assert_eq!(answer["error"]["code"], NOT_STARTED);
        }
    }
}
