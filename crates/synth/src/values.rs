//! The deterministic value generator of the recipe format (the same arithmetic as
//! `tests/peer/peer_common.py::gen_values`):
//!
//! ```text
//! sm(x)  = SplitMix64 finaliser (wrapping u64 arithmetic)
//! seed   = sm(sm(sm(sm(recipe.seed) ^ t) ^ g) ^ w)   t tensor index, g global step, w worker
//! r_i    = sm(seed + i)                              i flat C-order element index
//! float  = lo + (hi - lo) * ((r_i >> 11) * 2^-53)    in f64, then rounded to the dtype
//! int    = lo + (r_i mod (hi - lo + 1))              in i64, then wrapped to the dtype
//! bool   = r_i >> 63 == 1
//! str    = "s{g}_{i}_{r_i mod 1000}"
//! ```
//!
//! then `inject` overrides elements (numpy assignment: floats rounded, ints truncated);
//! `duplicate` writes a second value generated with worker index `w + 1000`.

use half::f16;
use ndarray::{ArrayD, IxDyn};
use smdebug_record::{Complex32, Complex64, DType, TensorValue};

use crate::error::{Result, SynthError};
use crate::spec::{Pattern, RecipeNumber, TensorSpec};

/// Tensors larger than this many elements are refused: a recipe is a test fixture, and a
/// typo in a shape must not exhaust memory.
pub const MAX_ELEMENTS: usize = 1 << 28;

