//! A toy ticket tracker, written the way a third party would write a twin: against the
//! published contract (`pome:twin@0.2.0`) with the SDK, knowing nothing of the host. The host's
//! tests load it with `--twins-dir` and check that it gets everything a first-party twin gets.
//!
//! - `GET /tickets`, `POST /tickets {title}`, `GET /tickets/{id}`, `PATCH /tickets/{id} {closed}`
//! - `POST /webhooks {url, secret}`: every later ticket change is delivered to `url` as
//!   `POST {event, ticket}` signed `X-Tickets-Signature: sha256=<hex HMAC-SHA256(secret, body)>`.
//! - Credential: the agent token in an `X-Ticket-Key` header, and nothing else.
//! - Checks: `Ticket {ticket} is closed`, `A ticket titled "{title}" exists`, both decided here.

use hmac::{Hmac, Mac};
use pome_twin_sdk::{
    Call, CheckDecl, CheckWorld, Credential, Delivery, Evidence, HostError, Outcome, ParamKind, Params, Response, Router, Twin, Value, json,
};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Default)]
pub struct Tickets {
    tickets: Vec<Ticket>,
    webhooks: Vec<Webhook>,
}

#[derive(Serialize, Deserialize, Clone)]
struct Ticket {
    id: u64,
    title: String,
    closed: bool,
}

#[derive(Serialize, Deserialize, Clone)]
struct Webhook {
    url: String,
    secret: String,
}

impl Twin for Tickets {
    const NAME: &'static str = "tickets";
    const VERSION: &'static str = "1.0.0";

    fn init(seed: Option<Value>) -> Result<Self, String> {
        let Some(seed) = seed else {
            return Ok(Tickets { tickets: vec![Ticket { id: 1, title: "Printer on fire".into(), closed: false }], webhooks: vec![] });
        };
        let obj = seed.as_object().ok_or("the seed must be an object")?;
        if let Some(k) = obj.keys().find(|k| !["tickets", "webhooks", "_meta"].contains(&k.as_str())) {
            return Err(format!("{k}: not a field of a tickets seed (tickets, webhooks)"));
        }
        let tickets = match obj.get("tickets") {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("tickets: {e}"))?,
            None => vec![],
        };
        let webhooks = match obj.get("webhooks") {
            Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("webhooks: {e}"))?,
            None => vec![],
        };
        Ok(Tickets { tickets, webhooks })
    }

    fn router() -> &'static Router<Self> {
        static R: std::sync::OnceLock<Router<Tickets>> = std::sync::OnceLock::new();
        R.get_or_init(|| {
            Router::<Tickets>::new()
                .get("/tickets", "tickets.list", |w, _| Response::json(200, &w.tickets))
                .post("/tickets", "tickets.create", create)
                .get("/tickets/{id}", "tickets.get", |w, call| match find(w, call) {
                    Some(i) => Response::json(200, &w.tickets[i]),
                    None => not_found(),
                })
                .patch("/tickets/{id}", "tickets.update", update)
                .post("/webhooks", "webhooks.create", |w, call| {
                    let Ok(hook) = call.req.json::<Webhook>() else {
                        return Response::json(400, &json!({"error": "url and secret are required"}));
                    };
                    call.created("webhook", w.webhooks.len() + 1, &json!({"url": hook.url}));
                    w.webhooks.push(hook);
                    Response::json(201, &json!({"id": w.webhooks.len()}))
                })
        })
    }

    fn unsupported(call: &Call) -> Response {
        Response::json(501, &json!({"error": format!("{} is not a tickets route", call.req.path)}))
    }

    fn auth_error(_call: &Call) -> Response {
        Response::json(401, &json!({"error": "send your key in X-Ticket-Key"}))
    }

    fn host_error(err: &HostError) -> Response {
        Response::json(err.kind.status(), &json!({"error": err.message}))
    }

    fn credentials() -> Vec<Credential> {
        vec![Credential::Header("x-ticket-key".into())]
    }

    fn agent_env() -> Vec<(&'static str, &'static str)> {
        vec![("TICKETS_URL", "{api_url}"), ("TICKETS_KEY", "{token}")]
    }

    fn checks() -> Vec<CheckDecl> {
        vec![
            CheckDecl::new("tickets.closed", "Ticket {ticket} is closed", "final", "positive").param("ticket", ParamKind::Number),
            CheckDecl::new("tickets.titled", "A ticket titled \"{title}\" exists", "final", "positive"),
        ]
    }

    fn evaluate_check(id: &str, p: &Params, w: &CheckWorld<'_>) -> Result<Outcome, String> {
        let tickets = w.state["tickets"].as_array().cloned().unwrap_or_default();
        match id {
            "tickets.closed" => {
                let n: u64 = p["ticket"].trim_start_matches('#').parse().map_err(|_| "ticket must be a number")?;
                let i = tickets.iter().position(|t| t["id"] == n).ok_or_else(|| format!("there is no ticket {n}"))?;
                let closed = tickets[i]["closed"] == true;
                Ok(Outcome::new(closed, format!("ticket {n} is {}", if closed { "closed" } else { "open" }), Evidence::state(format!("tickets[{i}].closed"))))
            }
            "tickets.titled" => Ok(match tickets.iter().position(|t| t["title"].as_str().is_some_and(|s| s.eq_ignore_ascii_case(&p["title"]))) {
                Some(i) => Outcome::new(true, format!("ticket {} has that title", tickets[i]["id"]), Evidence::state(format!("tickets[{i}]"))),
                None => Outcome::new(false, format!("none of {} tickets has that title", tickets.len()), Evidence::state("tickets")),
            }),
            other => Err(format!("the tickets twin has no check `{other}`")),
        }
    }
}

