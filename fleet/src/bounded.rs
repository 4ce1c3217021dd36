//! The functions whose result can be far larger than their input — `repeat`, `lpad`, `rpad`,
//! `replace`, `array_repeat`, `array_resize`, `range` and `generate_series` — wrapped so that a
//! call whose result would exceed a limit fails with an error before anything is allocated.
//!
//! Written here because DataFusion has no such limit: these functions allocate their result
//! outside the memory pool's accounting (`repeat('x', 1500000000)` asks the allocator for
//! gigabytes at once, and a failed allocation aborts the process rather than failing the query).
//! Each wrapper computes, for the batch it is called on, the bytes its result would take from the
//! arguments alone — a text twice its length (it is built, then copied into the result's array), a
//! list 8 bytes per element (or its text element's length) — and refuses above the limit;
//! otherwise the wrapped function runs unchanged. Other functions' results are bounded by their
//! input; an operator's memory (sorts, joins, aggregations) is the memory pool's.

use std::any::Any;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::{Result, exec_err};
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyInfo};
use datafusion::logical_expr::sort_properties::{ExprProperties, SortProperties};
use datafusion::logical_expr::udf_eq::UdfEq;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, Expr, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature,
};
use datafusion::prelude::SessionContext;

/// How a function's result grows with its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(text, n)`: the text's bytes × n.
    Repeat,
    /// `lpad(text, n[, fill])`, `rpad`: n characters.
    Pad,
    /// `replace(text, from, to)`: the text with every `from` replaced by `to`.
    Replace,
    /// `array_repeat(element, n)`: n elements, each the element's size.
    ArrayRepeat,
    /// `array_resize(list, n[, value])`: n elements.
    ArrayResize,
    /// `range(stop)`, `range(start, stop[, step])`, `generate_series`: one element per step.
    Range,
}

/// The wrapped functions, by name.
const GROWING: &[(&str, Growth)] = &[
    ("repeat", Growth::Repeat),
    ("lpad", Growth::Pad),
    ("rpad", Growth::Pad),
    ("replace", Growth::Replace),
    ("array_repeat", Growth::ArrayRepeat),
    ("array_resize", Growth::ArrayResize),
    ("range", Growth::Range),
    ("generate_series", Growth::Range),
];

/// Replaces each function of [`GROWING`] registered in `ctx` by its bounded wrapper: a call whose
/// result would hold more than `limit` bytes in one batch fails.
pub fn register(ctx: &SessionContext, limit: usize) {
    for (name, growth) in GROWING {
        let Some(udf) = ctx.state().scalar_functions().get(*name).cloned() else {
            continue;
        };
        let wrapped = Bounded {
            inner: UdfEq::from(Arc::clone(udf.inner())),
            growth: *growth,
            limit,
        };
        ctx.register_udf(ScalarUDF::new_from_impl(wrapped));
    }
}

/// A function of [`GROWING`] with its limit; everything but the call is the wrapped function's.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Bounded {
    inner: UdfEq<Arc<dyn ScalarUDFImpl>>,
    growth: Growth,
    limit: usize,
}

/// An argument of one call, read row by row (a scalar is the same at every row).
struct Arg(ArrayRef);

impl Arg {
    fn new(v: &ColumnarValue) -> Result<Arg> {
        Ok(Arg(match v {
            ColumnarValue::Array(a) => Arc::clone(a),
            ColumnarValue::Scalar(s) => s.to_array_of_size(1)?,
        }))
    }

    fn row(&self, i: usize) -> usize {
        if self.0.len() == 1 { 0 } else { i }
    }

    /// The argument as integers (null where it is null or not an integer).
    fn ints(&self) -> Option<Vec<Option<i64>>> {
        if !self.0.data_type().is_integer() {
            return None;
        }
        let a = cast(&self.0, &DataType::Int64).ok()?;
        Some(a.as_primitive::<Int64Type>().iter().collect())
    }

    fn int(ints: &Option<Vec<Option<i64>>>, arg: &Arg, i: usize) -> i64 {
        ints.as_ref()
            .and_then(|v| v.get(arg.row(i)).copied().flatten())
            .unwrap_or(0)
    }

