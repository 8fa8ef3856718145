//! Diagnostic, not a specification: whether a write's cost stays flat while one sandbox's
//! world grows to hundreds of thousands of objects (issue #36, item 1: a store serialises a
//! sandbox's calls, so one slow call delays every call queued behind it). It prints figures
//! and asserts nothing about time. Each call is timed twice: on the wall clock (what a queue
//! behind it waits) and on the thread's CPU clock (the twin's own work: a machine shared with
//! other work preempts a `nice`d test for whole scheduler ticks of about 4 ms):
//! `nice -n 19 cargo test --release -p twin-stripe -- --ignored --nocapture write_cost_stays_flat_as_the_world_grows`
//! (`POME_STRIPE_CALLS` sets the calls of each phase, 300,000 by default).

use std::time::{Duration, Instant};

use pome_twin_sdk::{Call, Method, Request, Twin};

use crate::World;

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

unsafe extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// The calling thread's CPU time (Linux's `CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu() -> Duration {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid timespec the call writes.
    let rc = unsafe { clock_gettime(3, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.sec as u64, ts.nsec as u32)
}

/// One request as the host hands it over (form body, content type), dispatched and its
/// tape rows read; its wall time and CPU time.
fn timed(w: &mut World, path: &str, body: &[u8]) -> (Duration, Duration) {
    let mut req = Request::new(Method::Post, path);
    req.headers.push(("content-type".into(), "application/x-www-form-urlencoded".into()));
    req.body = body.to_vec();
    let cpu = thread_cpu();
    let t = Instant::now();
    let mut c = Call::new(req);
    let r = World::router().dispatch(w, &mut c);
    let rows: usize = c.changes.iter().map(|ch| ch.before.as_ref().map_or(0, String::len) + ch.after.as_ref().map_or(0, String::len)).sum();
    std::hint::black_box(rows);
    drop(c);
    let d = t.elapsed();
    let c = thread_cpu() - cpu;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    (d, c)
}

fn report(phase: &str, both: &[(Duration, Duration)], offset: usize) {
    let wall: Vec<Duration> = both.iter().map(|t| t.0).collect();
    let cpu: Vec<Duration> = both.iter().map(|t| t.1).collect();
    println!("{phase}: {} calls", both.len());
    table("wall clock", &wall, offset);
    table("thread CPU time", &cpu, offset);
}

fn table(clock: &str, times: &[Duration], offset: usize) {
    const WINDOW: usize = 50_000;
    let ms = Duration::from_millis(1);
    let ms5 = Duration::from_millis(5);
    println!("  {clock}:");
    println!("  {:>15} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9}", "calls", ">1 ms", ">5 ms", "p50 µs", "p99 µs", "p99.9 µs", "max µs");
    for (k, win) in times.chunks(WINDOW).enumerate() {
        let mut sorted = win.to_vec();
        sorted.sort_unstable();
        let at = |q: f64| sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)].as_secs_f64() * 1e6;
        let over1 = win.iter().filter(|d| **d > ms).count();
        let over5 = win.iter().filter(|d| **d > ms5).count();
        let (a, b) = (k * WINDOW, k * WINDOW + win.len());
        println!("  {:>7}-{:<7} {over1:>8} {over5:>8} {:>9.1} {:>9.1} {:>9.1} {:>9.1}", a, b, at(0.5), at(0.99), at(0.999), at(1.0));
    }
    let slow: Vec<usize> = times.iter().enumerate().filter(|(_, d)| **d > ms).map(|(i, _)| i).collect();
    let shown: Vec<String> = slow.iter().take(60).map(|i| format!("{}({:.1}ms)", i + offset, times[*i].as_secs_f64() * 1e3)).collect();
    println!("  slow calls (> 1 ms), first 60 of {}: {}", slow.len(), shown.join(" "));
    let mut gaps: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    for pair in slow.windows(2) {
        *gaps.entry(pair[1] - pair[0]).or_default() += 1;
    }
    let mut common: Vec<(usize, usize)> = gaps.into_iter().collect();
    common.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let common: Vec<String> = common.iter().take(8).map(|(gap, n)| format!("{gap}×{n}")).collect();
    println!("  gaps between slow calls (gap×count, most common first): {}", common.join(" "));
}

