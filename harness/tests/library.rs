//! `harness::Gantry` as a user's own `#[tokio::test]` uses it (the README's "gantry as a
//! library"): a route made through the admin is served by the gateway once `converged`
//! returns; an upstream that was not started is refused by name; and `converged` fails when
//! the gateway cannot catch up (stopped) or, running and answering, holds another config
//! (a gateway that drops deletes), so a test built on it cannot pass by accident.

use harness::Gantry;
use harness::scenario::ast::{FaultAction, Target};
use model::SyncMode;

#[tokio::test]
async fn a_route_made_through_the_admin_is_served_once_converged() {
    let gantry = Gantry::builder(SyncMode::Http)
        .upstreams(["alpha", "beta"])
        .start()
        .await
        .expect("the topology starts");
    let admin = gantry.admin().await.expect("login");
    gantry
        .route(&admin, "lib", "/lib/", "beta")
        .await
        .expect("the route is made");
    gantry.converged().await.expect("the gateway catches up");
    let answer = reqwest::get(format!("{}/lib/a", gantry.gateway_url()))
        .await
        .expect("the gateway answers");
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-gantry-upstream"], "beta");

    let e = gantry
        .route(&admin, "nowhere", "/nowhere/", "gamma")
        .await
        .expect_err("gamma was never started");
    assert!(
        e.to_string().contains("no upstream `gamma` was started"),
        "{e}"
    );
}

#[tokio::test]
async fn converged_fails_when_the_gateway_cannot_catch_up() {
    let gantry = Gantry::builder(SyncMode::Websocket)
        .start()
        .await
        .expect("the topology starts");
    gantry.converged().await.expect("converged at start");
    gantry
        .topology()
        .fault(FaultAction::Stop, Target::Gateway(None))
        .await
        .expect("the gateway stops");
    let admin = gantry.admin().await.expect("login");
    gantry
        .route(&admin, "late", "/late/", "alpha")
        .await
        .expect("the admin takes the route");
    let e = gantry
        .converged()
        .await
        .expect_err("a stopped gateway cannot hold the new route");
    assert!(e.to_string().contains("not converged after"), "{e}");
}

/// A live disagreement: the gateway runs and answers, but emulates ShenYu's dropped deletes,
/// so it keeps serving a route the admin deleted. `converged` fails, naming both digests.
#[tokio::test]
async fn converged_fails_when_a_running_gateway_holds_another_config() {
    let gantry = Gantry::builder(SyncMode::Websocket)
        .gateway_args(["--emulate-bug", "drop-deletes"])
        .start()
        .await
        .expect("the topology starts");
    let admin = gantry.admin().await.expect("login");
    let id = gantry
        .route(&admin, "kept", "/kept/", "alpha")
        .await
        .expect("the route is made");
    gantry.converged().await.expect("the creation reaches it");
    assert_eq!(
        admin
            .delete_selectors(&[id])
            .await
            .expect("the admin deletes"),
        1
    );
    let e = gantry
        .converged()
        .await
        .expect_err("a gateway that drops deletes keeps the route");
    let answer = reqwest::get(format!("{}/kept/a", gantry.gateway_url()))
        .await
        .expect("the gateway runs and answers");
    assert_eq!(answer.status(), 200, "the deleted route is still served");
    assert_eq!(answer.headers()["x-gantry-upstream"], "alpha");
    let admin_digest = admin.digest().await.expect("the admin's digest").digest;
    let gateway_digest = gantry
        .gateway()
        .digest()
        .await
        .expect("the gateway's digest")
        .report
        .digest;
    assert_ne!(admin_digest, gateway_digest);
    let message = e.to_string();
    for part in ["not converged after", &admin_digest, &gateway_digest] {
        assert!(message.contains(part), "`{part}` is not in: {message}");
    }
}

/// docs/library.md, "A test of your own": the skeleton as the chapter shows it.
#[tokio::test]
async fn hello_is_served_by_beta() -> Result<(), Box<dyn std::error::Error>> {
    let gantry = Gantry::builder(SyncMode::Websocket)
        .upstreams(["alpha", "beta"])
        .start()
        .await?;
    let admin = gantry.admin().await?;
    gantry.route(&admin, "hello", "/hello/", "beta").await?;
    gantry.converged().await?;
    let answer = reqwest::get(format!("{}/hello/world", gantry.gateway_url())).await?;
    assert_eq!(answer.headers()["x-gantry-upstream"], "beta");
    Ok(())
}

/// docs/library.md, "A fault": a change made while the gateway is down reaches it after a
/// start (its first sync is a full one).
#[tokio::test]
async fn a_route_made_while_the_gateway_is_down_reaches_it_after_a_start()
-> Result<(), Box<dyn std::error::Error>> {
    let gantry = Gantry::builder(SyncMode::Websocket)
        .upstreams(["alpha"])
        .start()
        .await?;
    let admin = gantry.admin().await?;
    let gateway = Target::Gateway(None);
    gantry.topology().fault(FaultAction::Kill, gateway).await?;
    gantry.route(&admin, "late", "/late/", "alpha").await?;
    gantry.topology().fault(FaultAction::Start, gateway).await?;
    gantry.converged().await?;
    let answer = reqwest::get(format!("{}/late/a", gantry.gateway_url())).await?;
    assert_eq!(answer.headers()["x-gantry-upstream"], "alpha");
    Ok(())
}

/// Every Rust block of docs/library.md is compiled: each of its paragraphs (lines between
/// blank lines, comments included) is found verbatim in this file or in an example of
/// `harness/examples/`, which `cargo build --workspace --all-targets` builds.
#[test]
fn the_library_chapter_s_code_is_compiled() {
    let root = std::path::Path::new(harness::WORKSPACE_DIR);
    let doc = std::fs::read_to_string(root.join("docs/library.md")).expect("docs/library.md");
    let this = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/library.rs");
    let mut sources = vec![std::fs::read_to_string(this).expect("this file")];
    for entry in std::fs::read_dir(root.join("harness/examples")).expect("the examples") {
        sources.push(std::fs::read_to_string(entry.expect("an example").path()).expect("read"));
    }
    let missing = missing_paragraphs(&doc, &sources);
    assert!(
        missing.is_empty(),
        "docs/library.md has code found in no compiled file (harness/tests/library.rs, \
         harness/examples/*.rs): copy it there verbatim:\n{}",
        missing.join("\n---\n")
    );
    // The check itself: a block that is nowhere (made here, so that it is not in this file) is
    // caught.
    let wrong = format!(
        "```rust\nlet gantry = Gantry::builder(SyncMode::{});\n```\n",
        "None"
    );
    assert_eq!(missing_paragraphs(&wrong, &sources).len(), 1);
    assert!(
        doc.matches("```rust").count() >= 4,
        "the chapter lost its code"
    );
}

/// The paragraphs of the ```rust blocks of `doc` that are in none of `sources`.
fn missing_paragraphs(doc: &str, sources: &[String]) -> Vec<String> {
    let mut missing = Vec::new();
    let mut rest = doc;
    while let Some(start) = rest.find("```rust\n") {
        let body = &rest[start + "```rust\n".len()..];
        let end = body.find("```").expect("a closed code block");
        for paragraph in body[..end].split("\n\n") {
            let paragraph = paragraph.trim_matches('\n');
            if !paragraph.is_empty() && !sources.iter().any(|s| s.contains(paragraph)) {
                missing.push(paragraph.to_owned());
            }
        }
        rest = &body[end..];
    }
    missing
}
