//! Decides, when the tests are built, whether the PostgreSQL tests run: with
//! `GANTRY_TEST_POSTGRES_URL` set they run; with `GANTRY_REQUIRE` naming `postgres` they run and
//! fail without the URL; otherwise they are reported as ignored, with the reason
//! (`cfg(gantry_postgres_skip)`), never as passed.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(gantry_postgres_skip)");
    println!("cargo::rerun-if-env-changed=GANTRY_TEST_POSTGRES_URL");
    println!("cargo::rerun-if-env-changed=GANTRY_REQUIRE");
    let url = std::env::var("GANTRY_TEST_POSTGRES_URL").is_ok_and(|u| !u.trim().is_empty());
    let required =
        std::env::var("GANTRY_REQUIRE").is_ok_and(|r| r.split(',').any(|m| m.trim() == "postgres"));
    if !url && !required {
        println!("cargo::rustc-cfg=gantry_postgres_skip");
    }
}
