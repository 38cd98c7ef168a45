//! Redis for the cases that ask for it (`components: [redis]`), in any sync mode: Debian's
//! `redis-server` on a free loopback port, with no persistence and its working directory
//! under the topology's directory:
//!
//! `redis-server --port N --bind 127.0.0.1 --save "" --appendonly no --dir <dir>`
//!
//! It is ready when it answers `PING` with `+PONG`. A missing `redis-server` skips the cases
//! that need it ([`skip_reason`]) unless `GANTRY_REQUIRE` names `redis`.

use std::path::{Path, PathBuf};

use super::required;
use crate::Env;
use crate::scenario::ast::Component;

/// Where Debian's `redis-server` package puts the server.
pub(crate) const REDIS_SERVER: &str = "/usr/bin/redis-server";

/// Why Redis cannot run on this machine, if it cannot.
pub(crate) fn unavailable() -> Option<String> {
    (!Path::new(REDIS_SERVER).is_file()).then(|| {
        format!(
            "redis server not available: {REDIS_SERVER} does not exist \
             (install the Debian package redis-server)"
        )
    })
}

/// Why cases asking for `component` are skipped here: its server is missing and
/// `GANTRY_REQUIRE` does not name it. `None` when they run.
pub fn skip_reason(env: &dyn Env, component: Component) -> Option<String> {
    let reason = match component {
        Component::Redis => unavailable()?,
    };
    if required(env, component.name()) {
        None
    } else {
        Some(format!(
            "{reason}; set GANTRY_REQUIRE={component} to make this a failure"
        ))
    }
}

/// The command that runs the server in `dir` on `port`, or why it cannot run.
pub(super) fn command(dir: &Path, port: u16) -> Result<(PathBuf, Vec<String>), String> {
    if let Some(why) = unavailable() {
        return Err(why);
    }
    let args = [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        &dir.display().to_string(),
    ]
    .map(str::to_owned);
    Ok((PathBuf::from(REDIS_SERVER), args.to_vec()))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::options::FakeEnv;

    #[test]
    fn required_redis_never_skips_and_a_skip_says_how_to_require_it() {
        let env = FakeEnv(HashMap::from([("GANTRY_REQUIRE", "zookeeper, Redis")]));
        assert!(required(&env, "redis"));
        assert_eq!(skip_reason(&env, Component::Redis), None);
        let none = FakeEnv(HashMap::new());
        match (unavailable(), skip_reason(&none, Component::Redis)) {
            (None, skip) => assert_eq!(skip, None),
            (Some(why), skip) => assert_eq!(
                skip,
                Some(format!(
                    "{why}; set GANTRY_REQUIRE=redis to make this a failure"
                ))
            ),
        }
    }
}
