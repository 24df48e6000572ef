//! Web forms (docs/web-forms.md): the field definitions an operator writes, checked once when a
//! form is saved, and the rules a submission's values must meet. No I/O.

use coffer_errors::{ApiError, ErrorCode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// The input types a field may have.
pub const INPUT_TYPES: [&str; 6] = ["text", "textarea", "select", "checkbox", "email", "date"];

/// The most fields a form may have.
pub const MAX_FIELDS: usize = 100;
/// The longest label, placeholder, default value or option (characters).
pub const MAX_TEXT: usize = 1000;
/// The longest value a `textarea` takes (characters); other types take [`MAX_TEXT`].
pub const MAX_TEXTAREA: usize = 20_000;

/// One field of a form, as stored and as the API shows it (the reference's `WebFormField`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Field {
    /// Unique within the form; the name of the page's input.
    pub id: String,
    /// Display order (ascending).
    pub sequence: i64,
    pub label: String,
    /// One of [`INPUT_TYPES`].
    #[serde(rename = "type")]
    pub kind: String,
    /// A processing hint kept for clients (e.g. `email` marks the submitter's address).
    pub special_type: Option<String>,
    pub placeholder: Option<String>,
    pub default_value: Option<String>,
    /// The options of a `select`, one per line.
    pub option_values: Option<String>,
    pub mandatory: bool,
    pub editable: bool,
}

impl Field {
    /// The options of a `select`.
    pub fn options(&self) -> Vec<&str> {
        self.option_values
            .as_deref()
            .map(|o| o.lines().filter(|l| !l.is_empty()).collect())
            .unwrap_or_default()
    }
}

fn bad(message: String) -> ApiError {
    ApiError::field(ErrorCode::InvalidParameter, "fields").with_message(message)
}

fn text(v: &Value, key: &str, alias: &str, at: usize) -> Result<Option<String>, ApiError> {
    match v.get(key).or_else(|| v.get(alias)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.chars().count() <= MAX_TEXT && !s.contains('\0') => {
            Ok(Some(s.clone()))
        }
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(bad(format!(
            "fields[{at}].{key} must be a string of at most {MAX_TEXT} characters."
        ))),
    }
}

