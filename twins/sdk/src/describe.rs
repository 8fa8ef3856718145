//! What `describe()` returns: the twin's name, version, surface (one entry per route with its
//! fidelity tier) and the checks it declares for graders.

use serde::{Deserialize, Serialize};

use crate::Twin;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// Behaves like the real API: state, validation and errors.
    Semantic,
    /// Right shapes, simplified behaviour (documented per route).
    Shape,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RouteDecl {
    pub method: String,
    pub path: String,
    pub action: String,
    pub fidelity: Fidelity,
}

/// A check a grader can bind a criterion sentence to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckDecl {
    pub id: String,
    /// Sentence template with `{param}` placeholders.
    pub template: String,
    /// `final`, `seed+final` or `tape`.
    pub substrate: String,
    /// `positive` (something must hold) or `negative` (something must not have happened).
    pub polarity: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Description {
    pub name: String,
    pub version: String,
    pub contract: String,
    pub client_base_path: String,
    pub surface: Vec<RouteDecl>,
    pub checks: Vec<CheckDecl>,
    /// Tool name → action name.
    pub tool_aliases: std::collections::BTreeMap<String, String>,
}

impl Description {
    pub fn of<T: Twin>() -> Description {
        Description {
            name: T::NAME.to_string(),
            version: T::VERSION.to_string(),
            contract: "pome:twin@0.1.0".to_string(),
            client_base_path: T::CLIENT_BASE_PATH.to_string(),
            surface: T::router().surface(),
            checks: T::checks(),
            tool_aliases: T::tool_aliases().into_iter().map(|(t, a)| (t.to_string(), a.to_string())).collect(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("descriptions serialise")
    }
}
