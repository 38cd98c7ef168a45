//! `RLIMIT_NOFILE`: raising it for the sockets, and reporting what was found and done.

use serde::Serialize;

/// Descriptors kept free beside the sockets.
pub(super) const FD_MARGIN: u64 = 1024;

/// `RLIMIT_NOFILE` before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FdLimit {
    /// Descriptors wanted (largest count + margin).
    pub needed: u64,
    /// (soft, hard) found; `null` is unlimited.
    pub before: (Option<u64>, Option<u64>),
    /// (soft, hard) after.
    pub after: (Option<u64>, Option<u64>),
    /// What was done.
    pub action: String,
}

/// Raises `RLIMIT_NOFILE` to `needed` if it is lower: the hard limit first when it is lower
/// too (which needs `CAP_SYS_RESOURCE`; a container's root often lacks it), then the soft
/// limit, as far as the hard limit allows.
pub(crate) fn raise_fd_limit(needed: u64) -> FdLimit {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let before = getrlimit(Resource::Nofile);
    let pair = |r: &Rlimit| (r.current, r.maximum);
    let enough = |v: Option<u64>| v.is_none_or(|v| v >= needed);
    let mut action = Vec::new();
    if enough(before.current) {
        action.push("none: the soft limit was enough".to_owned());
    } else {
        let mut hard = before.maximum;
        if !enough(hard) {
            let raised = Rlimit {
                current: Some(needed),
                maximum: Some(needed),
            };
            match setrlimit(Resource::Nofile, raised) {
                Ok(()) => {
                    action.push(format!(
                        "raised the soft and hard limits to {needed} (setrlimit)"
                    ));
                    hard = Some(needed);
                }
                Err(e) => action.push(format!(
                    "the hard limit {} is below {needed} and raising it failed ({e}; \
                     run `ulimit -Hn {needed}` as root with CAP_SYS_RESOURCE first)",
                    hard.unwrap_or(0)
                )),
            }
        }
        let soft = hard.map_or(needed, |h| h.min(needed));
        if getrlimit(Resource::Nofile)
            .current
            .is_some_and(|c| c < soft)
        {
            let raised = Rlimit {
                current: Some(soft),
                maximum: hard,
            };
            action.push(match setrlimit(Resource::Nofile, raised) {
                Ok(()) => format!("raised the soft limit to {soft} (setrlimit)"),
                Err(e) => format!("raising the soft limit to {soft} failed: {e}"),
            });
        }
    }
    FdLimit {
        needed,
        before: pair(&before),
        after: pair(&getrlimit(Resource::Nofile)),
        action: action.join("; "),
    }
}
