//! Numbers as text: integers, and floats as Python spells them (the shortest decimal that
//! round-trips, laid out as `repr`).

use std::fmt::Write as _;

pub(super) fn write_int<T: std::fmt::Display>(out: &mut String, value: T) {
    push_fmt(out, format_args!("{value}"));
}

/// Formats into a `String`, which cannot fail: `fmt::Write for String` only ever returns
/// `Ok`, so there is no error to propagate.
pub(super) fn push_fmt(out: &mut String, args: std::fmt::Arguments<'_>) {
    let _infallible = out.write_fmt(args);
}

pub(super) fn write_f32(out: &mut String, value: f32) {
    if !value.is_finite() || value == 0.0 {
        write_special(out, f64::from(value));
        return;
    }
    // Python's type_checkers.ToShortestFloat: try 6, 7, 8... significant digits until the
    // decimal, parsed as a double and narrowed to f32, gives the value back. Nine digits
    // always suffice for an f32, so the loop ends there at the latest.
    let wide = f64::from(value);
    let start = out.len();
    let mut precision = 6;
    loop {
        out.truncate(start);
        push_fmt(out, format_args!("{:.*e}", precision - 1, wide));
        let round_trips = out
            .get(start..)
            .and_then(|decimal| decimal.parse::<f64>().ok())
            .is_some_and(|parsed| parsed as f32 == value);
        if round_trips || precision >= 9 {
            break;
        }
        precision += 1;
    }
    relayout_as_python(out, start);
}

pub(super) fn write_f64(out: &mut String, value: f64) {
    if !value.is_finite() || value == 0.0 {
        write_special(out, value);
        return;
    }
    let start = out.len();
    push_fmt(out, format_args!("{value:e}"));
    // Rust's `{:e}` gives the fewest digits that round-trip, as repr does, but when two such
    // decimals are equally close (839.37481689453125 → ...312 or ...313) it may pick the
    // other one: repr takes the correctly rounded one, ties to even. That is `{:.N$e}` with
    // the same digit count, whenever it round-trips.
    let shortest_end = out.len();
    let digit_count = out.get(start..).map_or(1, |shortest| {
        shortest
            .bytes()
            .take_while(|&b| b != b'e')
            .filter(u8::is_ascii_digit)
            .count()
    });
    push_fmt(
        out,
        format_args!("{:.*e}", digit_count.saturating_sub(1), value),
    );
    let rounded_round_trips = out
        .get(shortest_end..)
        .and_then(|rounded| rounded.parse::<f64>().ok())
        .is_some_and(|parsed| parsed == value);
    if rounded_round_trips {
        out.drain(start..shortest_end);
    } else {
        out.truncate(shortest_end);
    }
    relayout_as_python(out, start);
}

/// NaN, infinities and zeros, as Python's `str(float)` spells them (NaN never shows a sign).
fn write_special(out: &mut String, value: f64) {
    out.push_str(if value.is_nan() {
        "nan"
    } else if value == f64::INFINITY {
        "inf"
    } else if value == f64::NEG_INFINITY {
        "-inf"
    } else if value.is_sign_negative() {
        "-0.0"
    } else {
        "0.0"
    });
}

/// Rewrites the Rust exponent form that `out` holds from `start` on (`-1.2300e-7`) into
/// Python's `repr` of the same decimal (`-1.23e-07`), trailing zeros dropped. For an f32 the
/// decimal has at most 9 significant digits, few enough that the double Python parses from it
/// prints back as the same digits; for an f64 they already are repr's digits.
fn relayout_as_python(out: &mut String, start: usize) {
    let mut digits = [0u8; 17];
    let mut count = 0;
    let mut negative = false;
    let mut exponent: i32 = 0;
    let mut exponent_negative = false;
    let mut in_exponent = false;
    for byte in out.bytes().skip(start) {
        match byte {
            b'-' if in_exponent => exponent_negative = true,
            b'-' => negative = true,
            b'e' => in_exponent = true,
            b'0'..=b'9' if in_exponent => {
                exponent = exponent
                    .saturating_mul(10)
                    .saturating_add(i32::from(byte - b'0'));
            }
            b'0'..=b'9' => {
                if let Some(slot) = digits.get_mut(count) {
                    *slot = byte;
                    count += 1;
                }
            }
            _ => {}
        }
    }
    if exponent_negative {
        exponent = -exponent;
    }
    while count > 1 && digits.get(count - 1) == Some(&b'0') {
        count -= 1;
    }
    let digits = digits.get(..count).unwrap_or_default();
    out.truncate(start);
    if negative {
        out.push('-');
    }
    push_python_decimal(out, digits, exponent);
}

/// Lays out `d.ddd × 10^exponent` as Python's float repr does.
fn push_python_decimal(out: &mut String, digits: &[u8], exponent: i32) {
    let (first, rest) = digits.split_first().unwrap_or((&b'0', &[]));
    if !(-4..16).contains(&exponent) {
        out.push(char::from(*first));
        if !rest.is_empty() {
            out.push('.');
            push_digits(out, rest);
        }
        push_fmt(
            out,
            format_args!(
                "e{}{:02}",
                if exponent < 0 { '-' } else { '+' },
                exponent.unsigned_abs()
            ),
        );
    } else if exponent < 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n(
            '0',
            exponent.unsigned_abs() as usize - 1,
        ));
        push_digits(out, digits);
    } else {
        let integral = exponent.unsigned_abs() as usize + 1;
        let (int_part, frac_part) = digits.split_at(integral.min(digits.len()));
        push_digits(out, int_part);
        out.extend(std::iter::repeat_n('0', integral - int_part.len()));
        out.push('.');
        if frac_part.is_empty() {
            out.push('0');
        } else {
            push_digits(out, frac_part);
        }
    }
}

fn push_digits(out: &mut String, digits: &[u8]) {
    out.extend(digits.iter().map(|&digit| char::from(digit)));
}
