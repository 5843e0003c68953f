//! Measuring a request's header block as it arrives, before hyper parses it.
//!
//! hyper answers a header block over its own limits with a bare 431 and no
//! body. To answer with an envelope instead, the server measures the block
//! itself, with a lower limit than hyper's, and refuses first. Measuring
//! needs no parsing: a header block ends at the first empty line, and lines
//! end in `\n` (optionally preceded by `\r`); empty lines before the request
//! line are skipped, as hyper skips them.

/// What the bytes fed so far amount to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scan {
    /// The header block has not ended yet, and is within the limits.
    Partial,
    /// The header block ended after `used` bytes of the last chunk fed.
    Complete { used: usize },
    /// The header block is over a limit.
    TooLarge,
}

/// Measures one header block: its bytes and its lines.
#[derive(Debug, Clone)]
pub(crate) struct HeadScanner {
    max_bytes: usize,
    max_lines: usize,
    bytes: usize,
    lines: usize,
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the request line: CR and LF are skipped.
    Leading,
    /// Inside a line.
    InLine,
    /// Just after a line's `\n`.
    LineStart,
    /// After a line's `\n` and a `\r`.
    LineStartCr,
    /// The block ended (or was refused); nothing more is measured.
    Done,
}

impl HeadScanner {
    /// A scanner for blocks of at most `max_bytes` and `max_headers` header lines.
    pub(crate) fn new(max_bytes: usize, max_headers: usize) -> Self {
        Self {
            max_bytes,
            max_lines: max_headers.saturating_add(1),
            bytes: 0,
            lines: 0,
            state: State::Leading,
        }
    }

    /// Starts measuring the next block.
    pub(crate) fn reset(&mut self) {
        self.bytes = 0;
        self.lines = 0;
        self.state = State::Leading;
    }

    /// Whether any byte of a block has been seen since the last reset.
    pub(crate) fn started(&self) -> bool {
        self.bytes > 0
    }

    /// Feeds the next bytes read from the connection.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Scan {
        if self.state == State::Done {
            return Scan::Partial;
        }
        for (i, &byte) in chunk.iter().enumerate() {
            self.bytes += 1;
            if self.bytes > self.max_bytes {
                self.state = State::Done;
                return Scan::TooLarge;
            }
            self.state = match (self.state, byte) {
                (State::Leading, b'\r' | b'\n') => State::Leading,
                (State::LineStart, b'\r') => State::LineStartCr,
                (State::LineStart | State::LineStartCr, b'\n') => {
                    self.state = State::Done;
                    return Scan::Complete { used: i + 1 };
                }
                (_, b'\n') => {
                    self.lines += 1;
                    if self.lines > self.max_lines {
                        self.state = State::Done;
                        return Scan::TooLarge;
                    }
                    State::LineStart
                }
                _ => State::InLine,
            };
        }
        Scan::Partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_ends_at_the_first_empty_line_in_any_chunking() {
        let head = b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}";
        let block = head.len() - 2;
        for split in 1..head.len() {
            let mut s = HeadScanner::new(1024, 100);
            let (a, b) = head.split_at(split);
            let total = match s.feed(a) {
                Scan::Complete { used } => used,
                Scan::Partial => match s.feed(b) {
                    Scan::Complete { used } => split + used,
                    other => panic!("{other:?} at {split}"),
                },
                Scan::TooLarge => panic!("too large at {split}"),
            };
            assert_eq!(total, block, "split at {split}");
        }
    }

    #[test]
    fn bare_newlines_and_leading_empty_lines_are_understood() {
        let mut s = HeadScanner::new(1024, 100);
        assert_eq!(
            s.feed(b"\r\n\nGET / HTTP/1.1\nHost: a\n\n"),
            Scan::Complete { used: 27 }
        );
        s.reset();
        assert!(!s.started());
        assert_eq!(s.feed(b"GET / HTTP/1.1\r\n"), Scan::Partial);
        assert!(s.started());
    }

    #[test]
    fn too_many_bytes_or_lines_is_too_large() {
        let mut s = HeadScanner::new(32, 100);
        assert_eq!(s.feed(b"GET / HTTP/1.1\r\nX-Long: "), Scan::Partial);
        assert_eq!(s.feed(&[b'a'; 16]), Scan::TooLarge);
        assert_eq!(
            s.feed(b"\r\n\r\n"),
            Scan::Partial,
            "nothing after a refusal"
        );

        let mut s = HeadScanner::new(1024, 2);
        assert_eq!(s.feed(b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n"), Scan::Partial);
        assert_eq!(s.feed(b"C: 3\r\n"), Scan::TooLarge);
        let mut s = HeadScanner::new(1024, 2);
        assert_eq!(
            s.feed(b"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\n\r\n"),
            Scan::Complete { used: 30 }
        );
    }
}
