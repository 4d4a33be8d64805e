//! Reading request bodies under a size cap and a memory budget shared by all connections.
//!
//! Bodies used to be buffered whole by jsonrpsee, up to the size cap each: 16 clients that
//! sent half of a 60 MiB body and stopped held 1.03 GiB (issue 14). Here a body's buffer is
//! charged to the budget before it grows, so the bytes held for bodies being received never
//! exceed `server.body_budget_bytes`, however many clients stall; the request whose growth
//! would go over is refused (503) and its buffer freed. The first
//! [`BODY_BYTES_SET_ASIDE_PER_CONNECTION`] of each body are set aside from the budget at start
//! (the connection cap bounds them), so that small requests (a search, a status) always fit
//! while large bodies fill the rest.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use hyper::body::{Body as _, Incoming};

pub use crate::config::BODY_BYTES_SET_ASIDE_PER_CONNECTION;

/// The smallest buffer worth allocating for a body.
const FIRST_BUFFER: usize = 16 * 1024;

/// The memory budget for request bodies, shared by all connections.
#[derive(Debug)]
pub struct BodyBudget {
    /// The whole budget, as configured (for messages).
    total: u64,
    /// What bodies may hold beyond their set-aside first bytes, all together.
    shared: u64,
    in_use: AtomicU64,
}

impl BodyBudget {
    /// `total` bytes, of which `connections` × [`BODY_BYTES_SET_ASIDE_PER_CONNECTION`] are set
    /// aside for the first bytes of each connection's body.
    pub fn new(total: u64, connections: usize) -> BodyBudget {
        let set_aside = connections as u64 * BODY_BYTES_SET_ASIDE_PER_CONNECTION;
        BodyBudget { total, shared: total.saturating_sub(set_aside), in_use: AtomicU64::new(0) }
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes of the shared part held now.
    #[cfg(test)]
    fn in_use(&self) -> u64 {
        self.in_use.load(Ordering::Relaxed)
    }

    fn try_take(&self, bytes: u64) -> bool {
        self.in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |in_use| {
                in_use.checked_add(bytes).filter(|after| *after <= self.shared)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: u64) {
        self.in_use.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// A body's share of the budget, given back when dropped (when its request is answered).
#[derive(Debug)]
pub struct Reservation {
    budget: Arc<BodyBudget>,
    charged: u64,
}

impl Reservation {
    pub fn new(budget: Arc<BodyBudget>) -> Reservation {
        Reservation { budget, charged: 0 }
    }

    /// Makes the reservation cover a buffer of `capacity` bytes; false if the budget is spent.
    fn cover(&mut self, capacity: usize) -> bool {
        let wanted = (capacity as u64).saturating_sub(BODY_BYTES_SET_ASIDE_PER_CONNECTION);
        if wanted <= self.charged {
            return true;
        }
        let extra = wanted - self.charged;
        if !self.budget.try_take(extra) {
            return false;
        }
        self.charged = wanted;
        true
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.give_back(self.charged);
    }
}

/// Why a body was not received.
#[derive(Debug)]
pub enum Refusal {
    /// More than the size cap arrived (a chunked body, or one whose Content-Length lied).
    TooLarge,
    /// The budget cannot cover the buffer this body needs now.
    OverBudget,
    /// The client broke off or sent malformed framing.
    Broken(String),
}

/// A body received whole, with the budget it holds until the request is answered.
pub struct Received {
    pub bytes: Vec<u8>,
    pub reservation: Reservation,
}

/// Reads `body`, at most `max_bytes`, into one buffer charged to `budget`. `declared` is the
/// Content-Length, already checked against `max_bytes`: the buffer never grows past it.
/// `received` counts the bytes so far, for the caller's timeout message.
pub async fn read(
    mut body: Incoming,
    declared: Option<u64>,
    max_bytes: u64,
    budget: &Arc<BodyBudget>,
    received: &AtomicU64,
) -> Result<Received, Refusal> {
    let mut reservation = Reservation::new(budget.clone());
    let mut data: Vec<u8> = Vec::new();
    // The buffer never needs to be larger than what the client said it would send.
    let ceiling = declared.unwrap_or(max_bytes).min(max_bytes) as usize;
    while let Some(frame) = std::future::poll_fn(|context| Pin::new(&mut body).poll_frame(context)).await {
        let frame = frame.map_err(|error| Refusal::Broken(error.to_string()))?;
        // Trailers carry nothing JSON-RPC uses.
        let Ok(chunk) = frame.into_data() else { continue };
        let needed = data.len() + chunk.len();
        if needed as u64 > max_bytes {
            return Err(Refusal::TooLarge);
        }
        if needed > data.capacity() {
            // Doubling keeps copies few; the ceiling keeps the buffer exact for a declared length.
            let capacity = needed.max(data.capacity().saturating_mul(2).max(FIRST_BUFFER).min(ceiling));
            if !reservation.cover(capacity) {
                return Err(Refusal::OverBudget);
            }
            data.reserve_exact(capacity - data.len());
        }
        // Copied, not kept: hyper's chunks may share (and so pin) a larger read buffer.
        data.extend_from_slice(&chunk);
        received.store(data.len() as u64, Ordering::Relaxed);
    }
    Ok(Received { bytes: data, reservation })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_never_take_the_budget_over_and_give_back_on_drop() {
        let budget = Arc::new(BodyBudget::new(4 * 1024 * 1024, 16));
        // 4 MiB − 16 × 64 KiB = 3 MiB shared.
        let mut first = Reservation::new(budget.clone());
        assert!(first.cover(64 * 1024), "the set-aside part costs nothing");
        assert_eq!(budget.in_use(), 0);
        assert!(first.cover(2 * 1024 * 1024 + 64 * 1024));
        let mut second = Reservation::new(budget.clone());
        assert!(!second.cover(1024 * 1024 + 64 * 1024 + 1), "over the shared 3 MiB");
        assert!(second.cover(1024 * 1024 + 64 * 1024));
        assert_eq!(budget.in_use(), 3 * 1024 * 1024);
        drop(first);
        assert_eq!(budget.in_use(), 1024 * 1024);
        drop(second);
        assert_eq!(budget.in_use(), 0);
    }
}
