//! Push notifications: what `users.watch` starts. Gmail publishes `{emailAddress, historyId}`
//! to the watch's Cloud Pub/Sub topic on every mailbox change the watch's label filter lets
//! through, and Pub/Sub pushes it to each push subscription of that topic as its push
//! envelope. The topics and subscriptions are the seed's (`pubsub`); the pushes leave through
//! the host's outbound deliveries, so they are on the tape and never feed back into the world.

use base64::Engine;
use pome_twin_sdk::{Call, Delivery, Response, Value, json};
use serde::{Deserialize, Serialize};

use crate::model::{HistKind, World};

/// The seed's Cloud Pub/Sub: topics a watch may name, and their subscriptions.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PubSub {
    /// Whether the seed declared any: without a declaration every well-formed topic is taken
    /// to exist (with no subscription, so nothing is pushed), as before seeds could say.
    pub declared: bool,
    pub topics: Vec<String>,
    pub subscriptions: Vec<Subscription>,
    /// The mailbox history id up to which changes have been published (or passed over).
    pub published_through: u64,
    /// Messages published so far: Pub/Sub message ids count from it.
    pub published: u64,
}

/// A Pub/Sub subscription as Pub/Sub describes one: `name`, `topic`,
/// `pushConfig.pushEndpoint` (absent for a pull subscription, which nothing is pushed to).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Subscription {
    pub name: String,
    pub topic: String,
    pub push_endpoint: Option<String>,
}

impl PubSub {
    pub fn topic_exists(&self, topic: &str) -> bool {
        !self.declared || self.topics.iter().any(|t| t == topic) || self.subscriptions.iter().any(|s| s.topic == topic)
    }
}

/// The first Pub/Sub message id: Pub/Sub's are decimal numbers of about sixteen digits.
const FIRST_MESSAGE_ID: u64 = 2_070_443_601_311_540;

/// Who Pub/Sub says it is when it pushes.
const PUSH_USER_AGENT: &str = "APIs-Google; (+https://developers.google.com/webmasters/APIs-Google.html)";

/// Run after every handler: if the primary mailbox's history moved, publish one notification
/// for the changes the watch lets through, to every push subscription of its topic.
pub fn after(resp: Response, w: &mut World, call: &mut Call) -> Response {
    let mb = &w.mailboxes[w.primary];
    let through = w.pubsub.published_through;
    if mb.history_id == through {
        return resp;
    }
    w.pubsub.published_through = mb.history_id;
    let Some(watch) = mb.settings.watch.as_ref() else { return resp };
    let now = pome_twin_sdk::time::now();
    let expires = watch["expiration"].as_str().and_then(|e| e.parse::<i64>().ok()).unwrap_or(i64::MAX);
    if now.timestamp_millis() >= expires {
        return resp;
    }
    let topic = watch["topicName"].as_str().unwrap_or_default().to_string();
    let filter: Vec<String> = watch["labelIds"].as_array().map(|a| a.iter().filter_map(|l| l.as_str().map(str::to_string)).collect()).unwrap_or_default();
    let exclude = watch["labelFilterBehavior"].as_str().or(watch["labelFilterAction"].as_str()).is_some_and(|b| b.eq_ignore_ascii_case("exclude"));
    let from = mb.history.partition_point(|r| r.id <= through);
    let lets_through = mb.history[from..].iter().any(|r| {
        if filter.is_empty() {
            return true;
        }
        let changed: &[String] = match &r.kind {
            HistKind::LabelsAdded(l) | HistKind::LabelsRemoved(l) => l,
            HistKind::Added | HistKind::Deleted => &[],
        };
        let touches = r.label_ids.iter().chain(changed).any(|l| filter.contains(l));
        touches != exclude
    });
    if !lets_through {
        return resp;
    }
    // Gmail's notification: the address and the mailbox's history id after the change.
    let data = json!({"emailAddress": mb.email, "historyId": mb.history_id});
    let data = base64::engine::general_purpose::STANDARD.encode(data.to_string());
    let published = now.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let message_id = (FIRST_MESSAGE_ID + w.pubsub.published).to_string();
    w.pubsub.published += 1;
    for s in w.pubsub.subscriptions.iter().filter(|s| s.topic == topic) {
        let Some(url) = &s.push_endpoint else { continue };
        let envelope = json!({
            "message": {"data": data, "messageId": message_id, "message_id": message_id, "publishTime": published, "publish_time": published},
            "subscription": s.name,
        });
        call.deliver(Delivery {
            url: url.clone(),
            method: "POST".into(),
            headers: vec![("content-type".into(), "application/json".into()), ("user-agent".into(), PUSH_USER_AGENT.into())],
            body: envelope.to_string().into_bytes(),
            event: "gmail.mailbox_changed".into(),
        });
    }
    resp
}