fn flag(v: &Value, key: &str, alias: &str, default: bool, at: usize) -> Result<bool, ApiError> {
    match v.get(key).or_else(|| v.get(alias)) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(bad(format!("fields[{at}].{key} must be true or false."))),
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Parses and checks a form's field definitions: a JSON array of objects with `label` and
/// `type` (or `inputType`), optional `id` (generated `f1`, `f2`, … when absent), `sequence`
/// (`displayOrder`), `specialType` (`specialProcessingType`), `placeholder`, `defaultValue`,
/// `optionValues` (`options`: an array of strings, or one string with one option per line),
/// `mandatory` (`required`, default false) and `editable` (default true). Answers the fields
/// sorted by `sequence`, or 422 `ERR_INVALID_PARAMETER` saying what is wrong.
pub fn parse_fields(v: &Value) -> Result<Vec<Field>, ApiError> {
    let items = v
        .as_array()
        .ok_or_else(|| bad("fields must be a JSON array of field objects.".into()))?;
    if items.len() > MAX_FIELDS {
        return Err(bad(format!("A form has at most {MAX_FIELDS} fields.")));
    }
    let mut out: Vec<Field> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        if !item.is_object() {
            return Err(bad(format!("fields[{i}] must be an object.")));
        }
        let id = text(item, "id", "id", i)?.unwrap_or_else(|| format!("f{}", i + 1));
        if !valid_id(&id) {
            return Err(bad(format!(
                "fields[{i}].id must be 1 to 64 letters, digits, `_` or `-`."
            )));
        }
        if out.iter().any(|f| f.id == id) {
            return Err(bad(format!("fields[{i}].id `{id}` is used twice.")));
        }
        let label = text(item, "label", "label", i)?
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .ok_or_else(|| bad(format!("fields[{i}].label is required.")))?;
        if out.iter().any(|f| f.label == label) {
            return Err(bad(format!(
                "fields[{i}].label `{label}` is used twice (a submission is keyed by label)."
            )));
        }
        let kind = text(item, "type", "inputType", i)?
            .ok_or_else(|| bad(format!("fields[{i}].type is required.")))?;
        if !INPUT_TYPES.contains(&kind.as_str()) {
            return Err(bad(format!(
                "fields[{i}].type must be one of {}.",
                INPUT_TYPES.join(", ")
            )));
        }
        let sequence = match item.get("sequence").or_else(|| item.get("displayOrder")) {
            None | Some(Value::Null) => i as i64 + 1,
            Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64().unwrap_or_default(),
            Some(_) => return Err(bad(format!("fields[{i}].sequence must be an integer."))),
        };
        let options = match item.get("optionValues").or_else(|| item.get("options")) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => s.lines().map(str::to_string).collect(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|o| match o {
                    Value::String(s) if !s.contains('\n') => Ok(s.clone()),
                    _ => Err(bad(format!(
                        "fields[{i}].optionValues must be strings of one line each."
                    ))),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(bad(format!(
                    "fields[{i}].optionValues must be an array of strings."
                )))
            }
        };
        let options: Vec<String> = options
            .into_iter()
            .map(|o| o.trim().to_string())
            .filter(|o| !o.is_empty())
            .collect();
        if options.iter().any(|o| o.chars().count() > MAX_TEXT) {
            return Err(bad(format!(
                "fields[{i}].optionValues: an option is too long."
            )));
        }
        if kind == "select" && options.is_empty() {
            return Err(bad(format!("fields[{i}]: a select needs optionValues.")));
        }
        if kind != "select" && !options.is_empty() {
            return Err(bad(format!(
                "fields[{i}]: only a select takes optionValues."
            )));
        }
        let field = Field {
            id,
            sequence,
            label,
            kind,
            special_type: text(item, "specialType", "specialProcessingType", i)?,
            placeholder: text(item, "placeholder", "placeholder", i)?,
            default_value: text(item, "defaultValue", "defaultValue", i)?,
            option_values: (!options.is_empty()).then(|| options.join("\n")),
            mandatory: flag(item, "mandatory", "required", false, i)?,
            editable: flag(item, "editable", "editable", true, i)?,
        };
        if let Some(d) = &field.default_value {
            if let Err(e) = check_value(&field, d) {
                return Err(bad(format!(
                    "fields[{i}].defaultValue does not fit the field: {}",
                    e.message
                )));
            }
        }
        if field.mandatory && !field.editable && field.default_value.is_none() {
            return Err(bad(format!(
                "fields[{i}]: a mandatory field that cannot be edited needs a defaultValue."
            )));
        }
        out.push(field);
    }
    out.sort_by_key(|f| f.sequence);
    Ok(out)
}

/// Whether `value` (not empty) fits `field`'s type.
fn check_value(field: &Field, value: &str) -> Result<(), ApiError> {
    let invalid = |why: &str| {
        ApiError::field(ErrorCode::InvalidParameter, field.id.clone())
            .with_message(format!("{}: {why}", field.label))
    };
    let max = if field.kind == "textarea" {
        MAX_TEXTAREA
    } else {
        MAX_TEXT
    };
    if value.chars().count() > max {
        return Err(invalid(&format!("at most {max} characters.")));
    }
    if value
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\r' && c != '\t')
    {
        return Err(invalid("control characters are not allowed."));
    }
    match field.kind.as_str() {
        "email" => {
            crate::email::Email::parse(value).map_err(|_| invalid("not an email address."))?;
        }
        "date" => {
            let fmt = time::macros::format_description!("[year]-[month]-[day]");
            time::Date::parse(value, &fmt).map_err(|_| invalid("a date as YYYY-MM-DD."))?;
        }
        "select" if !field.options().contains(&value) => {
            return Err(invalid("not one of the options."));
        }
        "checkbox" if value != "true" && value != "false" => {
            return Err(invalid("true or false."));
        }
        _ => {}
    }
    Ok(())
}

