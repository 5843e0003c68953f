//! The approved calls a proxy is sending now, by id, so that none is sent
//! twice at once — by a client's call and the proxy's look at the journal
//! together (see `approved`).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

/// The approved calls being sent now, by id: none is sent twice at once.
#[derive(Debug, Default)]
pub(crate) struct Sending(Mutex<HashSet<String>>);

/// One call's place among those being sent; let go when dropped.
pub(crate) struct Place<'a> {
    sending: &'a Sending,
    call_id: String,
}

impl Sending {
    pub(crate) fn take(&self, call_id: &str) -> Option<Place<'_>> {
        let mut now = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        now.insert(call_id.to_owned()).then(|| Place {
            sending: self,
            call_id: call_id.to_owned(),
        })
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut now = self
            .sending
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        now.remove(&self.call_id);
    }
}
