//! What `describe()` returns: everything the host needs to know about a twin, declared by the
//! twin, so that the host names no twin and a third-party twin gets every host feature.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::template;
use crate::tools::{ToolBody, ToolDecl};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fidelity {
    /// Behaves like the real API: state, validation and errors.
    Semantic,
    /// Right shapes, simplified behaviour (documented per route).
    Shape,
}

/// One route the twin serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteDecl {
    pub method: String,
    pub path: String,
    pub action: String,
    pub fidelity: Fidelity,
}

/// One action (what a route does), for tools generated from it: a summary and a JSON Schema
/// of its input (path parameters, query and body fields as one object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionDecl {
    pub name: String,
    pub method: String,
    pub path: String,
    pub summary: String,
    pub input_schema: Value,
}

/// The kind of text a check parameter takes, checked when a criterion is bound, so a typo
/// (`is in state opne`) is reported by `pome tasks validate`, not after the agent ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    Text,
    /// A whole number, optionally written with a leading `#`.
    Number,
    /// One of these words, compared without regard to case.
    OneOf(Vec<String>),
}

impl ParamKind {
    pub fn check(&self, name: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        match self {
            ParamKind::Text => Ok(()),
            ParamKind::Number if v.trim_start_matches('#').parse::<u64>().is_ok() => Ok(()),
            ParamKind::Number => Err(format!("`{name}` must be a number, not `{v}`")),
            ParamKind::OneOf(words) if words.iter().any(|w| w.eq_ignore_ascii_case(v)) => Ok(()),
            ParamKind::OneOf(words) => Err(format!("`{name}` is `{v}`; it must be one of {words:?}")),
        }
    }
}

/// A check a grader can bind a criterion sentence to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckDecl {
    /// Stable, namespaced by the twin: `github.issue_state`.
    pub id: String,
    /// Sentence template with `{param}` holes.
    pub template: String,
    /// What it reads: `final`, `seed+final` or `tape`.
    pub substrate: String,
    /// `positive` (something must hold) or `negative` (something must not have happened).
    pub polarity: String,
    /// Parameters that take something narrower than any text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, ParamKind>,
    /// A CEL predicate over `state`, `seed`, `tape` and the parameters: how a 0.1.0 twin,
    /// which cannot evaluate its own checks, ships one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<String>,
}

impl CheckDecl {
    pub fn new(id: &str, template: &str, substrate: &str, polarity: &str) -> CheckDecl {
        CheckDecl {
            id: id.to_string(),
            template: template.to_string(),
            substrate: substrate.to_string(),
            polarity: polarity.to_string(),
            params: BTreeMap::new(),
            predicate: None,
        }
    }

    /// Narrow one parameter.
    pub fn param(mut self, name: &str, kind: ParamKind) -> CheckDecl {
        self.params.insert(name.to_string(), kind);
        self
    }

    /// The parameters `sentence` gives this check's template, if it is an instance of it.
    pub fn bind(&self, sentence: &str) -> Option<BTreeMap<String, String>> {
        template::match_template(&self.template, sentence)
    }

    /// Whether `sentence` is an instance of this check's template.
    pub fn fits(&self, sentence: &str) -> bool {
        self.bind(sentence).is_some()
    }

    /// Check the parameters a sentence gave against their declared kinds.
    pub fn validate(&self, params: &BTreeMap<String, String>) -> Result<(), String> {
        for (name, kind) in &self.params {
            if let Some(v) = params.get(name) {
                kind.check(name, v)?;
            }
        }
        Ok(())
    }
}

/// A form of the agent token that the host accepts for a twin, because the API's official
/// clients send their credential that way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Credential {
    /// `Authorization: Bearer <token>`.
    Bearer,
    /// `Authorization: token <token>` (GitHub's clients).
    TokenScheme,
    /// `Authorization: <token>` with no scheme (Linear's SDK sends an API key so).
    RawAuthorization,
    /// HTTP Basic with the token as the user name (Stripe's SDKs send a secret key so).
    BasicUser,
    /// HTTP Basic with the token as the password.
    BasicPassword,
    /// The token as the whole value of this header.
    Header(String),
    /// The token in this query parameter.
    Query(String),
    /// The token in this form field of a urlencoded body (Slack's `token`).
    FormField(String),
    /// In any of the forms above, the token may also be written with this prefix
    /// (`sk_test_<token>`, the shape Stripe's clients expect of a secret key). The sandbox's
    /// create response hands the prefixed form out as the twin's `api_key`.
    Prefix(String),
}