fn find(w: &Tickets, call: &Call) -> Option<usize> {
    let id: u64 = call.param("id").parse().ok()?;
    w.tickets.iter().position(|t| t.id == id)
}

fn not_found() -> Response {
    Response::json(404, &json!({"error": "no such ticket"}))
}

fn create(w: &mut Tickets, call: &mut Call) -> Response {
    let title = call.req.json_value().ok().and_then(|v| v["title"].as_str().map(String::from));
    let Some(title) = title.filter(|t| !t.is_empty()) else {
        return Response::json(422, &json!({"error": "title is required"}));
    };
    let t = Ticket { id: w.tickets.iter().map(|t| t.id).max().unwrap_or(0) + 1, title, closed: false };
    call.created("ticket", t.id, &t);
    w.tickets.push(t.clone());
    notify(w, call, "ticket.created", &t);
    Response::json(201, &t)
}

fn update(w: &mut Tickets, call: &mut Call) -> Response {
    let Some(i) = find(w, call) else { return not_found() };
    let Some(closed) = call.req.json_value().ok().and_then(|v| v["closed"].as_bool()) else {
        return Response::json(422, &json!({"error": "closed (a boolean) is required"}));
    };
    let id = w.tickets[i].id;
    call.update("ticket", id, &mut w.tickets[i], |t| t.closed = closed);
    let t = w.tickets[i].clone();
    notify(w, call, if closed { "ticket.closed" } else { "ticket.reopened" }, &t);
    Response::json(200, &t)
}

/// Queue one signed delivery per registered webhook.
fn notify(w: &Tickets, call: &mut Call, event: &str, t: &Ticket) {
    let body = serde_json::to_vec(&json!({"event": event, "ticket": t})).expect("JSON");
    for hook in &w.webhooks {
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(hook.secret.as_bytes()).expect("HMAC takes any key");
        mac.update(&body);
        let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
        call.deliver(Delivery {
            url: hook.url.clone(),
            method: "POST".into(),
            headers: vec![("content-type".into(), "application/json".into()), ("x-tickets-signature".into(), signature)],
            body: body.clone(),
            event: event.into(),
        });
    }
}

pome_twin_sdk::export_twin!(Tickets);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn its_checks_hold_in_one_world_and_not_in_another() {
        let open = json!({"tickets": [{"id": 7, "title": "A", "closed": false}]});
        let closed = json!({"tickets": [{"id": 7, "title": "A", "closed": true}]});
        let p = Params::from([("ticket".to_string(), "7".to_string())]);
        let w = |s| CheckWorld { seed: &open, state: s, tape: &[] };
        assert!(Tickets::evaluate_check("tickets.closed", &p, &w(&closed)).unwrap().holds);
        let o = Tickets::evaluate_check("tickets.closed", &p, &w(&open)).unwrap();
        assert_eq!((o.holds, o.evidence), (false, Evidence::state("tickets[0].closed")));
        assert!(Tickets::evaluate_check("tickets.closed", &Params::from([("ticket".to_string(), "8".to_string())]), &w(&open)).is_err());
    }
}
