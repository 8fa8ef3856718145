//! The MCP tools: Stripe's agent toolkit's per-resource tools (`@stripe/mcp` /
//! `@stripe/agent-toolkit`: `create_customer`, `list_invoices`, …) and mcp.stripe.com's generic
//! and account tools (`stripe_api_search/details/read/write`, `get_stripe_account_info`, …),
//! with their names, descriptions, input schemas and read-only hints verbatim; where a name is
//! in both (`create_refund`, `search_stripe_documentation`) the toolkit's. The table is
//! `tools.json`.
//!
//! A tool that is one REST call goes to the twin's route as Stripe's nested-bracket form (the
//! query for reads); fixed fields add what the toolkit adds itself (`create_invoice` sends
//! `collection_method=send_invoice`; `create_coupon` sends its zod defaults, `currency=USD` and
//! `duration=once`, when they are absent). The others are the twin's `/mcp-tools/<tool>`
//! routes ([`crate::mcp_tools`]).
//!
//! Not served: `stripe_implementation_planner` (Stripe's own guided-planning service: its
//! guides and decision trees are not the API's behaviour and a sandbox has nothing honest to
//! answer with) and `manage_stripe_accounts` (a link to the Dashboard's session settings; a
//! sandbox has one seeded account and no Dashboard).

use pome_twin_sdk::ToolDecl;

pub fn declared() -> Vec<ToolDecl> {
    serde_json::from_str(include_str!("tools.json")).expect("tools.json is a list of tool declarations")
}

#[cfg(test)]
mod tests {
    use pome_twin_sdk::Twin;

    #[test]
    fn every_tool_reaches_a_route_the_twin_serves() {
        let routes = crate::World::router().surface();
        for t in super::declared() {
            assert!(t.reaches(&routes), "{} {} ({}) is no route of the twin", t.method, t.path, t.name);
        }
    }
}
