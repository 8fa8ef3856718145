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
}

impl Call {
    pub fn new(req: Request) -> Call {
        Call { req, params: Vec::new(), action: None, unsupported: false, changes: Vec::new() }
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
