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
