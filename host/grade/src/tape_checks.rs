//! Checks every twin has without declaring them, because they read only the tape, whose shape
//! the host owns: a tool was called, a tool was never called, no unsupported endpoint was called.

use pome_contract::CheckDecl;
use pome_tape::{Fidelity, TapeRow};
use serde_json::json;

use super::{Outcome, Params};

pub fn declared() -> [CheckDecl; 3] {
    [
        CheckDecl::new("tape.no_unsupported", "No unsupported endpoint was called", "tape", "negative"),
        CheckDecl::new("tape.tool_called", "`{tool}` was called", "tape", "positive"),
        CheckDecl::new("tape.tool_never_called", "`{tool}` was never called", "tape", "negative"),
    ]
}

pub fn is_tape_check(id: &str) -> bool {
    id.starts_with("tape.")
}

pub fn evaluate(id: &str, p: &Params, tape: &[TapeRow]) -> Result<Outcome, String> {
    match id {
        "tape.no_unsupported" => Ok(match tape.iter().find(|r| r.fidelity == Fidelity::Unsupported) {
            Some(r) => Outcome::new(false, format!("{} {} is not supported by the twin", r.method, r.path), json!({"seq": r.seq})),
            None => Outcome::new(true, format!("all {} calls were supported", tape.len()), json!({"tape": tape.len()})),
        }),
        "tape.tool_called" | "tape.tool_never_called" => {
            let tool = p.get("tool").map(|t| t.trim()).ok_or("the check needs `tool`")?;
            let alias = p.get("_action").map(String::as_str);
            let hit = tape.iter().find(|r| tool_matches(tool, alias, r.action.as_deref().unwrap_or("")));
            let want_called = id == "tape.tool_called";
            Ok(match hit {
                Some(r) => Outcome::new(want_called, format!("`{tool}` was called ({} {})", r.method, r.path), json!({"seq": r.seq})),
                None => Outcome::new(!want_called, format!("`{tool}` was not called in {} calls", tape.len()), json!({"tape": tape.len()})),
            })
        }
        other => Err(format!("no tape check `{other}`")),
    }
}

/// Whether a tape row's `action` is the named tool: the action itself, its last segment
/// (`create` for `issues.create`), or the action the twin declares for that tool name.
fn tool_matches(tool: &str, alias: Option<&str>, action: &str) -> bool {
    !action.is_empty() && (action == tool || action.rsplit('.').next() == Some(tool) || alias == Some(action))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(seq: u64, action: &str, fidelity: &str) -> TapeRow {
        let fidelity = if fidelity == "unsupported" { Fidelity::Unsupported } else { Fidelity::Semantic };
        TapeRow { seq, method: "POST".into(), path: "/x".into(), action: Some(action.into()), fidelity, ..TapeRow::default() }
    }

    #[test]
    fn an_unsupported_call_is_found_and_pointed_at() {
        let o = evaluate("tape.no_unsupported", &Params::new(), &[row(1, "a.b", "semantic"), row(2, "", "unsupported")]).unwrap();
        assert_eq!((o.holds, o.evidence), (false, json!({"seq": 2})));
        assert!(evaluate("tape.no_unsupported", &Params::new(), &[row(1, "a.b", "semantic")]).unwrap().holds);
    }

    #[test]
    fn a_tool_is_named_by_its_action_its_last_segment_or_an_alias() {
        let tape = [row(1, "pulls.merge", "semantic")];
        let p = |tool: &str, alias: Option<&str>| {
            let mut p = Params::from([("tool".to_string(), tool.to_string())]);
            if let Some(a) = alias {
                p.insert("_action".into(), a.into());
            }
            p
        };
        assert!(evaluate("tape.tool_called", &p("pulls.merge", None), &tape).unwrap().holds);
        assert!(evaluate("tape.tool_called", &p("merge", None), &tape).unwrap().holds);
        assert!(evaluate("tape.tool_called", &p("merge_pull_request", Some("pulls.merge")), &tape).unwrap().holds);
        assert!(evaluate("tape.tool_never_called", &p("close", None), &tape).unwrap().holds);
        assert!(!evaluate("tape.tool_never_called", &p("merge", None), &tape).unwrap().holds);
    }
}
