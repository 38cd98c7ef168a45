//! Decides, when the tests are built, whether the rate limiter's Redis tests run: with
//! `redis-server` on PATH they run; with `GANTRY_REQUIRE` naming `redis` they run and fail
//! without it; otherwise they are reported as ignored, with the reason
//! (`cfg(gantry_redis_skip)`), never as passed.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(gantry_redis_skip)");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-env-changed=GANTRY_REQUIRE");
    let found = std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| dir.join("redis-server").is_file())
    });
    let required =
        std::env::var("GANTRY_REQUIRE").is_ok_and(|r| r.split(',').any(|m| m.trim() == "redis"));
    if !found && !required {
        println!("cargo::rustc-cfg=gantry_redis_skip");
    }
}
