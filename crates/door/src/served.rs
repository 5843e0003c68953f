//! How a door's serving ended: what was still open when it stopped, for
//! the gateway and the MCP proxy alike.

/// How serving ended.
///
/// ```
/// use recourse_door::Served;
///
/// let served = Served::new(2, 0);
/// assert_eq!((served.calls_left, served.connections_cut), (2, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Served {
    /// Calls that may write still running after the shutdown grace: each
    /// stays in flight in the journal, for a later start (or another replica)
    /// to settle once its lease runs out.
    pub calls_left: usize,
    /// Over HTTP, connections still open after the shutdown grace, closed
    /// (0 on stdio).
    pub connections_cut: usize,
}

impl Served {
    /// `calls_left` calls still running, `connections_cut` connections closed.
    pub fn new(calls_left: usize, connections_cut: usize) -> Self {
        Self {
            calls_left,
            connections_cut,
        }
    }
}
