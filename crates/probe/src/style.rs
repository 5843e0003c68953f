//! The text scorecard's colours: ANSI codes when its caller asks for them
//! (a terminal that wants colour), plain text otherwise.

/// Whether to colour the text scorecard.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    color: bool,
}

impl Style {
    /// Colour when `color`.
    pub(crate) fn new(color: bool) -> Self {
        Self { color }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub(crate) fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    pub(crate) fn good(self, text: &str) -> String {
        self.paint("32", text)
    }

    pub(crate) fn bad(self, text: &str) -> String {
        self.paint("31", text)
    }

    pub(crate) fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
}
