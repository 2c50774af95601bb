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
        transform(
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
        transform(
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
    assert!(transform(
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
        transform(
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
        transform(
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
        transform(
            &mut inexact.clone(),
            FeatureKind::Double,
            None,
            Dialect::Tf,
            Rounding::Refuse
        ),
        Err(ErrorKind::InexactDouble { value: 0.1 })
    );
    assert_eq!(
        transform(
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
    assert!(transform(
        &mut max,
        FeatureKind::Int64,
        Some(&rule),
        Dialect::Of,
        Rounding::Refuse
    )
    .is_err());
    let mut big_exact = ints(&[1 << 53]);
    assert_eq!(
        transform(
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
    assert!(transform(
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
        transform(
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
