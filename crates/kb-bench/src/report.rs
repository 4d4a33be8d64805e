//! Formatting for the human-readable report: numbers with their units, aligned rows.

/// `1234567` → `1,234,567`.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (position, digit) in digits.chars().enumerate() {
        if position > 0 && (digits.len() - position).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A latency in microseconds, with its unit.
pub fn micros(value_us: f64) -> String {
    format!("{} µs", thousands(value_us.round() as u64))
}

/// A throughput, with its unit.
pub fn per_second(value: f64, unit: &str) -> String {
    format!("{} {unit}/s", thousands(value.round() as u64))
}

pub fn seconds(value_s: f64) -> String {
    format!("{value_s:.2} s")
}

pub fn percent(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

pub fn mebibytes_from_kib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

pub fn mebibytes(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

pub fn yes_no(passed: bool) -> &'static str {
    if passed { "PASS" } else { "MISS" }
}

/// Prints one row of a three-column table: a label and two values.
pub fn row(label: &str, left: &str, right: &str) {
    println!("  {label:<34} {left:>22}   {right:>22}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(micros(412.4), "412 µs");
    }
}
