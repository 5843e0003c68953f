//! Terminal styling: colour only on a terminal, and never when `NO_COLOR` is set.

use std::io::IsTerminal;

/// Whether to colour output.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    color: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub(crate) fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    /// Whether it colours.
    pub(crate) fn is_color(self) -> bool {
        self.color
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

    pub(crate) fn warn(self, text: &str) -> String {
        self.paint("33", text)
    }

    pub(crate) fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }
}
