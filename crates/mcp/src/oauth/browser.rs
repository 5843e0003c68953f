//! Opening a URL in the user's browser, where there is one to open.

use std::process::{Command, Stdio};

/// The variables a browser launcher needs to find the user's session:
/// nothing else of this process's environment (which may hold the secrets
/// an upstream's headers name) reaches it.
const LAUNCHER_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_DIRS",
    "DBUS_SESSION_BUS_ADDRESS",
    "BROWSER",
];

/// Asks the platform to open `url` in the user's browser (`open` on macOS,
/// `xdg-open` elsewhere on Unix, `explorer` on Windows), with a cleared
/// environment but for what a launcher needs: `true` when the launcher
/// started. Whether a browser then opened, nobody can tell; print the URL too.
pub fn open_in_browser(url: &str) -> bool {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    Command::new(program)
        .arg(url)
        .env_clear()
        .envs(std::env::vars_os().filter(|(name, _)| {
            name.to_str()
                .is_some_and(|n| LAUNCHER_ENV.contains(&n) || n.starts_with("LC_"))
        }))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .is_ok()
}
