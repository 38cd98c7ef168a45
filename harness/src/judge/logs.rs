//! The runner's log check (not a check kind of the table): every WARN and ERROR line an admin
//! or gateway logged during a case must be declared by the case's `expectLogs`, and every
//! declaration not `optional` must match a line. A pure verdict over the lines read, so it is
//! tested by feeding it logs.

use model::SyncMode;

use crate::scenario::ast::{ExpectLog, LogLevel, LogRole};

/// How many distinct undeclared lines a failure lists (the rest are counted).
const LISTED: usize = 10;

/// How many characters of a line a failure quotes.
const QUOTED: usize = 300;

/// A WARN or ERROR line of a service log: its level and its text from the level on (the
/// timestamp cut off, so equal events compare equal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogLine {
    /// `WARN` or `ERROR`.
    pub(crate) level: LogLevel,
    /// `WARN admin::sync::websocket: websocket sync session failed error=...`.
    pub(crate) text: String,
}

/// The WARN and ERROR lines of `log` (tracing's fmt output:
/// `<timestamp> <LEVEL> <target>: <message> <fields>`; colour codes are ignored). Lines that
/// do not start so (a panic's message, a multi-line field's continuation) are not events.
pub(crate) fn warnings(log: &str) -> Vec<LogLine> {
    log.lines()
        .filter_map(|line| {
            let line = strip_ansi(line);
            let (_timestamp, rest) = line.trim().split_once(char::is_whitespace)?;
            let rest = rest.trim_start();
            let level = [LogLevel::Warn, LogLevel::Error].into_iter().find(|l| {
                rest.strip_prefix(l.token())
                    .is_some_and(|r| r.starts_with(' '))
            })?;
            Some(LogLine {
                level,
                text: rest.trim_end().to_owned(),
            })
        })
        .collect()
}

/// `line` without ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The lines one service logged during the case.
#[derive(Debug)]
pub(crate) struct ServiceLog {
    /// Admin or gateway.
    pub(crate) role: LogRole,
    /// Its index among its role's services.
    pub(crate) index: usize,
    /// How failures name it: `gateway`, or `gateway[1]` in a topology of several.
    pub(crate) name: String,
    /// Its WARN and ERROR lines, in order.
    pub(crate) lines: Vec<LogLine>,
}

/// Whether `declared` covers `line` of `log`.
fn matches(declared: &ExpectLog, mode: SyncMode, log: &ServiceLog, line: &LogLine) -> bool {
    declared.applies_in(mode)
        && declared.service.covers(log.role, log.index)
        && declared.level == line.level
        && line.text.contains(&declared.contains)
}

/// What the log check found wrong (empty: it passed): each distinct undeclared line, naming
/// its service and quoting it (with how often it came), then each declaration not `optional`
/// that matched no line.
pub(crate) fn judge(logs: &[ServiceLog], declared: &[ExpectLog], mode: SyncMode) -> Vec<String> {
    let mut undeclared: Vec<(&str, &LogLine, usize)> = Vec::new();
    let mut used = vec![false; declared.len()];
    for log in logs {
        for line in &log.lines {
            let mut covered = false;
            for (i, d) in declared.iter().enumerate() {
                if matches(d, mode, log, line) {
                    used[i] = true;
                    covered = true;
                }
            }
            if covered {
                continue;
            }
            match undeclared
                .iter_mut()
                .find(|(name, l, _)| *name == log.name && *l == line)
            {
                Some((_, _, times)) => *times += 1,
                None => undeclared.push((&log.name, line, 1)),
            }
        }
    }
    let mut failures: Vec<String> = undeclared
        .iter()
        .take(LISTED)
        .map(|(name, line, times)| {
            let times = if *times > 1 {
                format!(" ({times} times)")
            } else {
                String::new()
            };
            format!(
                "{name} logged an undeclared {} line{times}: {}",
                line.level.token(),
                quote(&line.text)
            )
        })
        .collect();
    if undeclared.len() > LISTED {
        failures.push(format!(
            "and {} more distinct undeclared lines",
            undeclared.len() - LISTED
        ));
    }
    for (i, d) in declared.iter().enumerate() {
        if !used[i] && !d.optional && d.applies_in(mode) {
            failures.push(format!(
                "expectLogs[{i}] ({} {} containing {:?}) matched no line (`optional: true` \
                 if it may not come)",
                d.service,
                d.level.token(),
                d.contains
            ));
        }
    }
    failures
}

