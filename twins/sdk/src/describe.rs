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

impl CheckDecl {
    /// Whether `sentence` is an instance of this check's template: each `{param}` matches
    /// any non-empty text. Twins test with it that the criteria users write fit their checks.
    pub fn fits(&self, sentence: &str) -> bool {
        fn go(t: &str, s: &str) -> bool {
            match t.find('{') {
                None => t == s,
                Some(i) => {
                    let (lit, rest) = t.split_at(i);
                    let Some(s) = s.strip_prefix(lit) else { return false };
                    let after = &rest[rest.find('}').map(|j| j + 1).unwrap_or(rest.len())..];
                    (1..=s.len()).filter(|&k| s.is_char_boundary(k)).any(|k| go(after, &s[k..]))
                }
            }
        }
        go(&self.template, sentence.trim())
    }
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

#[cfg(test)]
mod tests {
    use super::CheckDecl;

    #[test]
    fn a_sentence_fits_a_template_when_each_param_takes_some_text() {
        let c = CheckDecl {
            id: "slack.message-contains".into(),
            template: "A message in \"{channel}\" contains \"{needle}\"".into(),
            substrate: "final".into(),
            polarity: "positive".into(),
        };
        assert!(c.fits("A message in \"eng-alerts\" contains \"pull/1\""));
        assert!(!c.fits("A message in eng-alerts"));
        assert!(!c.fits("A message in \"\" contains \"x\""), "a param takes non-empty text");
    }
}
