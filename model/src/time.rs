//! ShenYu's date-time text for the `TimeBefore` / `TimeAfter` operators (semantics §4):
//! `yyyy-MM-dd HH:mm:ss`, local time, read as Java's `LocalDateTime.parse` reads it.

use chrono::NaiveDateTime;

/// The current local time as ShenYu writes it (`yyyy-MM-dd HH:mm:ss`): record dates.
pub fn now() -> String {
    chrono::DateTime::<chrono::Local>::from(crate::world::now())
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// `LocalDateTime.parse(s, "yyyy-MM-dd HH:mm:ss")` with Java's default SMART resolver:
/// exactly that shape, nothing around it; a day of 29–31 past the month's end is clamped to
/// the last day (`2018-02-30` → Feb 28), day 32 or more is an error; `24:00:00` is the next
/// day's midnight.
pub fn parse_time(s: &str) -> Result<NaiveDateTime, String> {
    let unparsable =
        |why: &str| format!("text `{s}` could not be parsed as yyyy-MM-dd HH:mm:ss{why}");
    let shape_ok = s.len() == 19
        && s.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            10 => b == b' ',
            13 | 16 => b == b':',
            _ => b.is_ascii_digit(),
        });
    if !shape_ok {
        return Err(unparsable(""));
    }
    let field = |range: std::ops::Range<usize>| -> u32 {
        s[range]
            .parse()
            .expect("the shape check leaves only digits")
    };
    let (year, month, day) = (field(0..4), field(5..7), field(8..10));
    let (hour, minute, second) = (field(11..13), field(14..16), field(17..19));
    let year = i32::try_from(year).expect("four digits fit");
    if !(1..=12).contains(&month) {
        return Err(unparsable(&format!(": invalid month {month}")));
    }
    if !(1..=31).contains(&day) {
        return Err(unparsable(&format!(": invalid day of month {day}")));
    }
    let end_of_day = hour == 24 && minute == 0 && second == 0;
    if (hour > 23 && !end_of_day) || minute > 59 || second > 59 {
        return Err(unparsable(&format!(
            ": invalid time {hour:02}:{minute:02}:{second:02}"
        )));
    }
    let last_day = (28..=31)
        .rev()
        .find(|&d| chrono::NaiveDate::from_ymd_opt(year, month, d).is_some())
        .expect("every month has 28 days");
    let date = chrono::NaiveDate::from_ymd_opt(year, month, day.min(last_day))
        .expect("a clamped day is valid");
    let (date, hour) = if end_of_day {
        (
            date.succ_opt()
                .ok_or_else(|| unparsable(": out of range"))?,
            0,
        )
    } else {
        (date, hour)
    };
    Ok(date
        .and_hms_opt(hour, minute, second)
        .expect("checked above"))
}

#[cfg(test)]
mod tests {
    use chrono::Timelike;
    use rstest::rstest;

    use super::*;

    /// `now()` is the local clock's time to the second, in the very text `parse_time` reads:
    /// formatting the parsed value gives the text back, and it lies between the clock read
    /// (truncated to the second) just before and just after.
    #[test]
    fn now_reads_back() {
        let before = chrono::Local::now().naive_local();
        let text = now();
        let after = chrono::Local::now().naive_local();
        let parsed = parse_time(&text).unwrap();
        assert_eq!(parsed.format("%Y-%m-%d %H:%M:%S").to_string(), text);
        let second = |t: NaiveDateTime| t.with_nanosecond(0).unwrap();
        assert!(
            second(before) <= parsed && parsed <= second(after),
            "{text} is not between {before} and {after}"
        );
    }

    #[rstest]
    #[case("2018-02-30 10:00:00", "2018-02-28T10:00:00")]
    #[case("2020-02-31 00:00:00", "2020-02-29T00:00:00")]
    #[case("2021-04-31 23:59:59", "2021-04-30T23:59:59")]
    #[case("2021-12-31 24:00:00", "2022-01-01T00:00:00")]
    #[case("2021-01-15 07:08:09", "2021-01-15T07:08:09")]
    fn java_smart_date_resolution(#[case] text: &str, #[case] want: &str) {
        let got = parse_time(text).unwrap();
        assert_eq!(got.format("%Y-%m-%dT%H:%M:%S").to_string(), want);
    }

    #[rstest]
    #[case("2021-01-32 00:00:00", "invalid day of month 32")]
    #[case("2021-00-10 00:00:00", "invalid month 0")]
    #[case("2021-13-10 00:00:00", "invalid month 13")]
    #[case("2021-01-10 24:00:01", "invalid time 24:00:01")]
    #[case("2021-01-10 25:00:00", "invalid time")]
    #[case("2021-01-10 10:60:00", "invalid time")]
    #[case("2021-01-10T10:00:00", "yyyy-MM-dd HH:mm:ss")]
    #[case(" 2021-01-10 10:00:00", "yyyy-MM-dd HH:mm:ss")]
    #[case("2021-01-10 10:00:00.5", "yyyy-MM-dd HH:mm:ss")]
    fn java_smart_date_errors(#[case] text: &str, #[case] message: &str) {
        let err = parse_time(text).unwrap_err();
        assert!(err.contains(message), "{text}: {err}");
    }
}
