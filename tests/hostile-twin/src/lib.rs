//! A twin that misbehaves on request, so the host's limits can be tested against a real
//! component: `GET /loop` spins forever, `GET /trap` panics, `GET /balloon` grows memory
//! without bound, `GET /huge` answers a 64 MiB body. `POST /notes` and `GET /notes` are a
//! well-behaved counter so tests can see that state survives a rebuild.
//!
//! Checks: `A note says "{text}"` is decided honestly; deciding `The twin spins deciding
//! this` loops forever, so grading's bound per criterion can be tested.

use pome_twin_sdk::{Call, CheckDecl, CheckWorld, Evidence, HostError, Outcome, Params, Response, Router, Twin, Value, json, time};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, Default)]
pub struct Hostile {
    notes: Vec<Note>,
    /// From the seed, so tests can tell two seeds apart.
    greeting: String,
}

#[derive(Serialize, Deserialize, Clone)]
struct Note {
    id: u64,
    text: String,
    at: String,
}

impl Twin for Hostile {
    const NAME: &'static str = "hostile";
    const VERSION: &'static str = "0.1.0";

    fn init(seed: Option<Value>) -> Result<Self, String> {
        let Some(seed) = seed else {
            return Ok(Hostile { notes: Vec::new(), greeting: "hello".into() });
        };
        let greeting = seed
            .get("greeting")
            .and_then(Value::as_str)
            .ok_or("greeting: required string")?
            .to_string();
        if let Some(pad) = seed.get("padding").and_then(Value::as_str) {
            // Large seeds are kept so snapshot/restore cost is real.
            return Ok(Hostile { notes: vec![Note { id: 0, text: pad.to_string(), at: time::now_iso() }], greeting });
        }
        Ok(Hostile { notes: Vec::new(), greeting })
    }

    fn router() -> &'static Router<Self> {
        static R: std::sync::OnceLock<Router<Hostile>> = std::sync::OnceLock::new();
        R.get_or_init(|| {
            Router::new()
                .get("/loop", "hostile.loop", spin)
                .get("/trap", "hostile.trap", trap)
                .get("/balloon", "hostile.balloon", balloon)
                .get("/huge", "hostile.huge", |_, _| Response {
                    status: 200,
                    headers: vec![],
                    body: vec![b'x'; 64 << 20],
                })
                // A write whose answer is over any sane cap: the write must survive a rebuild.
                .post("/notes/huge", "notes.create_huge", |w, call| {
                    let note = Note { id: w.notes.len() as u64 + 1, text: "huge".into(), at: time::now_iso() };
                    w.notes.push(note.clone());
                    call.created("note", note.id, &json!({"id": note.id, "text": note.text}));
                    Response { status: 201, headers: vec![], body: vec![b'x'; 64 << 20] }
                })
                .get("/notes", "notes.list", |w, _| Response::json(200, &json!({"greeting": w.greeting, "notes": w.notes.iter().map(|n| json!({"id": n.id, "text": n.text, "at": n.at})).collect::<Vec<_>>()})))
                .post("/notes", "notes.create", |w, call| {
                    let text = call.req.json_value().ok().and_then(|v| v.get("text").and_then(Value::as_str).map(String::from)).unwrap_or_default();
                    let note = Note { id: w.notes.len() as u64 + 1, text, at: time::now_iso() };
                    w.notes.push(note.clone());
                    call.created("note", note.id, &json!({"id": note.id, "text": note.text}));
                    Response::json(201, &json!({"id": note.id, "text": note.text, "at": note.at}))
                })
        })
    }

    fn unsupported(call: &Call) -> Response {
        Response::json(501, &json!({"error": "unsupported", "path": call.req.path}))
    }

    /// Every form real clients send, so the host's credential reading is tested through it.
    fn credentials() -> Vec<pome_twin_sdk::Credential> {
        use pome_twin_sdk::Credential::*;
        vec![Bearer, TokenScheme, RawAuthorization, BasicUser]
    }

    fn auth_error(_call: &Call) -> Response {
        Response::json(401, &json!({"error": "unauthorized"}))
    }

    fn host_error(err: &HostError) -> Response {
        Response::json(err.kind.status(), &json!({"error": err.message}))
    }

    fn checks() -> Vec<CheckDecl> {
        vec![
            CheckDecl::new("hostile.noted", "A note says \"{text}\"", "final", "positive"),
            CheckDecl::new("hostile.spins", "The twin spins deciding this", "final", "positive"),
        ]
    }

    fn evaluate_check(id: &str, p: &Params, w: &CheckWorld<'_>) -> Result<Outcome, String> {
        match id {
            "hostile.noted" => {
                let notes = w.state["notes"].as_array().cloned().unwrap_or_default();
                Ok(match notes.iter().position(|n| n["text"].as_str() == Some(p["text"].as_str())) {
                    Some(i) => Outcome::new(true, format!("note {} says it", notes[i]["id"]), Evidence::state(format!("notes[{i}]"))),
                    None => Outcome::new(false, format!("none of {} notes says it", notes.len()), Evidence::state("notes")),
                })
            }
            "hostile.spins" => {
                let mut x: u64 = 0;
                loop {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            other => Err(format!("the hostile twin has no check `{other}`")),
        }
    }
}

fn spin(_: &mut Hostile, _: &mut Call) -> Response {
    let mut x: u64 = 0;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

fn trap(_: &mut Hostile, _: &mut Call) -> Response {
    panic!("deliberate trap")
}

fn balloon(_: &mut Hostile, _: &mut Call) -> Response {
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        hoard.push(vec![1u8; 1 << 20]);
        std::hint::black_box(&hoard);
    }
}

pome_twin_sdk::export_twin!(Hostile);
