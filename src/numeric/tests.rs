use super::*;

fn ints(values: &[i64]) -> Numbers {
    Numbers {
        ints: values.to_vec(),
        ..Numbers::default()
    }
}

fn doubles(values: &[f64]) -> Numbers {
    Numbers {
        f64s: values.to_vec(),
        ..Numbers::default()
    }
}

/// The kind [`transform`] gives, for tests that only look at the kind and the values.
fn transform_kind(
    numbers: &mut Numbers,
    from: FeatureKind,
    rule: Option<&Rule>,
    target: Dialect,
    rounding: Rounding,
) -> Result<FeatureKind, ErrorKind> {
    transform(numbers, from, rule, target, rounding).map(|t| t.kind)
}

fn cast_rule(to: NumericType) -> Rule {
    Rule {
        cast: Some(to),
        ..Rule::default()
    }
}

#[test]
fn int64_to_int32_is_range_checked() {
    let rule = cast_rule(NumericType::Int32);
    let mut ok = ints(&[i32::MIN.into(), i32::MAX.into()]);
    assert_eq!(
        transform_kind(
            &mut ok,
            FeatureKind::Int64,
            Some(&rule),
            Dialect::Of,
            Rounding::Refuse
        ),
        Ok(FeatureKind::Int32)
    );
    let mut too_big = ints(&[1 << 31]);
    assert_eq!(
        transform_kind(
            &mut too_big,
            FeatureKind::Int64,
            Some(&rule),
            Dialect::Of,
            Rounding::Refuse
        ),
        Err(ErrorKind::OutOfRange {
            value: "2147483648".into(),
            to: NumericType::Int32
        })
    );
}

#[test]
fn offset_overflow_is_an_error_and_offset_needs_integers() {
    let rule = Rule {
        offset: Some(-1),
        ..Rule::default()
    };
    let mut min = ints(&[i64::MIN]);
    assert!(transform_kind(
        &mut min,
        FeatureKind::Int64,
        Some(&rule),
        Dialect::Of,
        Rounding::Refuse
    )
    .is_err());
    let mut floats = Numbers {
        f32s: vec![1.0],
        ..Numbers::default()
    };
    assert_eq!(
        transform_kind(
            &mut floats,
            FeatureKind::Float,
            Some(&rule),
            Dialect::Of,
            Rounding::Refuse
        ),
        Err(ErrorKind::InvalidOffset {
            kind: FeatureKind::Float
        })
    );
}

#[test]
fn double_narrows_only_when_exact_unless_lossy() {
    let mut exact = doubles(&[
        0.5,
        -0.0,
        f64::INFINITY,
        f64::NAN,
        f64::from(f32::MIN_POSITIVE),
    ]);
    assert_eq!(
        transform_kind(
            &mut exact,
            FeatureKind::Double,
            None,
            Dialect::Tf,
            Rounding::Refuse
        ),
        Ok(FeatureKind::Float)
    );
    let mut inexact = doubles(&[0.1]);
    assert_eq!(
        transform_kind(
            &mut inexact.clone(),
            FeatureKind::Double,
            None,
            Dialect::Tf,
            Rounding::Refuse
        ),
        Err(ErrorKind::InexactDouble { value: 0.1 })
    );
    assert_eq!(
        transform_kind(
            &mut inexact,
            FeatureKind::Double,
            None,
            Dialect::Tf,
            Rounding::Allow
        ),
        Ok(FeatureKind::Float)
    );
    assert_eq!(inexact.f32s, vec![0.1f32]);
}

#[test]
fn int_to_float_casts_check_exactness() {
    let rule = cast_rule(NumericType::Double);
    let mut max = ints(&[i64::MAX]);
    assert!(transform_kind(
        &mut max,
        FeatureKind::Int64,
        Some(&rule),
        Dialect::Of,
        Rounding::Refuse
    )
    .is_err());
    let mut big_exact = ints(&[1 << 53]);
    assert_eq!(
        transform_kind(
            &mut big_exact,
            FeatureKind::Int64,
            Some(&rule),
            Dialect::Of,
            Rounding::Refuse
        ),
        Ok(FeatureKind::Double)
    );
}

#[test]
fn float_to_int_needs_integral_values() {
    let rule = cast_rule(NumericType::Int64);
    let mut half = Numbers {
        f32s: vec![1.5],
        ..Numbers::default()
    };
    assert!(transform_kind(
        &mut half,
        FeatureKind::Float,
        Some(&rule),
        Dialect::Of,
        Rounding::Refuse
    )
    .is_err());
    let mut whole = Numbers {
        f32s: vec![-3.0],
        ..Numbers::default()
    };
    assert_eq!(
        transform_kind(
            &mut whole,
            FeatureKind::Float,
            Some(&rule),
            Dialect::Of,
            Rounding::Refuse
        ),
        Ok(FeatureKind::Int64)
    );
    assert_eq!(whole.ints, vec![-3]);
}