#[test]
#[ignore]
fn write_cost_stays_flat_as_the_world_grows() {
    let n: usize = std::env::var("POME_STRIPE_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(300_000);
    let mut w = World::init(None).unwrap();
    let pay = b"amount=2000&currency=usd&payment_method=pm_card_visa&confirm=true";
    let times: Vec<(Duration, Duration)> = (0..n).map(|_| timed(&mut w, "/v1/payment_intents", pay)).collect();
    report("POST /v1/payment_intents (create + confirm)", &times, 0);
    println!("  world: {} objects", w.objects.len());
    let customer = b"email=agent@example.com&name=Bench+Customer";
    let times: Vec<(Duration, Duration)> = (0..n).map(|_| timed(&mut w, "/v1/customers", customer)).collect();
    report("POST /v1/customers (same world, after the payments)", &times, n);
    println!("  world: {} objects", w.objects.len());
}

fn customer(w: &mut World) {
    let mut c = Call::new(Request::new(Method::Post, "/v1/customers"));
    assert_eq!(World::router().dispatch(w, &mut c).status, 200);
}

fn event_status(w: &mut World, id: &str) -> u16 {
    crate::tests::call(w, Method::Get, &format!("/v1/events/{id}"), &[]).0.status
}

#[test]
fn a_forgotten_event_is_gone_at_once_and_leaves_the_map_over_the_next_writes() {
    let mut w = World::init(None).unwrap();
    let batch = crate::EVENTS_KEPT / 10;
    for _ in 0..crate::EVENTS_KEPT + batch - 1 {
        customer(&mut w);
    }
    let events: Vec<String> = w.order["event"].iter().cloned().collect();
    assert_eq!(events.len(), crate::EVENTS_KEPT + batch - 1);
    // The next event makes a batch: the oldest thousand are forgotten, all of them at once.
    customer(&mut w);
    for (id, status) in [(&events[0], 404), (&events[batch - 1], 404), (&events[batch], 200)] {
        assert_eq!(event_status(&mut w, id), status, "{id}");
    }
    assert_eq!(w.order["event"].len(), crate::EVENTS_KEPT);
    assert_eq!(w.objects.len(), w.order["customer"].len() + crate::EVENTS_KEPT);
    assert_eq!(w.objects.values().filter(|o| &*o.kind == "event").count(), crate::EVENTS_KEPT);
    // A snapshot is the same bytes whether the forgotten events have left the map or not.
    let bytes = postcard::to_stdvec(&w).unwrap();
    let mut tidied = w.clone();
    for _ in 0..batch {
        tidied.objects.tidy();
    }
    assert_eq!(postcard::to_stdvec(&tidied).unwrap(), bytes);
    assert_eq!(tidied, w);
    // A restored world numbers its events in their order again: its next batch forgets the
    // next oldest thousand, as the world it was taken from does.
    let mut back: World = postcard::from_bytes(&bytes).unwrap();
    assert_eq!(back, w);
    for world in [&mut back, &mut w] {
        for _ in 0..batch {
            customer(world);
        }
        for (id, status) in [(&events[batch], 404), (&events[2 * batch - 1], 404), (&events[2 * batch], 200)] {
            assert_eq!(event_status(world, id), status, "{id}");
        }
        assert_eq!(world.objects.values().filter(|o| &*o.kind == "event").count(), crate::EVENTS_KEPT);
    }
    assert_eq!(back.order, w.order);
}

#[test]
fn ids_kept_in_chunks_read_and_serialise_as_the_plain_list_they_are() {
    let all: Vec<String> = (0..10_000).map(|i| format!("id_{i}")).collect();
    let mut ids = crate::store::Ids::default();
    for id in &all {
        ids.push(id.clone());
    }
    assert_eq!(ids.len(), all.len());
    assert!(ids.iter().eq(all.iter()));
    assert!(ids.iter().rev().eq(all.iter().rev()));
    assert_eq!(postcard::to_stdvec(&ids).unwrap(), postcard::to_stdvec(&all).unwrap());
    assert_eq!(serde_json::to_string(&ids).unwrap(), serde_json::to_string(&all).unwrap());
    // Taken from the front across chunk boundaries, and pushed after.
    let mut rest = all.clone();
    for n in [1, 4095, 3000, 2000] {
        let taken = ids.take_front(n);
        assert_eq!(taken, rest.drain(..n).collect::<Vec<_>>());
        assert_eq!(ids.len(), rest.len());
        assert!(ids.iter().eq(rest.iter()));
        assert!(ids.iter().rev().eq(rest.iter().rev()));
    }
    for i in 0..5000 {
        ids.push(format!("more_{i}"));
        rest.push(format!("more_{i}"));
    }
    assert!(ids.iter().eq(rest.iter()));
    assert_eq!(ids.last(), rest.last());
    let back: crate::store::Ids = postcard::from_bytes(&postcard::to_stdvec(&ids).unwrap()).unwrap();
    assert_eq!(back, ids);
    ids.retain(|id| !id.ends_with('7'));
    rest.retain(|id| !id.ends_with('7'));
    assert!(ids.iter().eq(rest.iter()));
    assert_eq!(ids.clone().into_iter().collect::<Vec<_>>(), rest);
    assert_eq!(ids.take_front(usize::MAX), rest);
    assert!(ids.is_empty() && ids.last().is_none() && ids.iter().next().is_none());
    ids.push("again".into());
    assert_eq!(ids.iter().collect::<Vec<_>>(), ["again"]);
}

#[test]
fn a_worlds_objects_spread_over_every_shard_on_every_target() {
    // The shard is chosen in 64-bit arithmetic of the id's text alone, so this native test
    // speaks for wasm32 too (where a shard once taken from FxHasher's 32-bit state put every
    // object in one map, and its growth held a payment for tens of milliseconds).
    let mut w = World::init(None).unwrap();
    let pay = b"amount=2000&currency=usd&payment_method=pm_card_visa&confirm=true";
    for _ in 0..20_000 {
        timed(&mut w, "/v1/payment_intents", pay);
    }
    let sizes = w.objects.shard_sizes();
    let total: usize = sizes.iter().sum();
    let mean = total / sizes.len();
    assert!(total >= 40_000, "payments make objects besides events: {total}");
    let (least, most) = (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap());
    assert!(least > 0 && most <= 2 * mean, "{total} objects over {} shards: from {least} to {most} a shard", sizes.len());
}
