//! The element types a tensor may hold, and how numpy treats each of them.

use crate::{DType, Scalar};
use half::f16;
use std::fmt::Debug;
use std::ops::{Add, Div, Mul, Sub};

mod sealed {
    pub trait Sealed {}
}

/// The float type numpy accumulates sums of an element type in (`f32` for `float16` and
/// `float32`, `f64` otherwise). Implemented for `f32` and `f64` only.
pub trait AccFloat:
    Copy
    + PartialOrd
    + Debug
    + Send
    + Sync
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + 'static
    + sealed::Sealed
{
    /// `0.0`
    const ZERO: Self;
    /// `1.0`
    const ONE: Self;
    /// Rounds an `f64` to this type.
    fn from_f64(v: f64) -> Self;
    /// Widens to `f64` (exact).
    fn to_f64(self) -> f64;
    /// Absolute value.
    fn abs(self) -> Self;
}

impl sealed::Sealed for f32 {}
impl sealed::Sealed for f64 {}

impl AccFloat for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn abs(self) -> f32 {
        f32::abs(self)
    }
}

impl AccFloat for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn abs(self) -> f64 {
        f64::abs(self)
    }
}

/// An element type this crate can reduce: `bool`, the integers, `f16`, `f32`, `f64`.
///
/// The methods describe numpy's arithmetic for the type; they are public so that generic
/// code can name the bound, but the trait is sealed.
pub trait Element: Copy + PartialOrd + Debug + Send + Sync + 'static + sealed::Sealed {
    /// numpy's dtype of this element type.
    const DTYPE: DType;
    /// Whether the type is a float (has NaN and infinities).
    const IS_FLOAT: bool;
    /// The type numpy sums this type in when computing a float result (`mean`, `var`,
    /// norms).
    type Acc: AccFloat;
    /// The largest value (the starting point of a running minimum).
    const HIGHEST: Self;
    /// The smallest value (the starting point of a running maximum).
    const LOWEST: Self;
    /// Zero (`false` for bool); `-0.0` compares equal to it, as in numpy's `x == 0`.
    const ZERO_ELEMENT: Self;

    /// The value in the accumulator type.
    fn to_acc(self) -> Self::Acc;
    /// Rounds an accumulator value through this type and back (numpy stores a `float16`
    /// running sum as `float16` between buffers); identity for every other type.
    fn round_acc(a: Self::Acc) -> Self::Acc;
    /// `np.absolute`: clears the sign of floats, wraps for the most negative integer
    /// (`abs(int8(-128)) == -128`), identity for unsigned and bool.
    fn np_abs(self) -> Self;
    /// True for NaN.
    fn is_nan(self) -> bool;
    /// True for ±infinity.
    fn is_inf(self) -> bool;
    /// True for NaN or ±infinity. Floats test their exponent bits, with no branch, so that a
    /// loop over a slice vectorises ([`crate::all_finite`]).
    #[inline(always)]
    fn is_non_finite(self) -> bool {
        self.is_nan() | self.is_inf()
    }
    /// The value as a 64-bit two's-complement pattern (sign-extended), for wrapping integer
    /// sums and products.
    fn wrap_bits(self) -> u64;
    /// The value as `f64`.
    fn to_f64(self) -> f64;
    /// The value as a [`Scalar`] of its own dtype.
    fn to_scalar(self) -> Scalar;
    /// Divides a sum by an element count the way numpy's `_var` divides its one-element
    /// mean *array* by the count (numpy 1.x value-based casting decides the precision).
    fn div_count(sum: Self::Acc, n: usize) -> Self::Acc;
}

/// numpy's result dtype of a float-valued reduction (mean, std, var, norms) of `dtype`.
pub(crate) fn float_result_dtype(dtype: DType) -> DType {
    if dtype.is_float() {
        dtype
    } else {
        DType::F64
    }
}