/// Checks a submission against the fields: `values` maps field ids to what was entered (a
/// checked checkbox is `true`, an unchecked one absent). A field that cannot be edited takes
/// its default whatever was sent. Answers `(label, value)` in display order, or 422
/// `ERR_INPUT_REQUIRED` naming the first mandatory field left empty (`ERR_INVALID_PARAMETER`
/// for a value that does not fit its type).
pub fn check_submission(
    fields: &[Field],
    values: &HashMap<String, String>,
) -> Result<Vec<(String, String)>, ApiError> {
    let mut out = Vec::with_capacity(fields.len());
    for f in fields {
        let given = if f.editable {
            values.get(&f.id).map(|v| v.trim().to_string())
        } else {
            f.default_value.clone()
        };
        let value = match f.kind.as_str() {
            "checkbox" => match given.as_deref() {
                Some("true" | "on") => "true".to_string(),
                _ => "false".to_string(),
            },
            _ => given.unwrap_or_default(),
        };
        let empty = value.is_empty() || (f.kind == "checkbox" && value == "false");
        if f.mandatory && empty {
            return Err(ApiError::field(ErrorCode::InputRequired, f.id.clone())
                .with_message(format!("The field is required ({}).", f.label)));
        }
        if !value.is_empty() {
            check_value(f, &value)?;
        }
        out.push((f.label.clone(), value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_are_checked_and_sorted() {
        let f = parse_fields(&json!([
            {"label": "Topic", "inputType": "select", "options": ["Billing", "Support"], "displayOrder": 2, "required": true},
            {"id": "name", "label": "Your name", "type": "text", "sequence": 1},
        ]))
        .unwrap();
        assert_eq!(f[0].id, "name");
        assert_eq!(f[1].id, "f1");
        assert_eq!(f[1].options(), vec!["Billing", "Support"]);
        assert!(f[1].mandatory);
        assert!(f[0].editable);
        for bad in [
            json!({}),
            json!([{"type": "text"}]),
            json!([{"label": "a", "type": "radio"}]),
            json!([{"label": "a", "type": "select"}]),
            json!([{"label": "a", "type": "text", "options": ["x"]}]),
            json!([{"id": "x", "label": "a", "type": "text"}, {"id": "x", "label": "b", "type": "text"}]),
            json!([{"label": "a", "type": "text"}, {"label": "a", "type": "text"}]),
            json!([{"id": "no spaces", "label": "a", "type": "text"}]),
            json!([{"label": "a", "type": "email", "defaultValue": "nope"}]),
            json!([{"label": "a", "type": "text", "required": true, "editable": false}]),
            json!([{"label": "a", "type": "text", "mandatory": "yes"}]),
        ] {
            let e = parse_fields(&bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidParameter, "{bad}");
        }
    }

    #[test]
    fn a_submission_needs_its_mandatory_fields_and_fitting_values() {
        let f = parse_fields(&json!([
            {"id": "who", "label": "Email", "type": "email", "required": true},
            {"id": "ok", "label": "Agree", "type": "checkbox"},
            {"id": "src", "label": "Source", "type": "text", "editable": false, "defaultValue": "web"},
            {"id": "when", "label": "Date", "type": "date"},
        ]))
        .unwrap();
        let mut v = HashMap::new();
        let e = check_submission(&f, &v).unwrap_err();
        assert_eq!(e.code, ErrorCode::InputRequired);
        assert_eq!(e.field.as_deref(), Some("who"));
        v.insert("who".to_string(), "ann@example.com".to_string());
        v.insert("src".to_string(), "forged".to_string());
        v.insert("ok".to_string(), "on".to_string());
        let out = check_submission(&f, &v).unwrap();
        assert_eq!(
            out,
            vec![
                ("Email".into(), "ann@example.com".into()),
                ("Agree".into(), "true".into()),
                ("Source".into(), "web".into()),
                ("Date".into(), String::new()),
            ]
        );
        v.insert("when".to_string(), "31/12/2026".to_string());
        assert_eq!(
            check_submission(&f, &v).unwrap_err().code,
            ErrorCode::InvalidParameter
        );
        v.insert("when".to_string(), "2026-12-31".to_string());
        v.insert("who".to_string(), "not an address".to_string());
        assert_eq!(
            check_submission(&f, &v).unwrap_err().code,
            ErrorCode::InvalidParameter
        );
    }
}
