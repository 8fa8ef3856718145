//! What `describe()` returns, built from a [`Twin`]'s declarations. The types are the
//! contract crate's (`pome-contract`), shared with the host, so the two cannot drift.

pub use pome_contract::describe::{ActionDecl, CheckDecl, Credential, Description, EnvVar, Fidelity, ParamKind, RouteDecl};
pub use pome_contract::tools::{ToolBody, ToolDecl, flatten_form, join_pairs, percent_encode};
use serde_json::{Value, json};

use crate::Twin;

/// The description of `T`.
pub fn of<T: Twin>() -> Description {
    Description {
        name: T::NAME.to_string(),
        version: T::VERSION.to_string(),
        contract: pome_contract::CONTRACT_V3.to_string(),
        client_base_path: T::CLIENT_BASE_PATH.to_string(),
        surface: T::router().surface(),
        checks: T::checks(),
        tool_aliases: T::tool_aliases().into_iter().map(|(t, a)| (t.to_string(), a.to_string())).collect(),
        credentials: T::credentials(),
        agent_env: T::agent_env().into_iter().map(|(name, value)| EnvVar { name: name.to_string(), value: value.to_string() }).collect(),
        actions: T::actions(),
        tools: T::tools(),
        tool_body: T::tool_body(),
    }
}

/// The actions a router serves, one per action name, with a summary and an input schema made
/// from the route: its path parameters are required strings, and anything else (query and
/// body fields) is allowed. Twins with richer documentation override [`Twin::actions`].
pub fn actions_from_surface(surface: &[RouteDecl]) -> Vec<ActionDecl> {
    let mut out: Vec<ActionDecl> = Vec::new();
    for r in surface {
        if out.iter().any(|a| a.name == r.action) {
            continue;
        }
        let params: Vec<&str> = r
            .path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .map(|s| s.trim_start_matches('*'))
            .collect();
        let properties: serde_json::Map<String, Value> = params.iter().map(|p| (p.to_string(), json!({"type": "string"}))).collect();
        out.push(ActionDecl {
            name: r.action.clone(),
            method: r.method.clone(),
            path: r.path.clone(),
            summary: format!("{} {}", r.method, r.path),
            input_schema: json!({"type": "object", "properties": properties, "required": params, "additionalProperties": true}),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_take_their_path_parameters_as_required_input() {
        let surface = vec![RouteDecl { method: "GET".into(), path: "/repos/{owner}/{repo}".into(), action: "repos.get".into(), fidelity: Fidelity::Semantic }];
        let a = &actions_from_surface(&surface)[0];
        assert_eq!(a.input_schema["required"], json!(["owner", "repo"]));
    }
}