/// Read the seed's `pubsub`: `{"topics": [name…], "subscriptions": [{"name", "topic",
/// "pushConfig": {"pushEndpoint"}}]}`, names in Pub/Sub's `projects/P/topics/T` and
/// `projects/P/subscriptions/S` forms.
pub fn from_seed(v: &Value) -> Result<PubSub, String> {
    let path = "seed.pubsub";
    let o = v.as_object().ok_or(format!("{path}: expected an object"))?;
    for k in o.keys() {
        if k != "topics" && k != "subscriptions" {
            return Err(format!("{path}.{k}: unknown field (expected one of topics, subscriptions)"));
        }
    }
    let mut out = PubSub { declared: true, ..PubSub::default() };
    for (i, t) in o.get("topics").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        let t = t.as_str().ok_or(format!("{path}.topics[{i}]: expected a string"))?;
        if !is_name(t, "topics") {
            return Err(format!("{path}.topics[{i}]: expected projects/PROJECT/topics/TOPIC, got {t:?}"));
        }
        out.topics.push(t.to_string());
    }
    if o.get("topics").is_some_and(|t| !t.is_array()) {
        return Err(format!("{path}.topics: expected a list"));
    }
    if o.get("subscriptions").is_some_and(|t| !t.is_array()) {
        return Err(format!("{path}.subscriptions: expected a list"));
    }
    for (i, s) in o.get("subscriptions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        let p = format!("{path}.subscriptions[{i}]");
        let so = s.as_object().ok_or(format!("{p}: expected an object"))?;
        for k in so.keys() {
            if !["name", "topic", "pushConfig"].contains(&k.as_str()) {
                return Err(format!("{p}.{k}: unknown field (expected one of name, topic, pushConfig)"));
            }
        }
        let name = so.get("name").and_then(Value::as_str).ok_or(format!("{p}.name: required"))?;
        if !is_name(name, "subscriptions") {
            return Err(format!("{p}.name: expected projects/PROJECT/subscriptions/NAME, got {name:?}"));
        }
        let topic = so.get("topic").and_then(Value::as_str).ok_or(format!("{p}.topic: required"))?;
        if !is_name(topic, "topics") {
            return Err(format!("{p}.topic: expected projects/PROJECT/topics/TOPIC, got {topic:?}"));
        }
        let push_endpoint = match so.get("pushConfig") {
            None | Some(Value::Null) => None,
            Some(Value::Object(pc)) => match pc.get("pushEndpoint") {
                None | Some(Value::Null) => None,
                Some(Value::String(u)) if u.starts_with("https://") || u.starts_with("http://") => Some(u.clone()),
                Some(_) => return Err(format!("{p}.pushConfig.pushEndpoint: expected an http(s) URL")),
            },
            Some(_) => return Err(format!("{p}.pushConfig: expected an object")),
        };
        out.subscriptions.push(Subscription { name: name.to_string(), topic: topic.to_string(), push_endpoint });
    }
    Ok(out)
}

/// `projects/P/<kind>/N` with non-empty P and N.
pub fn is_name(s: &str, kind: &str) -> bool {
    let parts: Vec<&str> = s.split('/').collect();
    parts.len() == 4 && parts[0] == "projects" && !parts[1].is_empty() && parts[2] == kind && !parts[3].is_empty()
}
