//! A cache's limit as it is given: bytes, or a size with its unit.

/// A cache limit: a whole number of bytes, or a number with a unit, SI (`kB`, `MB`, `GB`,
/// `TB`: powers of 1000) or IEC (`KiB`, `MiB`, `GiB`, `TiB`: powers of 1024), letters in any
/// case: `"20GB"`, `"512MiB"`, `"1.5 GB"`.
pub fn parse_limit(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "cache_limit={text:?} is not a size: give bytes (an int) or a number with a unit, \
             like \"20GB\" (SI, powers of 1000) or \"512MiB\" (IEC, powers of 1024)"
        )
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let mut bytes = whole
        .checked_mul(scale)
        .ok_or_else(|| format!("cache_limit={text:?} is too large"))?;
    if !fraction.is_empty() {
        let digits: u32 = fraction.len().min(18) as u32;
        let part: u64 = fraction[..digits as usize].parse().map_err(|_| bad())?;
        bytes += (u128::from(part) * u128::from(scale) / 10u128.pow(digits)) as u64;
    }
    if bytes == 0 {
        return Err(format!(
            "cache_limit={text:?}: a cache needs at least 1 byte"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_in_si_and_iec_units_and_garbage_is_refused() {
        for (text, bytes) in [
            ("1048576", 1 << 20),
            ("20GB", 20_000_000_000),
            ("20 gb", 20_000_000_000),
            ("512MiB", 512 << 20),
            ("1.5GB", 1_500_000_000),
            ("2KiB", 2048),
            ("3kB", 3000),
            ("7B", 7),
        ] {
            assert_eq!(parse_limit(text), Ok(bytes), "{text}");
        }
        for text in [
            "",
            "GB",
            "20G",
            "-1",
            "1.2.3GB",
            "twenty",
            "0",
            "1e9",
            "99999999999TB",
        ] {
            let err = parse_limit(text).unwrap_err();
            assert!(err.contains("cache_limit"), "{text}: {err}");
        }
    }
}
