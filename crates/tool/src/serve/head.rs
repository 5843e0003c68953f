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
        let mut i = 0;
        while i < chunk.len() {
            if self.state == State::InLine {
                // Nothing inside a line but its `\n` changes the state: skip
                // to it, counting the bytes skipped against the limit.
                let rest = &chunk[i..];
                let skip = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
                if self.bytes + skip > self.max_bytes {
                    self.state = State::Done;
                    return Scan::TooLarge;
                }
                self.bytes += skip;
                i += skip;
                if i == chunk.len() {
                    break;
                }
            }
            let byte = chunk[i];
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
            i += 1;
        }
        Scan::Partial
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The scanner one byte at a time, as plainly as it can be said: the
    /// model the scanner (which skips through lines) must agree with.
    fn model(max_bytes: usize, max_lines: usize, chunks: &[Vec<u8>]) -> Vec<Scan> {
        let (mut bytes, mut lines, mut state, mut out) = (0, 0, State::Leading, Vec::new());
        for chunk in chunks {
            let mut scan = Scan::Partial;
            for (i, &byte) in chunk.iter().enumerate() {
                if state == State::Done {
                    break;
                }
                bytes += 1;
                if bytes > max_bytes {
                    state = State::Done;
                    scan = Scan::TooLarge;
                    break;
                }
                state = match (state, byte) {
                    (State::Leading, b'\r' | b'\n') => State::Leading,
                    (State::LineStart, b'\r') => State::LineStartCr,
                    (State::LineStart | State::LineStartCr, b'\n') => {
                        state = State::Done;
                        scan = Scan::Complete { used: i + 1 };
                        break;
                    }
                    (_, b'\n') => {
                        lines += 1;
                        if lines > max_lines {
                            state = State::Done;
                            scan = Scan::TooLarge;
                            break;
                        }
                        State::LineStart
                    }
                    _ => State::InLine,
                };
            }
            out.push(scan);
        }
        out
    }

    proptest! {
        #[test]
        fn the_scanner_agrees_with_the_byte_at_a_time_model(
            text in proptest::collection::vec(prop_oneof![
                Just(b'\r'), Just(b'\n'), Just(b'a'), Just(b':'), Just(b' '),
            ], 0..120),
            cuts in proptest::collection::vec(0usize..120, 0..6),
            max_bytes in 0usize..130,
            max_headers in 0usize..8,
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|&c| c <= text.len()).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut start = 0;
            for cut in cuts.into_iter().chain([text.len()]) {
                chunks.push(text[start..cut].to_vec());
                start = cut;
            }
            let mut scanner = HeadScanner::new(max_bytes, max_headers);
            let got: Vec<Scan> = chunks.iter().map(|c| scanner.feed(c)).collect();
            prop_assert_eq!(got, model(max_bytes, max_headers.saturating_add(1), &chunks));
        }
    }

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