    /// The text at row `i`, when the argument is text.
    fn text(&self, i: usize) -> Option<&str> {
        let i = self.row(i);
        if i >= self.0.len() || self.0.is_null(i) {
            return None;
        }
        match self.0.data_type() {
            DataType::Utf8 => Some(self.0.as_string::<i32>().value(i)),
            DataType::LargeUtf8 => Some(self.0.as_string::<i64>().value(i)),
            DataType::Utf8View => Some(self.0.as_string_view().value(i)),
            _ => None,
        }
    }

    /// The bytes of the value at row `i`: a text's length, else 8.
    fn size(&self, i: usize) -> u128 {
        self.text(i).map_or(8, |t| t.len() as u128)
    }
}

impl Bounded {
    /// The bytes the call's result would take while it is made, at least.
    fn result_size(&self, args: &ScalarFunctionArgs) -> Result<u128> {
        let a: Vec<Arg> = args.args.iter().map(Arg::new).collect::<Result<_>>()?;
        let rows = a.iter().map(|x| x.0.len()).max().unwrap_or(0);
        let count = |ints: &Option<Vec<Option<i64>>>, arg: &Arg, i: usize| -> u128 {
            Arg::int(ints, arg, i).max(0) as u128
        };
        let mut total: u128 = 0;
        match (self.growth, a.as_slice()) {
            (Growth::Repeat, [text, n, ..]) => {
                let ns = n.ints();
                for i in 0..rows {
                    total += text.size(i) * count(&ns, n, i);
                }
            }
            (Growth::Pad, [_, n, ..]) => {
                let ns = n.ints();
                for i in 0..rows {
                    total += count(&ns, n, i);
                }
            }
            (Growth::Replace, [text, from, to]) => {
                for i in 0..rows {
                    let (Some(t), Some(f), Some(r)) = (text.text(i), from.text(i), to.text(i))
                    else {
                        continue;
                    };
                    let found = t.matches(f).count() as u128;
                    total += (t.len() as u128 + found * r.len() as u128)
                        .saturating_sub(found * f.len() as u128);
                }
            }
            (Growth::ArrayRepeat, [element, n, ..]) => {
                let ns = n.ints();
                for i in 0..rows {
                    total += element.size(i).max(8) * count(&ns, n, i);
                }
            }
            (Growth::ArrayResize, [_, n, ..]) => {
                let ns = n.ints();
                for i in 0..rows {
                    total += 8 * count(&ns, n, i);
                }
            }
            (Growth::Range, [stop]) => {
                let ss = stop.ints();
                for i in 0..rows {
                    total += 8 * count(&ss, stop, i);
                }
            }
            (Growth::Range, [start, stop, rest @ ..]) => {
                let (starts, stops) = (start.ints(), stop.ints());
                let step = rest.first();
                let steps = step.and_then(Arg::ints);
                for i in 0..rows {
                    let from = Arg::int(&starts, start, i) as i128;
                    let to = Arg::int(&stops, stop, i) as i128;
                    let by = step.map_or(1, |s| Arg::int(&steps, s, i) as i128);
                    if by != 0 {
                        let n = ((to - from) / by).max(0) as u128 + 1;
                        total += 8 * n;
                    }
                }
            }
            _ => {}
        }
        // A text is built whole and then copied into the result's array: twice its bytes at once.
        if matches!(self.growth, Growth::Repeat | Growth::Pad | Growth::Replace) {
            total *= 2;
        }
        Ok(total)
    }
}

impl ScalarUDFImpl for Bounded {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        self.inner.schema_name(args)
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let size = self.result_size(&args)?;
        if size > self.limit as u128 {
            return exec_err!(
                "{}() would make a result of {size} bytes, more than the query's memory limit \
                 of {} bytes (--memory-limit)",
                self.inner.name(),
                self.limit
            );
        }
        self.inner.invoke_with_args(args)
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn simplify(&self, args: Vec<Expr>, info: &dyn SimplifyInfo) -> Result<ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn output_ordering(&self, inputs: &[ExprProperties]) -> Result<SortProperties> {
        self.inner.output_ordering(inputs)
    }

    fn preserves_lex_ordering(&self, inputs: &[ExprProperties]) -> Result<bool> {
        self.inner.preserves_lex_ordering(inputs)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}
