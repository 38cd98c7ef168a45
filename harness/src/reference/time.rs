//! `LocalDateTime.parse(s, ofPattern("yyyy-MM-dd HH:mm:ss"))` with Java's default SMART
//! resolver (semantics §4, "Time details"), written from the semantics, not shared with the
//! admin or the gateway.

use chrono::{Days, NaiveDate, NaiveDateTime, NaiveTime};

/// Parses `s` the way ShenYu's `DateUtils.parseLocalDateTime` does: exactly the shape
/// `dddd-dd-dd dd:dd:dd` (no `T`, no fraction, no zone, nothing around it); month 1–12;
/// day 1–31, where a day past the month's end (29–31) is clamped to its last day; hour 0–23,
/// or `24:00:00` meaning the next day's midnight; minute and second 0–59.
///
/// Years beyond four digits (which Java accepts with a leading `+`) are not modelled: they
/// are reported as parse errors.
pub(crate) fn parse(s: &str) -> Result<NaiveDateTime, String> {
    let err = |why: &str| format!("Text '{s}' could not be parsed: {why}");
    let b = s.as_bytes();
    let shape = b.len() == 19
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b' ',
            13 | 16 => c == b':',
            _ => c.is_ascii_digit(),
        });
    if !shape {
        return Err(err("not yyyy-MM-dd HH:mm:ss"));
    }
    let num = |from: usize, to: usize| -> u32 {
        b[from..to]
            .iter()
            .fold(0, |n, &c| n * 10 + u32::from(c - b'0'))
    };
    let year = i32::try_from(num(0, 4)).map_err(|_| err("year"))?;
    let (month, day) = (num(5, 7), num(8, 10));
    let (hour, minute, second) = (num(11, 13), num(14, 16), num(17, 19));
    if !(1..=12).contains(&month) {
        return Err(err("Invalid value for MonthOfYear"));
    }
    if !(1..=31).contains(&day) {
        return Err(err("Invalid value for DayOfMonth"));
    }
    if minute > 59 {
        return Err(err("Invalid value for MinuteOfHour"));
    }
    if second > 59 {
        return Err(err("Invalid value for SecondOfMinute"));
    }
    let midnight_after = hour == 24 && minute == 0 && second == 0;
    if hour > 23 && !midnight_after {
        return Err(err("Invalid value for HourOfDay"));
    }
    let first = NaiveDate::from_ymd_opt(year, month, 1).ok_or_else(|| err("date"))?;
    let next_month = first
        .checked_add_months(chrono::Months::new(1))
        .ok_or_else(|| err("date"))?;
    let month_days = u32::try_from((next_month - first).num_days()).map_err(|_| err("date"))?;
    let date = first
        .checked_add_days(Days::new(u64::from(day.min(month_days) - 1)))
        .ok_or_else(|| err("date"))?;
    if midnight_after {
        let next = date.succ_opt().ok_or_else(|| err("date"))?;
        return Ok(next.and_time(NaiveTime::MIN));
    }
    let time = NaiveTime::from_hms_opt(hour, minute, second).ok_or_else(|| err("time"))?;
    Ok(date.and_time(time))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        parse(s).unwrap().format("%Y-%m-%d %H:%M:%S").to_string()
    }

    #[test]
    fn plain_dates_parse() {
        assert_eq!(show("2021-01-15 07:08:09"), "2021-01-15 07:08:09");
        assert_eq!(show("2099-12-31 23:59:59"), "2099-12-31 23:59:59");
    }

    #[test]
    fn smart_resolver_clamps_and_rolls() {
        assert_eq!(show("2018-02-30 10:00:00"), "2018-02-28 10:00:00");
        assert_eq!(show("2020-02-31 00:00:00"), "2020-02-29 00:00:00");
        assert_eq!(show("2021-04-31 23:59:59"), "2021-04-30 23:59:59");
        assert_eq!(show("2021-12-31 24:00:00"), "2022-01-01 00:00:00");
    }

    #[test]
    fn bad_texts_are_errors() {
        for s in [
            "2021-01-32 00:00:00",
            "2021-00-10 00:00:00",
            "2021-13-10 00:00:00",
            "2021-01-10 24:00:01",
            "2021-01-10 25:00:00",
            "2021-01-10 10:60:00",
            "2021-01-10 10:00:60",
            "2021-01-10T10:00:00",
            " 2021-01-10 10:00:00",
            "2021-01-10 10:00:00 ",
            "2021-01-10 10:00:00.5",
            "2021-1-10 10:00:00",
            "garbage",
            "",
        ] {
            assert!(parse(s).is_err(), "{s:?} must not parse");
        }
    }
}