#[test]
fn negative_int32_encodes_like_int64() {
    let mut out = Vec::new();
    encode_numbers(FeatureKind::Int32, &ints(&[-1]), &mut out);
    let mut as_int64 = Vec::new();
    encode_numbers(FeatureKind::Int64, &ints(&[-1]), &mut as_int64);
    assert_eq!(out, as_int64);
    assert_eq!(out.len(), 2 + 10);
}

fn narrowed(
    values: &[f64],
    rule: Option<&Rule>,
    rounding: Rounding,
) -> Result<Transformed, ErrorKind> {
    transform(
        &mut doubles(values),
        FeatureKind::Double,
        rule,
        Dialect::Tf,
        rounding,
    )
}

#[test]
fn a_double_beyond_float_range_is_refused_even_when_lossy() {
    for rounding in [Rounding::Refuse, Rounding::Allow] {
        for value in [1e300, -1e300, f64::MAX, 3.4028236e38] {
            assert_eq!(
                narrowed(&[0.5, value], None, rounding),
                Err(ErrorKind::FloatOverflow { value }),
                "{value:e} {rounding:?}"
            );
        }
    }
    // A cast to float narrows the same way, whatever the direction.
    let cast = cast_rule(NumericType::Float);
    let mut huge = doubles(&[1e300]);
    assert_eq!(
        transform(
            &mut huge,
            FeatureKind::Double,
            Some(&cast),
            Dialect::Of,
            Rounding::Allow
        ),
        Err(ErrorKind::FloatOverflow { value: 1e300 })
    );
}

#[test]
fn lossy_narrowing_rounds_to_the_largest_float_and_counts_it() {
    // Just above f32::MAX but nearer to it than to the next power of two: rounding, not
    // overflow.
    let near_max = f64::from(f32::MAX) * (1.0 + f64::EPSILON);
    let mut numbers = doubles(&[near_max]);
    let transformed = transform(
        &mut numbers,
        FeatureKind::Double,
        None,
        Dialect::Tf,
        Rounding::Allow,
    );
    assert_eq!(
        transformed,
        Ok(Transformed {
            kind: FeatureKind::Float,
            rounded: 1
        })
    );
    assert_eq!(numbers.f32s, vec![f32::MAX]);
}

#[test]
fn lossy_narrowing_counts_each_value_it_changes() {
    let values = [
        0.1,                                // rounded
        1e-300,                             // underflows to 0
        -1e-40,                             // becomes a subnormal
        0.5,                                // exact
        f64::NAN,                           // kept
        f64::NEG_INFINITY,                  // kept
        -0.0,                               // exact
        f64::from(f32::MIN_POSITIVE) / 4.0, // an exact subnormal
    ];
    let mut numbers = doubles(&values);
    let transformed = transform(
        &mut numbers,
        FeatureKind::Double,
        None,
        Dialect::Tf,
        Rounding::Allow,
    );
    assert_eq!(
        transformed,
        Ok(Transformed {
            kind: FeatureKind::Float,
            rounded: 3
        })
    );
    assert_eq!(numbers.f32s[1].to_bits(), 0);
    assert_eq!(numbers.f32s[2], -1e-40f32);
    assert!(numbers.f32s[4].is_nan());
    assert_eq!(numbers.f32s[5], f32::NEG_INFINITY);
    // Without lossy, the first of them fails.
    assert_eq!(
        narrowed(&values, None, Rounding::Refuse),
        Err(ErrorKind::InexactDouble { value: 0.1 })
    );
    assert_eq!(
        narrowed(&values[3..], None, Rounding::Refuse).map(|t| t.rounded),
        Ok(0)
    );
}

#[test]
fn lossy_integer_casts_count_each_value_once() {
    // 2^60 + 1 rounds on its way to double, then fits a float exactly; 2^60 + 2^30 fits a
    // double exactly, then rounds to float; 2^60 + 2^30 + 1 rounds in both steps.
    let big = 1i64 << 60;
    let values = [big + 1, big + (1 << 30), big + (1 << 30) + 1, 7];
    let to_double = cast_rule(NumericType::Double);
    let mut numbers = ints(&values);
    assert_eq!(
        transform(
            &mut numbers,
            FeatureKind::Int64,
            Some(&to_double),
            Dialect::Tf,
            Rounding::Allow
        ),
        Ok(Transformed {
            kind: FeatureKind::Float,
            rounded: 3
        })
    );
    assert_eq!(numbers.f32s, vec![big as f32, big as f32, big as f32, 7.0]);
    let to_float = cast_rule(NumericType::Float);
    assert_eq!(
        transform(
            &mut ints(&values),
            FeatureKind::Int64,
            Some(&to_float),
            Dialect::Of,
            Rounding::Allow
        )
        .map(|t| t.rounded),
        Ok(3)
    );
    assert_eq!(
        transform(
            &mut ints(&values),
            FeatureKind::Int64,
            Some(&to_double),
            Dialect::Of,
            Rounding::Allow
        )
        .map(|t| t.rounded),
        Ok(2)
    );
}
