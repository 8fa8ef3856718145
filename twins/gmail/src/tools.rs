//! The MCP tools: Google's Gmail MCP server's 13 tools (`mcp/tools.json`, as captured), which
//! this twin serves itself at `/mcp/v1` in the vendor's own output shapes. Each is declared as
//! a call to that endpoint ([`ToolBody::Mcp`]), so the sandbox's MCP door and the twin's own
//! answer the same tools the same way, and every write still goes through the REST handlers.

use pome_twin_sdk::describe::{ToolBody, ToolDecl};
use pome_twin_sdk::Value;

pub fn tools() -> Vec<ToolDecl> {
    let listing: Value = serde_json::from_str(include_str!("../mcp/tools.json")).expect("mcp/tools.json is JSON");
    let mut out = Vec::new();
    for t in listing["tools"].as_array().into_iter().flatten() {
        out.push(ToolDecl {
            name: t["name"].as_str().unwrap_or_default().to_string(),
            description: t["description"].as_str().unwrap_or_default().to_string(),
            input_schema: t["inputSchema"].clone(),
            method: "POST".into(),
            path: "/mcp/v1".into(),
            body: ToolBody::Mcp,
            rename: Default::default(),
            fixed: Default::default(),
            read_only: t["annotations"]["readOnlyHint"].as_bool().unwrap_or(false),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_thirteen_vendor_tools_are_declared() {
        let names: Vec<String> = super::tools().into_iter().map(|t| t.name).collect();
        assert_eq!(names.len(), 13, "{names:?}");
        for n in ["create_draft", "list_drafts", "get_thread", "get_message", "search_threads", "label_thread", "list_labels", "create_label"] {
            assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
        }
    }
}