/// `text`, cut to [`QUOTED`] characters.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTED) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
2026-12-06T04:20:51.457170Z  WARN admin::auth: the default password
2026-12-06T04:20:51.583469Z  INFO admin::auth: sync user set user=gantry-sync
2026-12-06T04:20:52.072021Z ERROR admin::db: write refused error=disk full
thread 'main' panicked at admin/src/main.rs:1:1: WARN not an event
2026-12-06T04:20:53.072021Z  \u{1b}[33mWARN\u{1b}[0m admin::auth: the default password
";

    fn admin(index: usize, log: &str) -> ServiceLog {
        ServiceLog {
            role: LogRole::Admin,
            index,
            name: format!("admin[{index}]"),
            lines: warnings(log),
        }
    }

    fn declare(yaml: &str) -> Vec<ExpectLog> {
        serde_norway::from_str(yaml).unwrap()
    }

    #[test]
    fn warn_and_error_lines_are_read_without_their_timestamp_and_colours() {
        let lines = warnings(LOG);
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "WARN admin::auth: the default password",
                "ERROR admin::db: write refused error=disk full",
                "WARN admin::auth: the default password",
            ]
        );
        assert_eq!(lines[1].level, LogLevel::Error);
    }

    #[test]
    fn an_undeclared_line_fails_naming_its_service_and_text() {
        let failures = judge(&[admin(0, LOG)], &[], SyncMode::Websocket);
        assert_eq!(
            failures,
            [
                "admin[0] logged an undeclared WARN line (2 times): WARN admin::auth: the default password",
                "admin[0] logged an undeclared ERROR line: ERROR admin::db: write refused error=disk full",
            ]
        );
    }

    #[test]
    fn declared_lines_pass_by_service_level_and_text() {
        let declared = declare(
            "[{ service: admin, level: warn, contains: default password },
              { service: admin, level: error, contains: disk full }]",
        );
        assert!(
            judge(
                &[admin(0, LOG), admin(1, LOG)],
                &declared,
                SyncMode::Websocket
            )
            .is_empty()
        );
        // The wrong level or another admin does not cover the line.
        let declared = declare(
            "[{ service: 'admin[1]', level: warn, contains: default password },
              { service: admin, level: warn, contains: disk full, optional: true }]",
        );
        let failures = judge(
            &[admin(0, LOG), admin(1, LOG)],
            &declared,
            SyncMode::Websocket,
        );
        assert_eq!(failures.len(), 3, "{failures:?}");
        assert!(failures[0].starts_with("admin[0] logged an undeclared WARN"));
        assert!(failures[1..].iter().all(|f| f.contains("undeclared ERROR")));
    }

    #[test]
    fn a_declaration_for_other_modes_covers_nothing_and_is_not_looked_for() {
        let declared = declare(
            "[{ service: admin, level: warn, contains: default password, modes: [http] },
              { service: admin, level: error, contains: disk full, modes: [websocket, http] },
              { service: admin, level: error, contains: never, modes: [etcd] }]",
        );
        // In http every line is declared, and the etcd-only declaration is not looked for.
        assert!(judge(&[admin(0, LOG)], &declared, SyncMode::Http).is_empty());
        // In websocket the http-only declaration covers nothing: its line is undeclared.
        let failures = judge(&[admin(0, LOG)], &declared, SyncMode::Websocket);
        assert_eq!(
            failures,
            [
                "admin[0] logged an undeclared WARN line (2 times): WARN admin::auth: the default password"
            ]
        );
        // In etcd the etcd-only declaration is looked for, and matched nothing.
        let failures = judge(&[admin(0, LOG)], &declared, SyncMode::Etcd);
        assert_eq!(failures.len(), 3, "{failures:?}");
        assert!(failures[2].starts_with("expectLogs[2]"), "{failures:?}");
    }

    #[test]
    fn a_declaration_that_matched_nothing_fails_unless_optional() {
        let declared = declare(
            "[{ service: gateway, level: error, contains: lost },
              { service: gateway, level: warn, contains: maybe, optional: true }]",
        );
        assert_eq!(
            judge(&[], &declared, SyncMode::Websocket),
            [
                "expectLogs[0] (gateway ERROR containing \"lost\") matched no line (`optional: true` if it may not come)"
            ]
        );
    }

    #[test]
    fn many_distinct_lines_are_listed_up_to_a_bound() {
        let log: String = (0..15)
            .map(|i| format!("2026-12-06T04:20:51Z ERROR x: failure {i}\n"))
            .collect();
        let failures = judge(&[admin(0, &log)], &[], SyncMode::Websocket);
        assert_eq!(failures.len(), LISTED + 1);
        assert_eq!(failures[LISTED], "and 5 more distinct undeclared lines");
    }
}
