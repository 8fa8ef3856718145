//! A tape row as twins and graders read it: the JSON the host writes for every request a twin
//! served (`/_pome/events`, stored runs), with the fields checks need. The host's own row type
//! holds the same data in shared buffers and writes exactly this JSON; fields a reader does
//! not know are ignored, so the host may add some without breaking twins.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TapeRow {
    pub seq: u64,
    /// The virtual time given to the twin (RFC 3339).
    #[serde(default)]
    pub ts: String,
    #[serde(default)]
    pub twin: String,
    #[serde(default)]
    pub method: String,
    #[serde(default)]
    pub path: String,
    #[serde(default)]
    pub query: String,
    /// Lower-cased, credentials redacted.
    #[serde(default)]
    pub request_headers: Vec<(String, String)>,
    /// Text, or `base64:<data>` for bytes that are not UTF-8.
    #[serde(default)]
    pub request_body: String,
    #[serde(default)]
    pub status: u16,
    #[serde(default)]
    pub response_body: String,
    /// The twin action that served it (`issues.create`).
    #[serde(default)]
    pub action: Option<String>,
    /// `semantic` or `unsupported`.
    #[serde(default)]
    pub fidelity: String,
    /// Which door the call came through: `rest` (the default) or `mcp`.
    #[serde(default)]
    pub via: Option<String>,
    #[serde(default)]
    pub state_mutation: bool,
    #[serde(default)]
    pub state_delta: Vec<StateChange>,
    /// Webhooks the twin asked the host to deliver while serving this request.
    #[serde(default)]
    pub deliveries: Vec<Delivery>,
    #[serde(default)]
    pub error: Option<String>,
}

impl TapeRow {
    pub fn is_unsupported(&self) -> bool {
        self.fidelity == "unsupported"
    }

    /// The request body as JSON, when it is JSON.
    pub fn request_json(&self) -> Option<Value> {
        serde_json::from_str(&self.request_body).ok()
    }

    /// The response body as JSON, when it is JSON.
    pub fn response_json(&self) -> Option<Value> {
        serde_json::from_str(&self.response_body).ok()
    }
}

/// One entity a request changed: `before: None` is a creation, `after: None` a deletion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateChange {
    pub entity: String,
    pub id: String,
    #[serde(default)]
    pub before: Option<Value>,
    #[serde(default)]
    pub after: Option<Value>,
}

/// A request a twin asks the host to send out of the sandbox (a webhook), built and signed by
/// the twin. On the tape the body is text (`base64:<data>` for bytes that are not UTF-8).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The event it carries (`payment_intent.succeeded`).
    pub event: String,
}