/// SplitMix64's finaliser (wrapping arithmetic).
///
/// ```
/// assert_eq!(smdebug_synth::splitmix64(0), 0xE220_A839_7B1D_CDAF);
/// ```
pub fn splitmix64(x: u64) -> u64 {
    let x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let z = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of one (tensor `t`, global step `g`, worker `w`) value.
pub fn value_seed(recipe_seed: u64, t: u64, g: u64, w: u64) -> u64 {
    [t, g, w]
        .into_iter()
        .fold(splitmix64(recipe_seed), |s, part| splitmix64(s ^ part))
}

/// numpy's `float64 → float16` cast (`npy_doublebits_to_halfbits`): one rounding, to nearest
/// with ties to even, straight from the double.
///
/// `half::f16::from_f64` does not do this: on x86 with F16C it converts through `f32` (two
/// roundings), and its software path drops the low 32 bits of the significand before
/// rounding. Both give a value one unit in the last place off for doubles just above an
/// `f16` midpoint.
///
/// ```
/// use smdebug_synth::f64_to_f16;
/// // 1 + 2^-11 + 2^-30: just above the midpoint of 1 and 1 + 2^-10. Through f32 the 2^-30
/// // is lost, the tie goes to even (1.0); numpy rounds up.
/// let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-30);
/// assert_eq!(f64_to_f16(x).to_f64(), 1.0 + 2f64.powi(-10));
/// assert_eq!(f64_to_f16(65520.0).to_f64(), f64::INFINITY);
/// ```
pub fn f64_to_f16(x: f64) -> f16 {
    let d = x.to_bits();
    let sign = ((d >> 48) & 0x8000) as u16;
    let exp = d & 0x7ff0_0000_0000_0000;
    let frac = d & 0x000f_ffff_ffff_ffff;
    if exp >= 0x40f0_0000_0000_0000 {
        // |x| >= 2^16, infinity or NaN.
        if exp == 0x7ff0_0000_0000_0000 && frac != 0 {
            // NaN keeps its sign and top payload bits, and stays a NaN.
            let mut h = 0x7c00 + (frac >> 42) as u16;
            if h == 0x7c00 {
                h += 1;
            }
            return f16::from_bits(sign + h);
        }
        return f16::from_bits(sign + 0x7c00);
    }
    if exp <= 0x3f00_0000_0000_0000 {
        // Below the smallest normal half (2^-14): subnormal half or signed zero.
        if exp < 0x3e60_0000_0000_0000 {
            return f16::from_bits(sign);
        }
        let e = exp >> 52;
        // Align so that the half's last subnormal bit is bit 53: nothing is shifted out.
        let mut sig = (0x0010_0000_0000_0000 + frac) << (e - 998);
        if sig & 0x003f_ffff_ffff_ffff != 0x0010_0000_0000_0000 {
            sig += 0x0010_0000_0000_0000;
        }
        // A carry into the exponent field gives the smallest normal, which is right.
        return f16::from_bits(sign + (sig >> 53) as u16);
    }
    let h_exp = ((exp - 0x3f00_0000_0000_0000) >> 42) as u16;
    let mut sig = frac;
    // Round to nearest, ties to even: add half an ulp unless it is an exact tie on an even
    // significand.
    if sig & 0x0000_07ff_ffff_ffff != 0x0000_0200_0000_0000 {
        sig += 0x0000_0200_0000_0000;
    }
    // A carry out of the significand increments the exponent (up to infinity): right too.
    f16::from_bits(sign + (sig >> 42) as u16 + h_exp)
}

/// One element before numpy stores it in its dtype.
#[derive(Debug, Clone, Copy)]
enum Cell {
    Float(f64),
    Int(i128),
    Bool(bool),
}

impl From<RecipeNumber> for Cell {
    fn from(n: RecipeNumber) -> Cell {
        match n {
            RecipeNumber::Int(i) => Cell::Int(i),
            RecipeNumber::Float(f) => Cell::Float(f),
        }
    }
}

impl Cell {
    /// Python `float(x)`.
    fn f64(self) -> f64 {
        match self {
            Cell::Float(f) => f,
            Cell::Int(i) => i as f64,
            Cell::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// numpy's cast to an integer dtype: truncation; NaN and infinities are refused.
    fn int(self) -> Option<i128> {
        match self {
            Cell::Float(f) if f.is_finite() => Some(f.trunc() as i128),
            Cell::Float(_) => None,
            Cell::Int(i) => Some(i),
            Cell::Bool(b) => Some(i128::from(b)),
        }
    }

    fn truthy(self) -> bool {
        match self {
            Cell::Float(f) => f != 0.0,
            Cell::Int(i) => i != 0,
            Cell::Bool(b) => b,
        }
    }
}

/// `[lo, hi]` when the recipe gives no `range`.
fn default_range(dtype: DType) -> (RecipeNumber, RecipeNumber) {
    use RecipeNumber::{Float, Int};
    match dtype {
        DType::Int8 => (Int(-128), Int(127)),
        DType::UInt8 => (Int(0), Int(255)),
        DType::UInt16 | DType::UInt32 | DType::UInt64 => (Int(0), Int(1000)),
        DType::Int16 | DType::Int32 | DType::Int64 => (Int(-1000), Int(1000)),
        _ => (Float(-1.0), Float(1.0)),
    }
}

fn is_float(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::Float16 | DType::Float32 | DType::Float64 | DType::Complex64 | DType::Complex128
    )
}

/// The value tensor `spec` (index `t` in its recipe) holds at global step `g` for worker
/// index `w`, as `gen_values` makes it.
pub(crate) fn generate(
    spec: &TensorSpec,
    seed: u64,
    t: u64,
    g: i64,
    w: u64,
) -> Result<TensorValue> {
    let err = |message: String| SynthError::Value {
        tensor: spec.name.clone(),
        message,
    };
    let n = spec
        .shape
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| err(format!("shape {:?} is too large", spec.shape)))?;
    let seed = value_seed(seed, t, g as u64, w);
    let r = |i: usize| splitmix64(seed.wrapping_add(i as u64));
    let shape = IxDyn(&spec.shape);
    let dtype = spec.dtype;
    if dtype == DType::Str {
        let words: Vec<String> = (0..n)
            .map(|i| format!("s{g}_{i}_{}", r(i) % 1000))
            .collect();
        return ArrayD::from_shape_vec(shape, words)
            .map(TensorValue::from)
            .map_err(|e| err(e.to_string()));
    }
    let mut cells: Vec<Cell> = match spec.pattern {
        Pattern::Step => vec![Cell::Float(g as f64); n],
        Pattern::Const => {
            let c = spec
                .constant
                .ok_or_else(|| err("pattern \"const\" needs a \"const\" value".into()))?;
            vec![Cell::from(c); n]
        }
        Pattern::Random => {
            let (lo, hi) = spec.range.unwrap_or_else(|| default_range(dtype));
            if dtype == DType::Bool {
                (0..n).map(|i| Cell::Bool(r(i) >> 63 == 1)).collect()
            } else if is_float(dtype) {
                let (lo, hi) = (Cell::from(lo).f64(), Cell::from(hi).f64());
                (0..n)
                    .map(|i| {
                        let u = (r(i) >> 11) as f64 * 2f64.powi(-53);
                        Cell::Float(lo + (hi - lo) * u)
                    })
                    .collect()
            } else {
                let bound = |x: RecipeNumber| {
                    Cell::from(x)
                        .int()
                        .ok_or_else(|| err(format!("range bound {x} is not an integer")))
                };
                let (lo, hi) = (bound(lo)?, bound(hi)?);
                // numpy: a uint64 span, the remainder cast to int64, added to an int64 lo
                // (wrapping).
                let span = (hi - lo + 1) as u64;
                if span == 0 {
                    return Err(err(format!("empty range [{lo}, {hi}]")));
                }
                let lo = lo as i64;
                (0..n)
                    .map(|i| Cell::Int(i128::from(lo.wrapping_add((r(i) % span) as i64))))
                    .collect()
            }
        }
    };
    for &(index, value) in &spec.inject {
        if let Some(cell) = cells.get_mut(index) {
            *cell = Cell::from(value);
        }
    }
    let ints = |cells: &[Cell]| -> Result<Vec<i128>> {
        cells
            .iter()
            .map(|c| {
                c.int()
                    .ok_or_else(|| err(format!("{} cannot be stored in a {dtype} tensor", c.f64())))
            })
            .collect()
    };
    fn array<T>(shape: IxDyn, v: Vec<T>) -> ArrayD<T> {
        ArrayD::from_shape_vec(shape, v).expect("the element count is the shape's product")
    }
    let floats = || cells.iter().map(|c| c.f64());
    // numpy's casts on assignment / `astype`: floats round to nearest even (once, from the
    // double), float to int truncates, int to a narrower int wraps.
    // `as` from i128 wraps, as numpy's cast to a narrower integer type does.
    macro_rules! int_tensor {
        ($t:ty) => {
            TensorValue::from(array(
                shape,
                ints(&cells)?.into_iter().map(|i| i as $t).collect(),
            ))
        };
    }
    Ok(match dtype {
        DType::Float16 => TensorValue::from(array(shape, floats().map(f64_to_f16).collect())),
        DType::Float32 => TensorValue::from(array(shape, floats().map(|f| f as f32).collect())),
        DType::Float64 => TensorValue::from(array(shape, floats().collect())),
        DType::Complex64 => TensorValue::from(array(
            shape,
            floats().map(|f| Complex32::new(f as f32, 0.0)).collect(),
        )),
        DType::Complex128 => TensorValue::from(array(
            shape,
            floats().map(|f| Complex64::new(f, 0.0)).collect(),
        )),
        DType::Bool => TensorValue::from(array(shape, cells.iter().map(|c| c.truthy()).collect())),
        DType::Int8 => int_tensor!(i8),
        DType::UInt8 => int_tensor!(u8),
        DType::Int16 => int_tensor!(i16),
        DType::UInt16 => int_tensor!(u16),
        DType::Int32 => int_tensor!(i32),
        DType::UInt32 => int_tensor!(u32),
        DType::Int64 => int_tensor!(i64),
        DType::UInt64 => int_tensor!(u64),
        DType::Str => unreachable!("strings returned above"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn splitmix64_matches_the_reference_sequence() {
        // First outputs of SplitMix64 seeded with 0 (Vigna's reference implementation).
        assert_eq!(splitmix64(0), 0xE220_A839_7B1D_CDAF);
        assert_eq!(splitmix64(0x9E37_79B9_7F4A_7C15), 0x6E78_9E6A_A1B9_65F4);
    }

    /// The f16 nearest to `x` by exact comparison of distances (f16 → f64 is exact), ties to
    /// the even significand: an oracle that shares no code with [`f64_to_f16`].
    fn nearest_f16(x: f64) -> u16 {
        if x.is_nan() {
            return 0;
        }
        let max = f16::MAX.to_f64();
        let limit = max + (max - f16::from_bits(0x7bfe).to_f64()) / 2.0;
        if x.abs() >= limit {
            return if x > 0.0 { 0x7c00 } else { 0xfc00 };
        }
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        let a = x.abs();
        // Binary search for the largest magnitude <= a among 0..=0x7bff.
        let (mut lo, mut hi) = (0u16, 0x7bffu16);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if f16::from_bits(mid).to_f64() <= a {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let below = f16::from_bits(lo).to_f64();
        let above = f16::from_bits(lo + 1).to_f64();
        let pick = if a - below < above - a || (a - below == above - a && lo % 2 == 0) {
            lo
        } else {
            lo + 1
        };
        sign | pick
    }

    #[test]
    fn float16_rounding_is_numpys_where_double_rounding_differs() {
        let cases = [
            (1.0 + 2f64.powi(-11) + 2f64.powi(-30), 0x3c01),
            (1.0 + 2f64.powi(-11), 0x3c00),
            (1.0 + 3.0 * 2f64.powi(-11), 0x3c02),
            (-(1.0 + 2f64.powi(-11) + 2f64.powi(-40)), 0xbc01),
            (65504.0, 0x7bff),
            (65519.99, 0x7bff),
            (65520.0, 0x7c00),
            (2f64.powi(-24), 0x0001),
            (2f64.powi(-25), 0x0000),
            (2f64.powi(-25) * (1.0 + 2f64.powi(-40)), 0x0001),
            (-0.0, 0x8000),
            (f64::NEG_INFINITY, 0xfc00),
        ];
        for (x, bits) in cases {
            assert_eq!(f64_to_f16(x).to_bits(), bits, "{x:e}");
            assert_eq!(nearest_f16(x), bits, "oracle at {x:e}");
        }
        assert!(f64_to_f16(f64::NAN).is_nan());
    }

    proptest! {
        #[test]
        fn float16_is_the_nearest_half(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assume!(!x.is_nan());
            prop_assert_eq!(f64_to_f16(x).to_bits(), nearest_f16(x));
        }

        #[test]
        fn float16_is_the_nearest_half_near_midpoints(h in 0u16..0x7bff, off in -64i64..64) {
            // Doubles a few ulps around the midpoint of two neighbouring halves.
            let mid = (f16::from_bits(h).to_f64() + f16::from_bits(h + 1).to_f64()) / 2.0;
            let x = f64::from_bits((mid.to_bits() as i64 + off) as u64);
            prop_assert_eq!(f64_to_f16(x).to_bits(), nearest_f16(x));
        }
    }
}
