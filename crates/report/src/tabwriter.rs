//! Column alignment as Go's `text/tabwriter` does it for vegeta (min width 0, padding 2, spaces):
//! every tab-terminated cell is padded to its column's widest cell plus two. Lines without tabs
//! are left as they are. Widths count characters, not bytes (`µs`).

pub(crate) fn align(text: &str) -> String {
    let lines: Vec<Vec<&str>> = text.split('\n').map(|l| l.split('\t').collect()).collect();
    let mut widths: Vec<usize> = Vec::new();
    for cells in &lines {
        for (i, c) in cells.iter().enumerate().take(cells.len().saturating_sub(1)) {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::with_capacity(text.len() + 64);
    for (n, cells) in lines.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let last = cells.len() - 1;
        for (i, c) in cells.iter().enumerate() {
            out.push_str(c);
            if i < last {
                let pad = widths[i] + 2 - c.chars().count();
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn pads_columns_like_go() {
        let got = super::align("a\tbb\tx\nccc\td\ty\nplain line");
        assert_eq!(got, "a    bb  x\nccc  d   y\nplain line");
    }
}