macro_rules! int_element {
    ($t:ty, $dt:ident, $scalar:ident, $abs:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            const IS_FLOAT: bool = false;
            type Acc = f64;
            const HIGHEST: $t = <$t>::MAX;
            const LOWEST: $t = <$t>::MIN;
            const ZERO_ELEMENT: $t = 0;
            #[inline(always)]
            fn to_acc(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn round_acc(a: f64) -> f64 {
                a
            }
            #[inline(always)]
            fn np_abs(self) -> $t {
                let f: fn($t) -> $t = $abs;
                f(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            #[inline(always)]
            fn is_inf(self) -> bool {
                false
            }
            #[inline(always)]
            fn wrap_bits(self) -> u64 {
                // Sign-extends signed types, zero-extends unsigned ones.
                self as i64 as u64
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_scalar(self) -> Scalar {
                Scalar::$scalar(self)
            }
            fn div_count(sum: f64, n: usize) -> f64 {
                sum / n as f64
            }
        }
    };
}

int_element!(i8, I8, I8, |v: i8| v.wrapping_abs());
int_element!(i16, I16, I16, |v: i16| v.wrapping_abs());
int_element!(i32, I32, I32, |v: i32| v.wrapping_abs());
int_element!(i64, I64, I64, |v: i64| v.wrapping_abs());
int_element!(u8, U8, U8, |v: u8| v);
int_element!(u16, U16, U16, |v: u16| v);
int_element!(u32, U32, U32, |v: u32| v);

impl sealed::Sealed for u64 {}
impl Element for u64 {
    const DTYPE: DType = DType::U64;
    const IS_FLOAT: bool = false;
    type Acc = f64;
    const HIGHEST: u64 = u64::MAX;
    const LOWEST: u64 = 0;
    const ZERO_ELEMENT: u64 = 0;
    #[inline(always)]
    fn to_acc(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn round_acc(a: f64) -> f64 {
        a
    }
    #[inline(always)]
    fn np_abs(self) -> u64 {
        self
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
    #[inline(always)]
    fn is_inf(self) -> bool {
        false
    }
    #[inline(always)]
    fn wrap_bits(self) -> u64 {
        self
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn to_scalar(self) -> Scalar {
        Scalar::U64(self)
    }
    fn div_count(sum: f64, n: usize) -> f64 {
        sum / n as f64
    }
}

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: DType = DType::Bool;
    const IS_FLOAT: bool = false;
    type Acc = f64;
    const HIGHEST: bool = true;
    const LOWEST: bool = false;
    const ZERO_ELEMENT: bool = false;
    #[inline(always)]
    fn to_acc(self) -> f64 {
        f64::from(u8::from(self))
    }
    #[inline(always)]
    fn round_acc(a: f64) -> f64 {
        a
    }
    #[inline(always)]
    fn np_abs(self) -> bool {
        self
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        false
    }
    #[inline(always)]
    fn is_inf(self) -> bool {
        false
    }
    #[inline(always)]
    fn wrap_bits(self) -> u64 {
        u64::from(self)
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
    fn div_count(sum: f64, n: usize) -> f64 {
        sum / n as f64
    }
}

/// `Element` for a float type accumulated in its own width; `div_count` is its mean's
/// division (numpy's result dtype differs between them).
macro_rules! float_element {
    ($t:ident, $dtype:ident, $scalar:ident, $div_count:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dtype;
            const IS_FLOAT: bool = true;
            type Acc = $t;
            const HIGHEST: $t = $t::INFINITY;
            const LOWEST: $t = $t::NEG_INFINITY;
            const ZERO_ELEMENT: $t = 0.0;
            #[inline(always)]
            fn to_acc(self) -> $t {
                self
            }
            #[inline(always)]
            fn round_acc(a: $t) -> $t {
                a
            }
            #[inline(always)]
            fn np_abs(self) -> $t {
                self.abs()
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                self.is_nan()
            }
            #[inline(always)]
            fn is_inf(self) -> bool {
                self.is_infinite()
            }
            #[inline(always)]
            fn is_non_finite(self) -> bool {
                // The exponent all ones (infinity's bits): NaN or ±infinity.
                let exp = $t::INFINITY.to_bits();
                self.to_bits() & exp == exp
            }
            #[inline(always)]
            fn wrap_bits(self) -> u64 {
                0
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn to_scalar(self) -> Scalar {
                Scalar::$scalar(self)
            }
            fn div_count(sum: $t, n: usize) -> $t {
                let div: fn($t, usize) -> $t = $div_count;
                div(sum, n)
            }
        }
    };
}

// Value-based casting: the count is a uint16 at most below 65536, which float32 holds;
// beyond that the division happens in float64.
float_element!(f32, F32, F32, |sum, n| if n < 65536 {
    sum / n as f32
} else {
    (f64::from(sum) / n as f64) as f32
});
float_element!(f64, F64, F64, |sum, n| sum / n as f64);

impl sealed::Sealed for f16 {}
impl Element for f16 {
    const DTYPE: DType = DType::F16;
    const IS_FLOAT: bool = true;
    type Acc = f32;
    const HIGHEST: f16 = f16::INFINITY;
    const LOWEST: f16 = f16::NEG_INFINITY;
    const ZERO_ELEMENT: f16 = f16::ZERO;
    #[inline(always)]
    fn to_acc(self) -> f32 {
        f32::from(self)
    }
    #[inline(always)]
    fn round_acc(a: f32) -> f32 {
        f32::from(f16::from_f32(a))
    }
    #[inline(always)]
    fn np_abs(self) -> f16 {
        f16::from_bits(self.to_bits() & 0x7fff)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        self.is_nan()
    }
    #[inline(always)]
    fn is_inf(self) -> bool {
        self.is_infinite()
    }
    #[inline(always)]
    fn is_non_finite(self) -> bool {
        let exp = f16::INFINITY.to_bits();
        self.to_bits() & exp == exp
    }
    #[inline(always)]
    fn wrap_bits(self) -> u64 {
        0
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn to_scalar(self) -> Scalar {
        Scalar::F16(self)
    }
    fn div_count(sum: f32, n: usize) -> f32 {
        // Value-based casting picks the division dtype from the count's minimal type: uint8
        // (float16 division, which numpy does in float), uint16 (float32), else float64;
        // the quotient is then stored as float16.
        if n < 65536 {
            Self::round_acc(sum / n as f32)
        } else {
            f32::from(f16::from_f64(f64::from(sum) / n as f64))
        }
    }
}
