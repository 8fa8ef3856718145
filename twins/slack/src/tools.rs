//! The MCP tools: the names and argument names of Slack's MCP servers — the reference server
//! (`@modelcontextprotocol/server-slack`, MIT: `slack_post_message`, `slack_get_channel_history`,
//! …) and Slack's own hosted server where a tool is one Web API method (`slack_send_message`,
//! `slack_read_channel`, …) — each mapped onto a Web API method of this twin, sent as a form
//! like Slack's own clients do. The table is `tools.json`.

use pome_twin_sdk::describe::ToolDecl;

pub fn tools() -> Vec<ToolDecl> {
    serde_json::from_str(include_str!("tools.json")).expect("tools.json is a list of tool declarations")
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_tool_reaches_a_route_the_twin_serves() {
        let routes = <crate::World as pome_twin_sdk::Twin>::router().surface();
        for t in super::tools() {
            assert!(t.reaches(&routes), "{} {} ({}) is no route of the twin", t.method, t.path, t.name);
        }
    }
}
