//! One request being served: the request, its path parameters, and what it did (action,
//! changes, unsupported), which the glue hands to the host's tape after the handler returns.

use serde::Serialize;

use crate::http::Request;

/// One entity change, as the tape records it: JSON before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub entity: String,
    pub id: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

#[derive(Debug)]
pub struct Call {
    pub req: Request,
    /// Path parameters captured by the matched route, in pattern order.
    pub params: Vec<(String, String)>,
    pub action: Option<String>,
    pub unsupported: bool,
    pub changes: Vec<Change>,
    /// Webhooks to deliver once the call returns (see [`Call::deliver`]).
    pub deliveries: Vec<Delivery>,
}

/// A request the twin asks the host to send out of the sandbox: a webhook, built and signed
/// by the twin. The host delivers it after the call, with retries, to allowed destinations
/// only; the outcome never comes back into the world, so replays stay exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The event it carries, for the delivery log (`payment_intent.succeeded`).
    pub event: String,
}

impl Call {
    pub fn new(req: Request) -> Call {
        Call { req, params: Vec::new(), action: None, unsupported: false, changes: Vec::new(), deliveries: Vec::new() }
    }

    /// A path parameter by name. Routes declare their parameters, so a missing one is a bug
    /// in the twin's route table.
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("route has no parameter {name:?}"))
    }

    /// Record that `entity` `id` changed from `before` to `after` (`None` = absent).
    pub fn record<B: Serialize, A: Serialize>(
        &mut self,
        entity: &str,
        id: impl ToString,
        before: Option<&B>,
        after: Option<&A>,
    ) {
        let enc = |v: &dyn erased::Json| v.to_json();
        self.changes.push(Change {
            entity: entity.to_string(),
            id: id.to_string(),
            before: before.map(|b| enc(b)),
            after: after.map(|a| enc(a)),
        });
    }

    pub fn created<A: Serialize>(&mut self, entity: &str, id: impl ToString, after: &A) {
        self.record::<A, A>(entity, id, None, Some(after));
    }

    pub fn updated<A: Serialize>(&mut self, entity: &str, id: impl ToString, before: &A, after: &A) {
        self.record(entity, id, Some(before), Some(after));
    }

    pub fn deleted<B: Serialize>(&mut self, entity: &str, id: impl ToString, before: &B) {
        self.record::<B, B>(entity, id, Some(before), None);
    }

    /// Change `value` in place and record it as an update of `entity` `id`: the before/after
    /// pair every write handler needs, without a hand-written clone.
    pub fn update<A: Serialize + Clone, R>(&mut self, entity: &str, id: impl ToString, value: &mut A, change: impl FnOnce(&mut A) -> R) -> R {
        let before = value.clone();
        let out = change(value);
        self.updated(entity, id, &before, value);
        out
    }

    /// Queue a webhook for the host to deliver after this call.
    pub fn deliver(&mut self, delivery: Delivery) {
        self.deliveries.push(delivery);
    }

    /// True when the request changed the world.
    pub fn mutated(&self) -> bool {
        !self.changes.is_empty()
    }
}

mod erased {
    pub trait Json {
        fn to_json(&self) -> String;
    }
    impl<T: serde::Serialize + ?Sized> Json for T {
        fn to_json(&self) -> String {
            serde_json::to_string(self).expect("entities serialise to JSON")
        }
    }
}
