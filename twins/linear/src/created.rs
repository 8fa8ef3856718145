//! What the world holds on a new entity beyond what it was given, so a required field is
//! answered from the world and never made up at read time (issue #35).
//!
//! Only values that are facts about the twin's workspace are stored here: a feature the twin
//! does not have is off (no Slack, no AI, no SCIM, no HIPAA, no agent sessions, no GitHub
//! code access), a settings object nobody set is empty, a flag an input may set and did not is
//! false, and a value the schema documents (`fiscalYearStartMonth` "defaults to 0",
//! `inviteHash` "simply returning an empty string", a sub-issue's `inheritsSharedAccess` that
//! an input may opt out of) is that value. A manual order
//! (`sortOrder`) puts the new entity after every other of its type. Anything else the world
//! does not hold is answered as not supported ([`crate::exec::not_held`]).

use serde_json::{Value, json};

use crate::model::Entity;

/// The grey Linear gives a label or project created without a color (as `issueLabelCreate`).
const GREY: &str = "#bec2c8";

/// The values a new entity of type `ty` starts with, unless it was given them.
fn defaults(ty: &str) -> &'static [(&'static str, Defaulted)] {
    use Defaulted::*;
    match ty {
        "Organization" => &[
            ("agentAutomationEnabled", False), ("aiAddonEnabled", False), ("aiDiscussionSummariesEnabled", False), ("aiTelemetryEnabled", False),
            ("aiThreadSummariesEnabled", False), ("codeIntelligenceEnabled", False), ("codingAgentEnabled", False), ("customersEnabled", False),
            ("feedEnabled", False), ("generatedUpdatesEnabled", False), ("gitLinkbackDescriptionsEnabled", False), ("gitLinkbackMessagesEnabled", False),
            ("gitPublicLinkbackMessagesEnabled", False), ("hideNonPrimaryOrganizations", False), ("hipaaComplianceEnabled", False), ("linearAgentEnabled", False),
            ("pullRequestTourEnabled", False), ("releasesEnabled", False), ("slackAutoCreateProjectChannel", False), ("slackProjectChannelsEnabled", False),
            ("authSettings", Empty), ("codingAgentSettings", Empty), ("customersConfiguration", Empty), ("linearAgentSettings", Empty), ("securitySettings", Empty),
            ("fiscalYearStartMonth", Zero), ("pullRequestIssueMode", Text("off")), ("allowedFileUploadContentTypes", List), ("previousUrlKeys", List),
        ],
        "Team" => &[
            ("aiDiscussionSummariesEnabled", False), ("aiThreadSummariesEnabled", False), ("cycleIssueAutoAssignCompleted", False), ("cycleIssueAutoAssignStarted", False),
            ("cycleLockToActive", False), ("inheritIssueEstimation", False), ("inheritSlackAutoCreateProjectChannel", False), ("inheritWorkflowStatuses", False),
            ("issueOrderingNoPriorityFirst", False), ("issueSortOrderDefaultToBottom", False), ("requirePriorityToLeaveTriage", False), ("scimManaged", False),
            ("slackIssueComments", False), ("slackIssueStatuses", False), ("slackNewIssue", False), ("triageEnabled", False), ("securitySettings", Empty),
            ("inviteHash", Text("")), ("initiativesEnabled", False),
            // A new team's cycle and issue settings, as the seeds have always kept them.
            ("cycleDuration", Number(2)), ("cycleCooldownTime", Zero), ("cycleStartDay", Number(1)), ("upcomingCycleCount", Number(2)), ("defaultIssueEstimate", Zero),
            ("autoArchivePeriod", Number(6)), ("groupIssueHistory", True), ("setIssueSortOrderOnStateChange", Text("bottom")),
        ],
        "Comment" => &[("hideInLinear", False), ("isArtificialAgentSessionRoot", False)],
        // A sub-issue inherits its parent's shared access unless its input opts out.
        "Issue" => &[("previousIdentifiers", List), ("inheritsSharedAccess", True)],
        "User" => &[("hasGitHubCodeAccess", False)],
        // Update reminders are counted in weeks (the workspace's `…ReminderFrequencyInWeeks`).
        "Project" => &[("description", Text("")), ("color", Text(GREY)), ("frequencyResolution", Text("weekly")), ("slackIssueComments", False), ("slackIssueStatuses", False), ("slackNewIssue", False), ("priority", Zero), ("sortOrder", Last), ("prioritySortOrder", Zero)],
        // A new initiative is planned until it is started.
        "Initiative" => &[("status", Text("Planned")), ("frequencyResolution", Text("weekly")), ("priority", Zero), ("sortOrder", Last), ("prioritySortOrder", Zero)],
        "ProjectLabel" | "InitiativeLabel" => &[("isGroup", False), ("color", Text(GREY))],
        "Attachment" => &[("metadata", Empty), ("groupBySource", False)],
        "ProjectUpdate" | "InitiativeUpdate" => &[("isDiffHidden", False)],
        "AgentSkill" => &[("shared", False)],
        "CustomView" => &[("shared", False), ("filterData", Empty), ("filters", Empty)],
        "Template" => &[("sortOrder", Last)],
        // An intake address takes mail once made; its replies and options are off until set.
        "EmailIntakeAddress" => &[
            ("enabled", True), ("type", Text("team")), ("customerRequestsEnabled", False), ("issueCanceledAutoReplyEnabled", False), ("issueCompletedAutoReplyEnabled", False),
            ("issueCreatedAutoReplyEnabled", False), ("reopenOnReply", False), ("repliesEnabled", False), ("useUserNamesInReplies", False),
        ],
        "Document" | "Favorite" | "ProjectMilestone" | "Roadmap" | "TeamMembership" => &[("sortOrder", Last)],
        _ => &[],
    }
}

#[derive(Clone, Copy)]
enum Defaulted {
    False,
    True,
    Number(i64),
    Zero,
    Empty,
    List,
    Text(&'static str),
    /// After every other entity of its type (`sortOrder`).
    Last,
}

/// Fill what a new entity of type `ty` starts with; `others` entities of its type exist.
/// Relations given as lists of ids (`Project.labelIds`) that it was not given are empty: a
/// new entity relates to nothing it was not told of.
pub fn fill(ty: &str, e: &mut Entity, others: usize) {
    if let Some(row) = crate::tables::ty(ty) {
        for f in crate::tables::fields(row) {
            if f.list && f.non_null && f.ty == "String" && f.name().ends_with("Ids") && e.get(f.name()).is_none_or(Value::is_null) {
                e.insert(f.name().to_string(), json!([]));
            }
        }
    }
    for (k, d) in defaults(ty) {
        if e.get(*k).is_some_and(|v| !v.is_null()) {
            continue;
        }
        let v = match d {
            Defaulted::False => json!(false),
            Defaulted::True => json!(true),
            Defaulted::Number(n) => json!(n),
            Defaulted::Zero => json!(0),
            Defaulted::Empty => json!({}),
            Defaulted::List => json!([]),
            Defaulted::Text(s) => Value::String((*s).to_string()),
            Defaulted::Last => json!(others as f64 + 1.0),
        };
        e.insert((*k).to_string(), v);
    }
}
