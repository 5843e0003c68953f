//! CPU time of the calling thread, from `/proc` (no `unsafe`, no libc).

use std::time::Duration;

/// CPU time the calling thread has used: `/proc/thread-self/schedstat`
/// (nanoseconds), else `/proc/thread-self/stat`'s utime + stime (ticks of
/// 10 ms, Linux's USER_HZ).
///
/// # Errors
/// Neither file readable (not Linux).
pub(crate) fn thread_cpu() -> Result<Duration, String> {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat")
        && let Some(ns) = text.split_whitespace().next().and_then(|n| n.parse().ok())
        && ns > 0
    {
        return Ok(Duration::from_nanos(ns));
    }
    let text = std::fs::read_to_string("/proc/thread-self/stat")
        .map_err(|e| format!("reading /proc/thread-self/stat: {e} (Linux only)"))?;
    stat_cpu(&text).ok_or_else(|| "unreadable /proc/thread-self/stat".to_owned())
}

/// The CPU process `pid` has used: `/proc/PID/stat`'s utime + stime.
///
/// # Errors
/// The file is not readable (no such process, or not Linux).
pub(crate) fn process_cpu(pid: u32) -> Result<Duration, String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("reading /proc/{pid}/stat: {e} (Linux only)"))?;
    stat_cpu(&text).ok_or_else(|| format!("unreadable /proc/{pid}/stat"))
}

/// utime + stime of a `stat` file's text, in ticks of 10 ms (Linux's USER_HZ).
fn stat_cpu(text: &str) -> Option<Duration> {
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = text.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse().ok())
        .collect();
    match fields[..] {
        [utime, stime] => Some(Duration::from_millis((utime + stime) * 10)),
        _ => None,
    }
}