impl Credential {
    /// The prefix a twin's credentials allow before the token, if any.
    pub fn prefix_of(forms: &[Credential]) -> Option<&str> {
        forms.iter().find_map(|c| match c {
            Credential::Prefix(p) => Some(p.as_str()),
            _ => None,
        })
    }
}

/// One environment variable a run exports to the agent for this twin. `value` is a template:
/// `{api_url}` (the URL to give the API's client), `{base_url}` (the twin's root in the
/// sandbox), `{token}` (the agent token), `{sandbox_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

impl EnvVar {
    /// The value with its placeholders filled in.
    pub fn render(&self, api_url: &str, base_url: &str, token: &str, sandbox_id: &str) -> String {
        self.value
            .replace("{api_url}", api_url)
            .replace("{base_url}", base_url)
            .replace("{token}", token)
            .replace("{sandbox_id}", sandbox_id)
    }
}

fn default_credentials() -> Vec<Credential> {
    vec![Credential::Bearer, Credential::TokenScheme, Credential::RawAuthorization, Credential::BasicUser]
}

/// The whole of `describe()`. Fields after `checks` are new in 0.2.0; a 0.1.0 description
/// reads with their defaults (the credential forms every 0.1.0 host accepted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Description {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub contract: String,
    /// What a client appends to the twin's base URL to reach the API root (`/api/`).
    #[serde(default)]
    pub client_base_path: String,
    #[serde(default)]
    pub surface: Vec<RouteDecl>,
    #[serde(default)]
    pub checks: Vec<CheckDecl>,
    /// Tool names tasks use → the twin's action names.
    #[serde(default)]
    pub tool_aliases: BTreeMap<String, String>,
    #[serde(default = "default_credentials")]
    pub credentials: Vec<Credential>,
    #[serde(default)]
    pub agent_env: Vec<EnvVar>,
    #[serde(default)]
    pub actions: Vec<ActionDecl>,
    /// MCP tools under the vendor's own names; see [`crate::tools`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDecl>,
    /// How tools generated from actions send their fields (JSON unless the API reads forms).
    #[serde(default)]
    pub tool_body: ToolBody,
}

impl Description {
    pub fn from_json(text: &str) -> Result<Description, String> {
        serde_json::from_str(text).map_err(|e| format!("describe() is not a valid description: {e}"))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("descriptions serialise")
    }

    /// Whether the name may be a URL segment: lower-case ASCII letters, digits or `-`.
    pub fn name_is_valid(&self) -> bool {
        !self.name.is_empty() && self.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_one_description_reads_with_the_old_credential_forms() {
        let d = Description::from_json(r#"{"name": "acme", "version": "1", "surface": [], "checks": []}"#).unwrap();
        assert!(d.credentials.contains(&Credential::Bearer) && d.agent_env.is_empty());
    }

    #[test]
    fn parameters_are_checked_against_their_kinds() {
        let c = CheckDecl::new("t.state", "Ticket {n} is {state}", "final", "positive")
            .param("n", ParamKind::Number)
            .param("state", ParamKind::OneOf(vec!["open".into(), "closed".into()]));
        assert!(c.validate(&c.bind("Ticket #7 is Closed").unwrap()).is_ok());
        assert!(c.validate(&c.bind("Ticket seven is closed").unwrap()).unwrap_err().contains("number"));
        assert!(c.validate(&c.bind("Ticket 7 is opne").unwrap()).unwrap_err().contains("one of"));
    }

    #[test]
    fn credentials_and_env_read_as_json() {
        let v = serde_json::to_value([Credential::Bearer, Credential::FormField("token".into())]).unwrap();
        assert_eq!(v, serde_json::json!(["bearer", {"form_field": "token"}]));
        let e = EnvVar { name: "POME_X_API_BASE".into(), value: "{base_url}/v1?k={token}".into() };
        assert_eq!(e.render("a", "http://h/s/1/x", "tok", "s"), "http://h/s/1/x/v1?k=tok");
    }
}
