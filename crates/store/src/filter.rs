//! Turning list filters of `coffer_domain::list` into SQL, the same way for every entity.
//! Text matching with `:contains` and `:startswith` is case-insensitive on both backends.

use diesel::expression::{AppearsOnTable, Expression, SelectableExpression};
use diesel::query_builder::{AstPass, QueryFragment};
use diesel::QueryResult;

diesel::define_sql_function!(fn lower(x: diesel::sql_types::Text) -> diesel::sql_types::Text);

/// `expr COLLATE "C"` on PostgreSQL, whose database collation may order text by language
/// rules; SQLite already compares with the binary collation. Either way text orders by code
/// point, as Rust orders it, and the same on both backends.
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId, diesel::expression::ValidGrouping)]
pub struct Binary<E>(pub E);

impl<E: Expression> Expression for Binary<E> {
    type SqlType = E::SqlType;
}

impl<E: AppearsOnTable<QS>, QS: ?Sized> AppearsOnTable<QS> for Binary<E> {}

impl<E: SelectableExpression<QS>, QS: ?Sized> SelectableExpression<QS> for Binary<E> {}

impl<E: QueryFragment<diesel::pg::Pg>> QueryFragment<diesel::pg::Pg> for Binary<E> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, diesel::pg::Pg>) -> QueryResult<()> {
        out.push_sql("(");
        self.0.walk_ast(out.reborrow())?;
        out.push_sql(") COLLATE \"C\"");
        Ok(())
    }
}

impl<E: QueryFragment<diesel::sqlite::Sqlite>> QueryFragment<diesel::sqlite::Sqlite> for Binary<E> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, diesel::sqlite::Sqlite>) -> QueryResult<()> {
        self.0.walk_ast(out)
    }
}

/// Applies one filter on a text column to a boxed query.
#[macro_export]
macro_rules! filter_text {
    ($q:ident, $f:expr, $col:expr) => {{
        use coffer_domain::list::Op;
        let f: &coffer_domain::list::Filter = $f;
        let texts: Vec<String> = f
            .values
            .iter()
            .filter_map(|v| v.as_text().map(str::to_string))
            .collect();
        let first = texts.first().cloned().unwrap_or_default();
        $q = match f.op {
            Op::Eq => $q.filter($col.eq(first)),
            Op::Contains => $q.filter(
                $crate::filter::lower($col)
                    .like(format!("%{}%", $crate::like_escape(&first.to_lowercase())))
                    .escape('\\'),
            ),
            Op::StartsWith => $q.filter(
                $crate::filter::lower($col)
                    .like(format!("{}%", $crate::like_escape(&first.to_lowercase())))
                    .escape('\\'),
            ),
            Op::In => $q.filter($col.eq_any(texts)),
            Op::Gt => $q.filter($col.gt(first)),
            Op::Gte => $q.filter($col.ge(first)),
            Op::Lt => $q.filter($col.lt(first)),
            Op::Lte => $q.filter($col.le(first)),
        };
    }};
}

/// Applies one filter on a BIGINT column to a boxed query.
#[macro_export]
macro_rules! filter_int {
    ($q:ident, $f:expr, $col:expr) => {{
        use coffer_domain::list::Op;
        let f: &coffer_domain::list::Filter = $f;
        let ints: Vec<i64> = f.values.iter().filter_map(|v| v.as_int()).collect();
        let first = ints.first().copied().unwrap_or_default();
        $q = match f.op {
            Op::Eq => $q.filter($col.eq(first)),
            Op::In => $q.filter($col.eq_any(ints)),
            Op::Gt => $q.filter($col.gt(first)),
            Op::Gte => $q.filter($col.ge(first)),
            Op::Lt => $q.filter($col.lt(first)),
            Op::Lte => $q.filter($col.le(first)),
            // The list grammar refuses text operators on integer fields.
            Op::Contains | Op::StartsWith => $q,
        };
    }};
}

/// Orders a boxed query by a column in the direction asked.
#[macro_export]
macro_rules! order_by {
    ($q:ident, $dir:expr, $col:expr) => {{
        $q = match $dir {
            coffer_domain::list::Dir::Asc => $q.then_order_by($col.asc()),
            coffer_domain::list::Dir::Desc => $q.then_order_by($col.desc()),
        };
    }};
}

/// A page of a list and the total it was cut from.
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub total: i64,
}
