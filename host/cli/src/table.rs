//! Plain-text tables for the terminal (`pome run`'s suite table, `pome compare`): each column
//! padded to its widest cell, columns two spaces apart, no trailing blanks.

pub fn aligned<const N: usize>(rows: &[[String; N]]) -> String {
    let widths: Vec<usize> = (0..N).map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(cell, w)| format!("{cell:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_line_up_by_characters_and_lines_end_without_blanks() {
        let rows = [["task".to_string(), "rate".to_string(), String::new()], ["a–b".to_string(), "3/3".to_string(), "x".to_string()]];
        assert_eq!(super::aligned(&rows), "task  rate\na–b   3/3   x\n");
    }
}
