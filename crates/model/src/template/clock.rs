//! `strftime_now(format)`: the one clock a chat template reads (Llama 3.x prints "Today
//! Date: 04 Dec 2026"). The render's time is an input, so that a render can be repeated and
//! compared byte for byte; Python's `strftime` directives are implemented here over a civil
//! date (C locale, as transformers runs them), with no time-zone database.

use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// A moment as seconds since the Unix epoch, read as local time = UTC (no time zone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Moment(pub i64);

impl Moment {
    /// The system clock's now (a time before the epoch reads as the epoch).
    pub fn now() -> Moment {
        let secs = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        Moment(i64::try_from(secs).unwrap_or(i64::MAX))
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS` (or `YYYY-MM-DD`, or with a space for the `T`).
    pub fn parse(text: &str) -> Option<Moment> {
        let (date, time) = match text.split_once(['T', ' ']) {
            Some((d, t)) => (d, t),
            None => (text, "00:00:00"),
        };
        let mut d = date.splitn(3, '-');
        let year: i64 = d.next()?.parse().ok()?;
        let month: u32 = d.next()?.parse().ok()?;
        let day: u32 = d.next()?.parse().ok()?;
        let mut t = time.splitn(3, ':');
        let hour: i64 = t.next()?.parse().ok()?;
        let minute: i64 = t.next().unwrap_or("0").parse().ok()?;
        let second: i64 = t.next().unwrap_or("0").parse().ok()?;
        let valid = (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(year, month)
            && (0..24).contains(&hour)
            && (0..60).contains(&minute)
            && (0..60).contains(&second)
            && (1..=9999).contains(&year);
        if !valid {
            return None;
        }
        let days = days_from_civil(year, month, day);
        Some(Moment(days * 86_400 + hour * 3_600 + minute * 60 + second))
    }

    /// Python's `datetime.strftime(format)` for this moment (C locale).
    pub fn strftime(self, format: &str) -> String {
        let days = self.0.div_euclid(86_400);
        let secs = self.0.rem_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        let (hour, minute, second) = (secs / 3_600, secs / 60 % 60, secs % 60);
        // 1970-01-01 was a Thursday; Monday = 0 as Python's weekday().
        let weekday = (days + 3).rem_euclid(7) as usize;
        let yday = days - days_from_civil(year, 1, 1) + 1;
        let mut out = String::new();
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let Some(d) = chars.next() else {
                out.push('%');
                break;
            };
            let _ = match d {
                'Y' => write!(out, "{year}"),
                'y' => write!(out, "{:02}", year % 100),
                'm' => write!(out, "{month:02}"),
                'd' => write!(out, "{day:02}"),
                'e' => write!(out, "{day:2}"),
                '-' => match chars.next() {
                    // glibc's "no padding" flag, which Python passes through on Linux.
                    Some('d') => write!(out, "{day}"),
                    Some('m') => write!(out, "{month}"),
                    Some('H') => write!(out, "{hour}"),
                    Some('I') => write!(out, "{}", twelve(hour)),
                    Some('M') => write!(out, "{minute}"),
                    Some('S') => write!(out, "{second}"),
                    Some('j') => write!(out, "{yday}"),
                    Some(other) => write!(out, "%-{other}"),
                    None => write!(out, "%-"),
                },
                'H' => write!(out, "{hour:02}"),
                'I' => write!(out, "{:02}", twelve(hour)),
                'M' => write!(out, "{minute:02}"),
                'S' => write!(out, "{second:02}"),
                'p' => write!(out, "{}", if hour < 12 { "AM" } else { "PM" }),
                'b' | 'h' => write!(out, "{}", &MONTHS[month as usize - 1][..3]),
                'B' => write!(out, "{}", MONTHS[month as usize - 1]),
                'a' => write!(out, "{}", &DAYS[weekday][..3]),
                'A' => write!(out, "{}", DAYS[weekday]),
                'w' => write!(out, "{}", (weekday + 1) % 7),
                'u' => write!(out, "{}", weekday + 1),
                'j' => write!(out, "{yday:03}"),
                'F' => write!(out, "{year}-{month:02}-{day:02}"),
                'T' => write!(out, "{hour:02}:{minute:02}:{second:02}"),
                'R' => write!(out, "{hour:02}:{minute:02}"),
                'D' => write!(out, "{month:02}/{day:02}/{:02}", year % 100),
                'c' => write!(
                    out,
                    "{} {} {day:2} {hour:02}:{minute:02}:{second:02} {year}",
                    &DAYS[weekday][..3],
                    &MONTHS[month as usize - 1][..3]
                ),
                'x' => write!(out, "{month:02}/{day:02}/{:02}", year % 100),
                'X' => write!(out, "{hour:02}:{minute:02}:{second:02}"),
                'Z' => Ok(()),
                'z' => Ok(()),
                '%' => write!(out, "%"),
                'n' => out.write_char('\n'),
                't' => write!(out, "\t"),
                other => write!(out, "%{other}"),
            };
        }
        out
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] =
    ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

fn twelve(hour: i64) -> i64 {
    match hour % 12 {
        0 => 12,
        h => h,
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_python_strftime() {
        let m = Moment::parse("2026-12-04T12:00:00").unwrap();
        assert_eq!(m.strftime("%d %b %Y"), "04 Dec 2026");
        assert_eq!(
            m.strftime("%A, %B %-d, %Y %H:%M:%S %p %j"),
            "Friday, December 4, 2026 12:00:00 PM 338"
        );
        assert_eq!(Moment::parse("2024-02-29").unwrap().strftime("%Y-%m-%d %a"), "2024-02-29 Thu");
        assert_eq!(Moment(0).strftime("%c"), "Thu Jan  1 00:00:00 1970");
        assert_eq!(Moment::parse("2026-02-30T00:00:00"), None);
    }
}
