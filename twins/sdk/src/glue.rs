//! The WIT glue: keeps the world between calls and translates WIT types to SDK types.
//! Used only through [`crate::export_twin!`].

use std::any::Any;
use std::cell::RefCell;

use crate::call::Call;
use crate::http::{Auth, HostError, HostErrorKind, Method, Request, Response};
use crate::Twin;

pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit/v0.3",
        world: "twin-world",
        pub_export_macro: true,
        export_macro_name: "__export_guest",
        default_bindings_module: "pome_twin_sdk::glue::bindings",
    });
}

use bindings::exports::pome::twin::twin as wit;
use bindings::pome::twin::{outbound, tape};

thread_local! {
    // One twin per component, so one world per instance. `Any` lets the generic glue
    // functions below share it without a static per type.
    static WORLD: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

fn with_world<T: Twin, R>(f: impl FnOnce(&mut T) -> R) -> R {
    WORLD.with(|w| {
        let mut w = w.borrow_mut();
        let world = w
            .as_mut()
            .and_then(|b| b.downcast_mut::<T>())
            .expect("the host calls init or restore before anything else");
        f(world)
    })
}

fn set_world<T: Twin>(world: T) {
    WORLD.with(|w| *w.borrow_mut() = Some(Box::new(world)));
}

pub fn describe<T: Twin>() -> String {
    crate::describe::of::<T>().to_json()
}

pub fn init<T: Twin>(seed: String) -> Result<(), String> {
    // The seed's parse and the world built from it come from dlmalloc (see `alloc`).
    crate::alloc::building(|| {
        let seed = if seed.trim().is_empty() {
            None
        } else {
            Some(serde_json::from_str(&seed).map_err(|e| format!("seed is not valid JSON: {e}"))?)
        };
        // A world written by `export-seed` boots as exactly that world; any other seed is the
        // twin's own to read.
        let world = match seed.as_ref().and_then(crate::world_seed::read::<T>) {
            Some(world) => world?,
            None => T::init(seed)?,
        };
        set_world(world);
        Ok(())
    })
}

pub fn handle<T: Twin>(req: wit::HttpRequest) -> wit::HttpResponse {
    crate::alloc::serve();
    let mut call = Call::new(Request {
        method: Method::parse(&req.method),
        path: req.path,
        query: req.query,
        headers: req.headers,
        body: req.body,
        base_url: req.base_url,
        auth: match req.auth {
            wit::Auth::Agent => Auth::Agent,
            wit::Auth::Missing => Auth::Missing,
            wit::Auth::Invalid => Auth::Invalid,
        },
    });
    let response = if call.req.auth == Auth::Agent || T::serves_without_auth(&call.req) {
        with_world::<T, _>(|world| T::router().dispatch(world, &mut call))
    } else {
        T::auth_error(&call)
    };
    if let Some(action) = &call.action {
        tape::set_action(action);
    }
    if call.unsupported {
        tape::mark_unsupported();
    }
    for c in &call.changes {
        tape::record_change(&c.entity, &c.id, c.before.as_deref(), c.after.as_deref());
    }
    for d in std::mem::take(&mut call.deliveries) {
        outbound::deliver(&outbound::Delivery { url: d.url, method: d.method, headers: d.headers, body: d.body, event: d.event });
    }
    to_wit(response)
}

pub fn render_error<T: Twin>(err: wit::HostError) -> wit::HttpResponse {
    let kind = match err.kind {
        wit::HostErrorKind::PayloadTooLarge => HostErrorKind::PayloadTooLarge,
        wit::HostErrorKind::TapeFull => HostErrorKind::TapeFull,
        wit::HostErrorKind::TwinFailed => HostErrorKind::TwinFailed,
        wit::HostErrorKind::RateLimited => HostErrorKind::RateLimited,
    };
    to_wit(T::host_error(&HostError { kind, message: err.message }))
}

pub fn state<T: Twin>() -> String {
    with_world::<T, _>(|world| world.state().to_string())
}

pub fn snapshot<T: Twin>() -> Vec<u8> {
    with_world::<T, _>(|world| postcard::to_stdvec(world).expect("a twin world serialises"))
}

pub fn restore<T: Twin>(bytes: Vec<u8>) -> Result<(), String> {
    // The world comes from dlmalloc (see `alloc`): an idle sandbox holds no pool arena.
    crate::alloc::building(|| {
        let world: T = postcard::from_bytes(&bytes).map_err(|e| format!("snapshot does not decode: {e}"))?;
        set_world(world);
        Ok(())
    })
}

pub fn export_seed<T: Twin>() -> Result<String, String> {
    with_world::<T, _>(|world| world.export_seed())
}

pub fn evaluate_checks<T: Twin>(world: wit::CheckWorld, calls: Vec<wit::CheckCall>) -> Vec<Result<wit::CheckOutcome, String>> {
    let parse = |what: &str, text: &str| -> Result<serde_json::Value, String> {
        serde_json::from_str(text).map_err(|e| format!("the host passed a {what} that is not JSON: {e}"))
    };
    let inputs = parse("seed state", &world.seed).and_then(|seed| {
        let state = parse("state", &world.state)?;
        let tape: Vec<crate::TapeRow> =
            serde_json::from_str(&world.tape).map_err(|e| format!("the host passed a tape this twin cannot read: {e}"))?;
        Ok((seed, state, tape))
    });
    let (seed, state, tape) = match inputs {
        Ok(i) => i,
        Err(e) => return calls.iter().map(|_| Err(e.clone())).collect(),
    };
    let w = crate::CheckWorld { seed: &seed, state: &state, tape: &tape };
    calls
        .into_iter()
        .map(|c| {
            let params: crate::Params = c.params.into_iter().collect();
            T::evaluate_check(&c.id, &params, &w).map(|o| wit::CheckOutcome {
                holds: o.holds,
                reason: o.reason,
                evidence: match o.evidence {
                    crate::Evidence::None => wit::Evidence::None,
                    crate::Evidence::State(p) => wit::Evidence::State(p),
                    crate::Evidence::Tape(seq) => wit::Evidence::Tape(seq),
                },
            })
        })
        .collect()
}

fn to_wit(r: Response) -> wit::HttpResponse {
    wit::HttpResponse { status: r.status, headers: r.headers, body: r.body }
}
