//! The tensors of a recipe: [`TensorSpec`] and the numbers and patterns its values are made
//! from, and the schedule's [`Phase`].

use std::fmt;

use smdebug_config::Mode;
use smdebug_record::DType;

/// A number of a recipe (`range`, `const`, `inject`): JSON integers stay integers because
/// numpy stores Python ints and floats differently; `"nan"`, `"inf"`, `"-inf"` and `"-0.0"`
/// are floats.
#[derive(Debug, Clone, Copy)]
pub enum RecipeNumber {
    /// An integer literal (or `true`/`false`, which Python treats as 1/0).
    Int(i128),
    /// A literal with a fraction or exponent, or one of the special strings.
    Float(f64),
}

impl PartialEq for RecipeNumber {
    /// Bit for bit, so that a NaN equals itself and `-0.0` differs from `0.0`.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (RecipeNumber::Int(a), RecipeNumber::Int(b)) => a == b,
            (RecipeNumber::Float(a), RecipeNumber::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl fmt::Display for RecipeNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecipeNumber::Int(i) => write!(f, "{i}"),
            RecipeNumber::Float(x) => write!(f, "{x:?}"),
        }
    }
}

/// How a tensor's values are made (`pattern`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Seeded pseudo-random values in `range` (the default).
    Random,
    /// Every element is the global step.
    Step,
    /// Every element is the tensor's `const`.
    Const,
}

impl Pattern {
    /// The pattern's name in a recipe (`random`, `step`, `const`).
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Random => "random",
            Pattern::Step => "step",
            Pattern::Const => "const",
        }
    }
}

/// One tensor of a normalized recipe (templates expanded).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    /// The tensor's name.
    pub name: String,
    /// Shape (`[]` = 0-d).
    pub shape: Vec<usize>,
    /// Element type (numpy name in the recipe, `str` for strings).
    pub dtype: DType,
    /// How the values are made.
    pub pattern: Pattern,
    /// `[lo, hi]` of random values (`None`: the dtype's default range).
    pub range: Option<(RecipeNumber, RecipeNumber)>,
    /// The value of a `const` tensor.
    pub constant: Option<RecipeNumber>,
    /// Element overrides: flat C-order index (ignored beyond the size) and value.
    pub inject: Vec<(usize, RecipeNumber)>,
    /// Collections the tensor is explicitly a member of.
    pub collections: Vec<String>,
    /// Worker indices that write it (`None`: all).
    pub workers: Option<Vec<usize>>,
    /// Modes in which it is written (`None`: all).
    pub modes: Option<Vec<Mode>>,
    /// Global steps at which it is not written.
    pub skip_steps: Vec<i64>,
    /// The only global steps at which it is written (`None`: all).
    pub only_steps: Option<Vec<i64>>,
    /// Write the raw tensor even when it is empty (the hook never does).
    pub write_empty_raw: bool,
    /// Write a second raw record under the same name in the same step.
    pub duplicate: bool,
}

impl TensorSpec {
    /// A random float32 tensor of this name and shape, every other key at its default.
    pub fn new(name: impl Into<String>, shape: Vec<usize>) -> TensorSpec {
        TensorSpec {
            name: name.into(),
            shape,
            dtype: DType::Float32,
            pattern: Pattern::Random,
            range: None,
            constant: None,
            inject: Vec::new(),
            collections: Vec::new(),
            workers: None,
            modes: None,
            skip_steps: Vec::new(),
            only_steps: None,
            write_empty_raw: false,
            duplicate: false,
        }
    }

    /// Whether worker `w` writes this tensor at global step `g` in `mode` (the recipe's
    /// filters; the save configs decide the rest).
    pub fn written_by(&self, w: usize, mode: Mode, g: i64) -> bool {
        self.workers.as_ref().is_none_or(|ws| ws.contains(&w))
            && self.modes.as_ref().is_none_or(|m| m.contains(&mode))
            && !self.skip_steps.contains(&g)
            && self.only_steps.as_ref().is_none_or(|o| o.contains(&g))
    }
}

/// One phase of the schedule: `steps` steps in `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    /// The mode of these steps.
    pub mode: Mode,
    /// How many steps.
    pub steps: u64,
}
